"""Compare two traces (or two ranges): headline metrics, an operator diff, and steps side by side.

Everything is computed per trace with the single-trace analyses (``summary_metrics``, the CPU
operator table of ``analyse_ops``, GPU kernels / memcpy / memset by name, ``analyse_steps``) and then
paired by metric, by name and by step index. A difference within the tolerance is "same":
|B − A| ≤ TOLERANCE × |A|, or, for times, ≤ NOISE_NS (the µs resolution of Chrome traces).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vtui.analysis.report.insights import summary_metrics
from vtui.analysis.slices.operators import analyse_ops
from vtui.analysis.steps.detect import StepReport, analyse_steps
from vtui.store.devices import device_work_kinds
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore

TOLERANCE = 0.05  # relative: within 5 % of A is "same"
NOISE_NS = 1_000  # absolute floor for times: 1 µs, the resolution of a Chrome trace
STEP_PHASES = 4  # phase columns in the step-aligned view


@dataclass(frozen=True)
class MetricSpec:
    key: str  # summary_metrics key
    label: str
    unit: str  # ns, pct, bytes, count, rate
    better: str | None  # "lower", "higher", or None when neither is better


METRICS: list[MetricSpec] = [
    MetricSpec("span_ns", "wall time of the range", "ns", "lower"),
    MetricSpec("ttft_ns", "first step (TTFT when serving)", "ns", "lower"),
    MetricSpec("step_mean_ns", "step mean (excl. the run's first)", "ns", "lower"),
    MetricSpec("step_median_ns", "step median (excl. the run's first)", "ns", "lower"),
    MetricSpec("step_p90_ns", "step p90 (excl. the run's first)", "ns", "lower"),
    MetricSpec("step_count", "steps", "count", None),
    MetricSpec("steps_per_s", "steps per second", "rate", "higher"),
    MetricSpec("gpu_busy_pct", "GPU busy (of the range)", "pct", "higher"),
    MetricSpec("gpu_busy_active_pct", "GPU busy (of the GPU-active span)", "pct", "higher"),
    MetricSpec("memcpy_pct", "memcpy share of GPU time", "pct", "lower"),
    MetricSpec("kernel_ns", "kernel time", "ns", "lower"),
    MetricSpec("launch_delay_mean_ns", "mean launch delay (from call start)", "ns", "lower"),
    MetricSpec("launch_delay_from_end_mean_ns", "mean launch delay (from call end, HTA)", "ns", "lower"),
    MetricSpec("gpu_idle_cpu_launch_ns", "GPU idle before the next launch call", "ns", "lower"),
    MetricSpec("gpu_idle_dependency_ns", "GPU idle behind stream waits", "ns", "lower"),
    MetricSpec("comm_pct", "communication share of kernel time", "pct", None),
    MetricSpec("sync_count", "sync points", "count", "lower"),
    MetricSpec("sync_ns", "sync-point time", "ns", "lower"),
    MetricSpec("peak_allocated_bytes", "peak allocated memory", "bytes", "lower"),
    # serving, by step kind (vtui.analysis.steps.serving; absent where the steps' kinds are unknown)
    MetricSpec("serving_ttft_ns", "TTFT (end of first prefill step)", "ns", "lower"),
    MetricSpec("tpot_ns", "TPOT (median decode step)", "ns", "lower"),
    MetricSpec("decode_tokens_per_s", "decode tokens per second", "rate", "higher"),
    MetricSpec("prefill_median_ns", "prefill step median", "ns", "lower"),
    MetricSpec("decode_median_ns", "decode step median", "ns", "lower"),
    MetricSpec("decode_p90_ns", "decode step p90", "ns", "lower"),
    MetricSpec("mixed_median_ns", "mixed step median", "ns", "lower"),
    MetricSpec("steady_tpot_ns", "steady-state TPOT", "ns", "lower"),
    MetricSpec("steady_decode_tokens_per_s", "steady-state decode tokens/s", "rate", "higher"),
]


@dataclass(frozen=True)
class MetricDiff:
    name: str
    label: str
    unit: str
    a: float | None
    b: float | None
    delta: float | None
    pct: float | None  # Δ as % of A; None when A is 0 or either is absent
    better: str | None  # "A", "B", "same", or None (absent, or no better direction)


@dataclass(frozen=True)
class OpDiff:
    name: str
    kind: str  # "cpu" (operators), "gpu" (kernels, memcpy, memset) or "annotation"
    a_count: int
    b_count: int
    a_total_ns: int
    b_total_ns: int
    status: str  # added, removed, faster, slower, same

    @property
    def delta_ns(self) -> int:
        return self.b_total_ns - self.a_total_ns

    @property
    def pct(self) -> float | None:
        return 100.0 * self.delta_ns / self.a_total_ns if self.a_total_ns else None

    @property
    def a_mean_ns(self) -> float | None:
        return self.a_total_ns / self.a_count if self.a_count else None

    @property
    def b_mean_ns(self) -> float | None:
        return self.b_total_ns / self.b_count if self.b_count else None


@dataclass(frozen=True)
class StepPair:
    index: int
    a_ns: int | None  # None: that trace has fewer steps
    b_ns: int | None
    a_shares: dict[str, float]  # phase name -> % of this step
    b_shares: dict[str, float]

    @property
    def delta_ns(self) -> int | None:
        return None if self.a_ns is None or self.b_ns is None else self.b_ns - self.a_ns


@dataclass
class Side:
    """One trace of a comparison: what it is and over which range."""

    label: str
    t0: int
    t1: int
    step_pattern: str | None
    step_count: int
    first_step_ns: int | None = None  # start of the first step in the range (compare mode's lock aligns these)


@dataclass
class Comparison:
    a: Side
    b: Side
    metrics: list[MetricDiff]
    ops: list[OpDiff]
    steps: list[StepPair]
    phases: list[str]  # the phase columns of ``steps``
    a_durations: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    b_durations: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    tolerance: float = TOLERANCE


# ---- metrics -------------------------------------------------------------------------------
def _same(a: float, b: float, unit: str, tolerance: float) -> bool:
    floor = NOISE_NS if unit == "ns" else 0.0
    return abs(b - a) <= max(tolerance * abs(a), floor)


def diff_metrics(ma: dict[str, Any], mb: dict[str, Any], tolerance: float = TOLERANCE) -> list[MetricDiff]:
    """Pair two ``summary_metrics`` dicts. A step count with no steps found is absent, not 0."""
    out = []
    for spec in METRICS:
        a, b = _metric(ma, spec.key), _metric(mb, spec.key)
        delta = pct = better = None
        if a is not None and b is not None:
            delta = b - a
            pct = 100.0 * delta / a if a else None
            if spec.better is not None:
                if _same(a, b, spec.unit, tolerance):
                    better = "same"
                else:
                    better = "B" if (b < a) == (spec.better == "lower") else "A"
        out.append(MetricDiff(spec.key, spec.label, spec.unit, a, b, delta, pct, better))
    return out


def _metric(m: dict[str, Any], key: str) -> float | None:
    if key == "step_count" and not m.get("step_pattern"):
        return None
    value = m.get(key)
    return None if value is None else value


# ---- operators -----------------------------------------------------------------------------
def op_totals(store: TraceStore, rng: TimeRange | None = None) -> dict[tuple[str, str], tuple[int, int]]:
    """(kind, name) -> (count, total ns clipped to the range): CPU operators, then GPU work."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    rng = over(store, rng)
    ops = analyse_ops(store, rng, top=len(store.strings) + 1)  # every name, not a top-N
    for r in ops.by_total:
        out[("cpu", r.name)] = (r.count, r.total_ns)
    for r in ops.annotations:  # listed apart from the operators (see vtui.store.devices)
        out[("annotation", r.name)] = (r.count, r.total_ns)
    # GPU work as Insights counts it (vtui.store.devices), over the same range rule.
    if len(store.slices):
        rs = rng.slices
        pos = rs.mask(device_work_kinds(store) > 0)
        uniq, inv = np.unique(store.slices.name_id[rs.rows[pos]], return_inverse=True)
        counts = np.bincount(inv, minlength=len(uniq))
        totals = np.bincount(inv, weights=rs.clip[pos], minlength=len(uniq))
        for k, nid in enumerate(uniq.tolist()):
            out[("gpu", store.strings[nid])] = (int(counts[k]), int(round(totals[k])))
    return out


