"""Insights: every analysis over one range, assembled (the JSON form is `vtui.present.insights_json`),
and the compact metrics a comparison of two traces needs (``summary_metrics``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vtui.analysis.calltree.python_overhead import PythonReport, analyse_python
from vtui.analysis.gpu.activity import GpuReport, analyse_gpu
from vtui.analysis.gpu.graphs import GraphReport, analyse_graphs
from vtui.analysis.gpu.memory import MemoryReport, analyse_memory
from vtui.analysis.gpu.peaks import DATASHEET
from vtui.analysis.gpu.roofline import RooflineReport, analyse_roofline
from vtui.analysis.gpu.roofline_capture import with_capture
from vtui.analysis.health.items import HealthReport
from vtui.analysis.health.report import analyse_health
from vtui.analysis.health.report import with_capture as health_with_capture
from vtui.analysis.slices.caches import CacheReport, analyse_caches
from vtui.analysis.slices.operators import OpsReport, analyse_ops
from vtui.analysis.steps.blocking import StepBlock, step_blocks
from vtui.analysis.steps.detect import StepReport, analyse_steps
from vtui.analysis.steps.serving import ServingReport, analyse_serving
from vtui.analysis.why.critical import CriticalReport, analyse_critical
from vtui.analysis.why.findings import (
    WARNING,
    Finding,
    blocking_findings,
    cache_findings,
    gpu_findings,
    graph_findings,
    memory_findings,
    op_findings,
    python_findings,
    serving_findings,
    step_findings,
)
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore


@dataclass
class Insights:
    range: TimeRange  # what every part below covers
    steps: StepReport
    ops: OpsReport
    gpu: GpuReport
    memory: MemoryReport
    caches: CacheReport
    python: PythonReport
    findings: list[Finding] = field(default_factory=list)
    roofline: RooflineReport | None = None  # see add_why (roofline per op, critical path per step)
    critical: CriticalReport | None = None
    serving: ServingReport = field(default_factory=lambda: ServingReport(False))
    graphs: GraphReport = field(default_factory=lambda: GraphReport(False))
    blocks: list[StepBlock] = field(default_factory=list)  # per step: its main blocking call
    health: HealthReport = field(default_factory=HealthReport)  # of the whole trace, not only the range


def add_why(ins: Insights, store: TraceStore, peaks: str = DATASHEET) -> None:
    """Why ops and steps take their time: the roofline per op (graph-replayed work costed from the
    capture trace where one was matched) and the critical path per step."""
    ins.roofline = with_capture(store, analyse_roofline(store, ins.range, peaks), ins.graphs.capture)
    ins.critical = analyse_critical(store, ins.steps.rows)


def compute_insights(store: TraceStore, rng: TimeRange | None = None, step_regex: str | None = None,
                     top: int = 15, capture: TraceStore | None = None, capture_name: str = "",
                     peaks: str = DATASHEET) -> Insights:
    """Every analysis over ``rng`` (the whole trace when None), all handed the one range value and
    so one selection (and one self-time pass); ``capture``: vLLM's graph-capture trace of the same
    run, to give replayed graph kernels their captured stacks and shapes; ``peaks``: the roofline's
    peak column (datasheet / achievable) or peak table file."""
    rng = over(store, rng)
    ins = Insights(rng, analyse_steps(store, rng, step_regex), analyse_ops(store, rng, top),
                   analyse_gpu(store, rng, top), analyse_memory(store, rng),
                   analyse_caches(store, rng), analyse_python(store, rng))
    ins.serving = analyse_serving(store, ins.steps)
    ins.graphs = analyse_graphs(store, rng, ins.steps.rows if ins.steps.present else None, capture, capture_name)
    ins.blocks = step_blocks(store, ins.steps)
    # a step that is mostly one blocking call: that is its headline
    ins.findings = (blocking_findings(ins.blocks, ins.steps.count) + step_findings(ins.steps, ins.serving)
                    + serving_findings(ins.serving) + graph_findings(ins.graphs)
                    + op_findings(ins.ops) + gpu_findings(ins.gpu, ins.graphs.kernel_ns if ins.graphs.present else 0)
                    + memory_findings(ins.memory) + python_findings(ins.python) + cache_findings(ins.caches))
    add_why(ins, store, peaks)
    ins.health = health_with_capture(analyse_health(store), store, ins.graphs.capture)
    if any(i.key == "shape.gpu_only" for i in ins.health.items):
        ins.findings = gpu_only_findings(ins.findings)
    return ins


def gpu_only_findings(found: list[Finding]) -> list[Finding]:
    """A trace with device work and no CPU side: say first what it cannot answer; no step advice
    (steps are CPU annotations), and idle time with no cause to name."""
    out = [Finding("gpu_only", WARNING, "device work only, no CPU side: launch delays, the CPU's share of GPU idle "
                   "time, operators, steps, serving figures and the critical path cannot be known",
                   "profile with the CPU activity on (ProfilerActivity.CPU) to get them")]
    for f in found:
        if f.kind == "steps":
            continue
        if f.kind == "gpu_busy":
            f = Finding(f.kind, f.severity, f.message, "the GPU waits; what for needs the CPU side (launches, syncs)")
        out.append(f)
    return out


def summary_metrics(store: TraceStore, rng: TimeRange | None = None, step_regex: str | None = None,
                    steps: StepReport | None = None) -> dict[str, Any]:
    """Headline numbers of one range, flat, for comparing two traces (None where not present).
    ``steps``: the range's steps when the caller has them. Only the parts the numbers need are
    computed; with a full ``Insights`` at hand use ``insights_metrics`` (nothing again)."""
    rng = over(store, rng)
    st = analyse_steps(store, rng, step_regex) if steps is None else steps
    return metrics_of(rng.span_ns, st, analyse_gpu(store, rng), analyse_memory(store, rng),
                      analyse_ops(store, rng, top=1), analyse_serving(store, st))


def insights_metrics(ins: Insights) -> dict[str, Any]:
    """``summary_metrics`` from what ``compute_insights`` already computed (nothing again)."""
    return metrics_of(ins.range.span_ns, ins.steps, ins.gpu, ins.memory, ins.ops, ins.serving)


def metrics_of(span_ns: int, st: StepReport, g: GpuReport, mem: MemoryReport, ops: OpsReport,
               sv: ServingReport) -> dict[str, Any]:
    rest, main = st.rest, mem.main
    return {
        "span_ns": span_ns,
        "step_pattern": st.pattern if st.present else None,
        "step_count": st.count,
        "ttft_ns": st.ttft_ns,
        "step_mean_ns": rest.mean if rest else None,
        "step_median_ns": rest.median if rest else None,
        "step_p90_ns": rest.p90 if rest else None,
        "steps_per_s": st.steps_per_s,
        "step_trend": st.trend.trend if st.trend else None,
        "gpu_busy_pct": g.busy_pct if g.present else None,
        "gpu_busy_active_pct": g.busy_pct_of_active if g.present else None,
        "memcpy_pct": g.memcpy_pct if g.present else None,
        "kernel_ns": g.kernel_ns if g.present else None,
        "launch_delay_mean_ns": g.launch.mean if g.launch else None,
        "launch_delay_from_end_mean_ns": g.launch_after_return.mean if g.launch_after_return else None,
        "gpu_idle_cpu_launch_ns": g.idle_cpu_launch_ns if g.present else None,
        "gpu_idle_dependency_ns": g.idle_dependency_ns if g.present else None,
        "comm_pct": g.comm_pct if g.present else None,
        "sync_count": ops.sync.count,
        "sync_ns": ops.sync.total_ns,
        "peak_allocated_bytes": main.peak_allocated if main else None,
        "memory_device": main.device if main else None,
        **serving_metrics(sv),
    }


def serving_metrics(sv: ServingReport) -> dict[str, Any]:
    """The serving figures a comparison puts side by side (None where absent)."""
    def kind(name: str, what: str):
        k = sv.kind(name)
        return getattr(k.stats, what) if k else None

    steady = sv.steady
    return {
        "serving_ttft_ns": sv.ttft_ns, "tpot_ns": sv.tpot_ns, "decode_tokens_per_s": sv.decode_tokens_per_s,
        "prefill_median_ns": kind("prefill", "median"), "decode_median_ns": kind("decode", "median"),
        "decode_p90_ns": kind("decode", "p90"), "mixed_median_ns": kind("mixed", "median"),
        "steady_tpot_ns": steady.tpot_ns if steady else None,
        "steady_decode_tokens_per_s": steady.decode_tokens_per_s if steady else None,
    }
