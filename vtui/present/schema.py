"""The JSON that scripts read: one msgspec Struct per ``--json`` output, each with its own
``schema_version``.

Every ``--json`` / ``--format json`` output is made by ``dump(name, doc)``: ``doc`` (a dict or a
Struct) is converted into the output's Struct — an unknown key, a missing key or a wrong type is
an error, so what is printed always matches the published schema (``vtui schema NAME``). A test
compares each output's generated JSON Schema with its checked-in snapshot
(``vtui/data/schema/NAME.vN.json``); a changed field without a new ``N`` fails it.

Adding a section to insights whose analysis already returns a msgspec Struct is one line in
``Insights`` below (``serving: ServingReport | None = None``): ``insights_out`` copies any field
it does not build itself from the ``compute_insights`` result's attribute of the same name. Then
bump ``VERSIONS["insights"]`` and run ``python scripts/schema_snapshots.py``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from vtui.analysis.ranks.analyse import (
    Alignment,
    CollectiveRow,
    ExposedRow,
    RankRow,
    StepRow,
    Straggler,
)
from vtui.present.critical_json import CriticalJson
from vtui.present.health_json import HealthItemOut
from vtui.present.roofline_json import RooflineJson
from vtui.present.serving_json import GraphsOut, ServingOut
from vtui.safe_text import json_text

Id = int | str | None  # pid / tid as written (numbers, strings or absent)


class Strict(msgspec.Struct, forbid_unknown_fields=True):
    """A part of an output: every key known, every key typed."""


class Out(Strict, kw_only=True):
    """A whole output: the version of its shape comes first in the printed JSON."""

    schema_version: int


# ---- vtui info --json --------------------------------------------------------------------------

class Source(Strict):
    path: str
    label: str
    form: str
    repaired: bool
    events: int
    by_phase: dict[str, int]
    metadata_keys: list[str]


class DecodeChunks(Strict):
    chunks: int  # event chunks decoded
    compiled_helper: int  # of them, read by the optional C helper (the rest: the pure-Python path)


class TrackInfo(Strict):
    id: int
    kind: str
    pid: Id
    tid: Id
    process: str
    name: str
    slices: int
    instants: int
    counter_samples: int
    lanes: int
    overlapping: int


class Info(Out):
    sources: list[Source]
    form: str
    repaired: bool
    events: int
    by_phase: dict[str, int]
    tracks: int
    slices: int
    instants: int
    counter_samples: int
    flows: int
    span_ns: int
    origin_us: float
    overlapping_slices: int
    nesting_tolerance_ns: int
    decode_chunks: DecodeChunks
    warnings: list[str]
    health: list[HealthItemOut]
    track_list: list[TrackInfo]


# ---- vtui insights --json ----------------------------------------------------------------------

class Range(Strict):
    t0_ns: int
    t1_ns: int
    span_ns: int


class Steps(Strict):
    present: bool
    pattern: str
    source: str
    count: int
    in_trace: int
    track: int
    starts_ns: list[int]
    durations_ns: list[int]  # start to the later of the annotation's end and its device work's end
    cpu_durations_ns: list[int]  # the annotations alone
    first_ns: int | None
    ttft_ns: int | None
    run_start: bool
    mean_ns: float | None
    median_ns: float | None
    p90_ns: float | None
    max_ns: float | None
    steps_per_s: float | None
    trend: str
    slope_ns_per_step: float
    slope_r: float
    rise_pct: float
    spikes: list[int]
    spike_threshold_ns: float
    slow_first: bool
    first_ratio: float
    gap_total_ns: int
    gap_max_ns: int
    gap_pct: float
    unattributed_ns: int
    not_steps: str  # with no steps: what looked like steps and why it is not


class PhaseRow(Strict):
    name: str
    total_ns: int
    pct: float
    count: int
    first_ns: int
    rest_mean_ns: float


class Op(Strict):
    name: str
    self_ns: int
    total_ns: int
    count: int
    pct: float
    total_pct: float
    hint: str | None


class OpsPctOf(Strict):
    range_ns: int
    cpu_threads: int
    denominator_ns: int


class NameCountTime(Strict):
    name: str
    count: int
    total_ns: int


class NameCount(Strict):
    name: str
    count: int


class SyncName(Strict):
    name: str
    count: int
    total_ns: int
    blocking: bool  # holds the host until the device drains (not an event record / stream wait)


class Sync(Strict):
    count: int
    total_ns: int
    blocking_count: int
    blocking_ns: int
    by_name: list[SyncName]
    callers: list[NameCount]


class Busy(Strict):
    label: str
    busy_ns: int
    busy_pct: float
    kernel_ns: int
    active_span_ns: int
    busy_pct_of_active_span: float


class DurationStats(Strict):
    count: int
    total_ns: float
    mean_ns: float
    median_ns: float
    p90_ns: float
    min_ns: float
    max_ns: float


class IdleDependency(Strict):
    call: str
    ns: int


class Idle(Strict):
    cpu_launch_ns: int
    queued_ns: int
    dependency_ns: int
    dependencies: list[IdleDependency]
    clock_offset_ns: int
    waiting_on_cpu: int
    between_kernels: int
    unknown: int
    before_first_or_after_last: int


class PrecisionShare(Strict, rename={"class_": "class"}):
    class_: str
    total_ns: int
    count: int
    pct: float


class KernelShare(Strict):
    name: str
    total_ns: int
    count: int
    pct: float


class Gpu(Strict):
    present: bool
    busy_ns: int
    busy_pct: float | None
    any_busy_pct: float | None
    busy_pct_of_active_span: float | None
    active_span_ns: int
    kernel_busy_pct: float | None
    devices: list[Busy]
    streams: list[Busy]
    kernel_ns: int
    comm_ns: int
    comm_pct: float | None
    memcpy_ns: int
    memset_ns: int
    memcpy_pct: float | None
    memset_pct: float | None
    memcpy_by_direction_ns: dict[str, int]
    memcpy_bytes_by_direction: dict[str, int]
    launch_delay_from_call_start: DurationStats | None
    launch_delay_from_call_end: DurationStats | None
    # The keys of schema 1 (before the two above were renamed), kept so scripts reading them work:
    # the same values, from call start and from call end ("after return").
    launch_delay: DurationStats | None
    launch_delay_after_return: DurationStats | None
    launches_paired: int
    gpu_ops: int
    worst_launch_kernel: str
    idle_ns: Idle
    precision: list[PrecisionShare]
    top_kernels: list[KernelShare]


class DeviceMemory(Strict):
    device: str
    events: int
    allocs: int
    frees: int
    alloc_bytes: int
    free_bytes: int
    peak_allocated: int
    peak_reserved: int | None
    start_allocated: int
    end_allocated: int
    absolute: bool
    repeated_size_share: float
    verdict: str


class Memory(Strict):
    present: bool
    skipped_events: int
    device: str | None
    peak_allocated: int | None
    peak_reserved: int | None
    devices: list[DeviceMemory]


class Caches(Strict):
    present: bool
    events: int
    slice_time_ns: int
    hits: int
    misses: int
    evictions: int
    hit_rate_pct: float | None
    by_name: list[NameCount]


class PythonFrame(Strict):
    name: str
    self_ns: int
    count: int


class Python(Strict):
    present: bool
    frames: int
    max_depth: int
    mean_depth: float
    python_self_ns: int
    op_self_ns: int
    python_pct: float
    hottest: list[PythonFrame]


class FindingOut(Strict):
    kind: str
    severity: str
    message: str
    hint: str


class InsightsHealth(Strict):
    worst: str | None  # the most severe trace-health item (info / warn / error), None: nothing found
    problems: list[str]  # keys of the warn and error items (`vtui info` lists them in full)
    doubt: list[str]  # the figures those put in doubt


class Insights(Out):
    trace: str
    range: Range
    health: InsightsHealth
    steps: Steps
    phases: list[PhaseRow]
    phases_below_python_frames: list[PhaseRow]
    ops: list[Op]
    ops_by_total: list[Op]
    annotations: list[Op]
    cpu_self_ns: int
    ops_pct_of: OpsPctOf
    sync: Sync
    gpu: Gpu
    memory: Memory
    caches: Caches
    python: Python
    findings: list[FindingOut]
    # Sections whose analysis returns a msgspec Struct go here, one line each (see the module doc).
    serving: ServingOut
    graphs: GraphsOut
    roofline: RooflineJson | None = None
    critical_path: CriticalJson | None = None


# ---- vtui stats --format json ------------------------------------------------------------------

class AggRowOut(Strict):
    name: str
    count: int
    total_ns: int
    self_ns: int
    avg_ns: float
    min_ns: int
    max_ns: int
    pct: float


class Stats(Out):
    by: str
    t0_ns: int
    t1_ns: int
    slices: int
    tracks: int
    rows: list[AggRowOut]


# ---- vtui search --json ------------------------------------------------------------------------

class Match(Strict):
    name: str
    track: str
    start_ns: int
    dur_ns: int


class Search(Out):
    pattern: str
    in_args: bool
    count: int
    total_ns: int
    matches: list[Match]


# ---- vtui tree --format json -------------------------------------------------------------------

class TreeNode(Strict):
    path: list[str]
    name: str
    count: int
    total_ns: int
    self_ns: int
    gpu_ns: int
    gpu_self_ns: int
    pct: float
    children: list[TreeNode]


class TreeGpu(Strict):
    present: bool
    total_ns: int
    attributed_ns: int
    outside_ns: int
    unknown_ns: int


class HandOver(Strict):
    name: str
    count: int
    total_ns: int
    python_depth: int
    path: list[str]
    self_ns: int


class TreeFinding(Strict):
    kind: str
    message: str
    path: list[str]
    total_ns: int


class HandOverReport(Strict):
    present: bool
    python_self_ns: int
    op_total_ns: int
    python_pct: float
    median_depth: float
    handovers: list[HandOver]
    steps: int
    step_name: str
    findings: list[TreeFinding]


class Tree(Out, omit_defaults=True):
    t0_ns: int
    t1_ns: int
    inverted: bool
    weight: str
    slices: int
    nodes: int
    gpu: TreeGpu
    roots: list[TreeNode]
    handover: HandOverReport | None = None  # only with --handover


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


# ---- the registry ------------------------------------------------------------------------------

# ---- vtui ranks --json (the report is analysis.ranks.RanksReport; its parts are Structs there) ----

class Ranks(Out):
    trace: str
    engine: str
    ranks: list[RankRow]
    missing_ranks: list[int]
    alignment: Alignment
    steps_aligned_by: str
    steps: list[StepRow]
    straggler: Straggler | None
    collectives: list[CollectiveRow]
    exposed: list[ExposedRow]
    warnings: list[str]


# ---- vtui query --format json -------------------------------------------------------------------

class Query(Out):
    columns: list[str]
    types: list[str]  # DuckDB's type of each column
    rows: list[list[Any]]
    row_count: int
    truncated: bool


OUTPUTS: dict[str, type[Out]] = {
    "info": Info,
    "insights": Insights,
    "stats": Stats,
    "search": Search,
    "tree": Tree,
    "tree-diff": TreeDiff,
    "diff": Diff,
    "ranks": Ranks,
    "query": Query,
}
# Bump an output's version whenever its schema changes in any way (a key added, renamed, removed
# or retyped), and add its snapshot: scripts/schema_snapshots.py writes vtui/data/schema/NAME.vN.json.
VERSIONS: dict[str, int] = {
    "info": 2,
    "insights": 2,
    "stats": 1,
    "search": 1,
    "tree": 2,
    "tree-diff": 1,
    "diff": 2,
    "ranks": 2,
    "query": 1,
}


def typed(name: str, doc: dict[str, Any] | msgspec.Struct) -> Out:
    """``doc`` as output ``name``'s Struct, stamped with its version; a key the schema does not
    know, a missing one or a wrong type raises ``msgspec.ValidationError`` (a bug, not input)."""
    data = msgspec.to_builtins(doc, enc_hook=_numpy_scalar)  # numpy scalars become Python numbers
    return msgspec.convert({**data, "schema_version": VERSIONS[name]}, OUTPUTS[name])


def _numpy_scalar(value: Any) -> Any:
    item = getattr(value, "item", None)  # np.float64, np.int64, np.bool_ (no numpy import needed)
    if item is None:
        raise TypeError(f"{type(value).__name__} is not JSON data")
    return item()


def builtins(out: Out) -> dict[str, Any]:
    """Plain data, ``schema_version`` first."""
    data = msgspec.to_builtins(out)
    return {"schema_version": data.pop("schema_version"), **data}


def dump(name: str, doc: dict[str, Any] | msgspec.Struct, indent: int = 2) -> str:
    """The JSON text of output ``name`` (terminal-safe: see ``safe_text.json_text``)."""
    return json_text(builtins(typed(name, doc)), indent=indent)


def struct_sections(name: str, report: object, built: dict[str, Any]) -> dict[str, Any]:
    """``built`` plus each field of output ``name`` it lacks, taken from ``report``'s attribute of
    that name (a msgspec Struct, or None): a new section is one line in the output's Struct."""
    extra = {f: msgspec.to_builtins(getattr(report, f)) for f in OUTPUTS[name].__struct_fields__
             if f not in built and f != "schema_version" and hasattr(report, f)}
    return {**built, **extra}


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of output ``name`` (what ``vtui schema NAME`` prints)."""
    schema = msgspec.json.schema(OUTPUTS[name])
    return {"title": f"vtui {name} --json", "schema_version": VERSIONS[name], **schema}