def op_status(a_count: int, b_count: int, a_total: int, b_total: int, tolerance: float = TOLERANCE) -> str:
    if not a_count:
        return "added"
    if not b_count:
        return "removed"
    if _same(a_total, b_total, "ns", tolerance):
        return "same"
    return "slower" if b_total > a_total else "faster"


def diff_ops(ta: dict[tuple[str, str], tuple[int, int]], tb: dict[tuple[str, str], tuple[int, int]],
             tolerance: float = TOLERANCE) -> list[OpDiff]:
    """Every name in either trace, sorted by |Δ total| (largest first), then name; annotations last."""
    out = []
    for kind, name in set(ta) | set(tb):
        ac, at = ta.get((kind, name), (0, 0))
        bc, bt = tb.get((kind, name), (0, 0))
        out.append(OpDiff(name, kind, ac, bc, at, bt, op_status(ac, bc, at, bt, tolerance)))
    out.sort(key=lambda d: (d.kind == "annotation", -abs(d.delta_ns), d.kind, d.name))
    return out


# ---- steps ---------------------------------------------------------------------------------
def step_phase_ns(store: TraceStore, st: StepReport) -> list[dict[str, int]]:
    """Per step, its direct children's time by name (the step's phases)."""
    s = store.slices
    out: list[dict[str, int]] = [{} for _ in range(st.count)]
    if not st.count:
        return out
    step_index = np.full(len(s), -1, dtype=np.int64)
    step_index[st.rows] = np.arange(st.count)
    kids = np.flatnonzero((s.parent >= 0) & (step_index[np.maximum(s.parent, 0)] >= 0))
    # Sum per (step, name) in numpy; Python only sees the distinct pairs.
    key = step_index[s.parent[kids]] * (len(store.strings) + 1) + s.name_id[kids]
    pairs, inverse = np.unique(key, return_inverse=True)
    sums = np.zeros(len(pairs), dtype=np.int64)
    np.add.at(sums, inverse, s.durations(kids))
    width = len(store.strings) + 1
    for pair, total in zip(pairs.tolist(), sums.tolist()):
        name = store.strings[pair % width]
        step = pair // width
        out[step][name] = out[step].get(name, 0) + total
    return out


