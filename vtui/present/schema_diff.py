"""``vtui diff --format json`` and the differential call tree's JSON: their Structs (registered in
`vtui.present.schema`)."""

from __future__ import annotations

from vtui.present.schema_base import Out, Strict

# ---- vtui tree --against B --format json, vtui diff --table tree --format json -----------------

class TreeSide(Strict):
    t0_ns: int
    t1_ns: int
    slices: int


class DiffNode(Strict):
    path: list[str]
    name: str
    status: str
    a_count: int
    a_total_ns: int
    a_self_ns: int
    a_gpu_ns: int
    b_count: int
    b_total_ns: int
    b_self_ns: int
    b_gpu_ns: int
    delta_total_ns: int
    delta_self_ns: int
    children: list[DiffNode]


class TreeDiff(Out):
    a: TreeSide
    b: TreeSide
    roots: list[DiffNode]


# ---- vtui diff --format json -------------------------------------------------------------------

class DiffSide(Strict):
    trace: str
    t0_ns: int
    t1_ns: int
    step_pattern: str | None
    steps: int
    first_step_ns: int | None


class MetricOut(Strict):
    name: str
    label: str
    unit: str
    a: int | float | None
    b: int | float | None
    delta: int | float | None
    pct: float | None
    better: str | None


class OpDiffOut(Strict):
    name: str
    kind: str
    a_count: int
    b_count: int
    a_total_ns: int
    b_total_ns: int
    delta_ns: int
    pct: float | None
    a_mean_ns: int | float | None
    b_mean_ns: int | float | None
    status: str


class StepPairOut(Strict):
    index: int
    a_ns: int | None
    b_ns: int | None
    delta_ns: int | None
    a_phase_pct: dict[str, float]
    b_phase_pct: dict[str, float]


class SideSteps(Strict):
    n: int  # steps over all runs of the side
    runs: int
    median_ns: float  # median over the runs of each run's median
    p90_ns: float
    spread_ns: float  # interquartile range of the pooled steps
    run_medians_ns: list[float]
    run_spread_pct: float | None  # (max − min) of the run medians ÷ the median; None with one run


class KindOut(Strict):
    kind: str
    a: SideSteps | None
    b: SideSteps | None
    delta_pct: float | None
    ci_pct: list[float] | None  # 95 % bootstrap interval of delta_pct
    significant: bool
    matched: int
    unmatched_a: int
    unmatched_b: int
    batch_differs: int


class KernelOut(Strict):
    kind: str
    name: str
    b_name: str | None  # changed: B's kernel where its name differs
    match: str | None  # changed: exact, base (template arguments differ) or family
    op: str
    count: int
    a_ns: int
    b_ns: int
    delta_ns: int
    per_step_ns: float


class OpDeltaOut(Strict):
    kind: str
    op: str
    delta_ns: int
    per_step_ns: float


class KernelsOut(Strict):
    added: list[KernelOut]
    removed: list[KernelOut]
    changed: list[KernelOut]
    by_op: list[OpDeltaOut]
    step_pairs: dict[str, int]
    unaligned: dict[str, int]
    confidence: dict[str, float]


class ParityOut(Strict):
    what: str
    a: str
    b: str


class RunKindOut(Strict):
    n: int
    median_ns: float


class RunOut(Strict):
    trace: str
    step_pattern: str | None
    steps: int
    kinds: dict[str, RunKindOut]
    ttft_ns: int | None


class TtftOut(Strict):
    a: SideSteps | None
    b: SideSteps | None
    delta_pct: float | None
    ci_pct: list[float] | None
    significant: bool


class RunsOut(Strict):
    a: list[RunOut]
    b: list[RunOut]
    ttft: TtftOut


class GateOut(Strict):
    spec: str
    figure: str
    stat: str | None
    threshold_pct: float
    delta_pct: float | None
    ci_pct: list[float] | None
    breached: bool
    reason: str


class Diff(Out, omit_defaults=True):
    """With ``--table T`` only ``a``, ``b`` and that table are printed. With several runs per side,
    ``a`` / ``b`` and ``metrics`` / ``ops`` / ``steps`` are the first run's of each side; the
    run-against-run sections (``steps_by_kind``, ``kernels``, ``parity``, ``runs``) use them all."""

    a: DiffSide
    b: DiffSide
    tolerance_pct: float | None = None
    noise_ns: int | None = None
    metrics: list[MetricOut] | None = None
    ops: list[OpDiffOut] | None = None
    phases: list[str] | None = None
    steps: list[StepPairOut] | None = None
    like: bool | None = None  # the sides ran the same work (``parity`` is empty)
    parity: list[ParityOut] | None = None
    steps_by_kind: list[KindOut] | None = None
    kernels: KernelsOut | None = None
    runs: RunsOut | None = None
    gate: list[GateOut] | None = None