def align_steps(da: np.ndarray, db: np.ndarray, pa: list[dict[str, int]], pb: list[dict[str, int]],
                phases: int = STEP_PHASES) -> tuple[list[StepPair], list[str]]:
    """Step i of A next to step i of B, with the shares of the phases that take most time in both."""
    totals: dict[str, int] = {}
    for per_step in (*pa, *pb):
        for name, ns in per_step.items():
            totals[name] = totals.get(name, 0) + ns
    columns = sorted(totals, key=lambda n: (-totals[n], n))[:phases]

    def shares(per: list[dict[str, int]], durs: np.ndarray, i: int) -> dict[str, float]:
        if i >= len(durs) or durs[i] <= 0:
            return {}
        return {n: 100.0 * per[i].get(n, 0) / float(durs[i]) for n in columns}

    pairs = []
    for i in range(max(len(da), len(db))):
        a = int(da[i]) if i < len(da) else None
        b = int(db[i]) if i < len(db) else None
        pairs.append(StepPair(i, a, b, shares(pa, da, i), shares(pb, db, i)))
    return pairs, columns


# ---- all together --------------------------------------------------------------------------
def compare(store_a: TraceStore, store_b: TraceStore, range_a: TimeRange | None = None,
            range_b: TimeRange | None = None, step_regex: str | None = None,
            labels: tuple[str, str] = ("A", "B"), tolerance: float = TOLERANCE) -> Comparison:
    """Compare A over ``range_a`` with B over ``range_b`` (whole traces when None)."""
    ra, rb = over(store_a, range_a), over(store_b, range_b)
    sa, sb = analyse_steps(store_a, ra, step_regex), analyse_steps(store_b, rb, step_regex)
    ma, mb = summary_metrics(store_a, ra, steps=sa), summary_metrics(store_b, rb, steps=sb)
    steps, phases = align_steps(sa.durations, sb.durations, step_phase_ns(store_a, sa), step_phase_ns(store_b, sb))
    return Comparison(
        a=Side(labels[0], ra.t0, ra.t1, sa.pattern if sa.present else None, sa.count, _first_start(sa)),
        b=Side(labels[1], rb.t0, rb.t1, sb.pattern if sb.present else None, sb.count, _first_start(sb)),
        metrics=diff_metrics(ma, mb, tolerance),
        ops=diff_ops(op_totals(store_a, ra), op_totals(store_b, rb), tolerance),
        steps=steps, phases=phases, a_durations=sa.durations, b_durations=sb.durations, tolerance=tolerance,
    )


def _first_start(steps) -> int | None:
    return int(steps.starts[0]) if steps.count else None
