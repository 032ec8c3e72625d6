"""``vtui insights --json``: the Insights report (`vtui.analysis.report.insights`) as plain data."""

from __future__ import annotations

from typing import Any

import msgspec

from vtui.analysis.gpu.activity import GpuReport
from vtui.analysis.gpu.memory import MemoryReport
from vtui.analysis.report.insights import Insights
from vtui.analysis.slices.operators import hint_for
from vtui.analysis.steps.detect import StepReport
from vtui.present.critical_json import critical_json
from vtui.present.roofline_json import roofline_json
from vtui.present.schema import struct_sections
from vtui.present.serving_json import graphs_out, serving_out, to_plain


def why_dict(ins: Insights, top: int | None = 100) -> dict[str, Any]:
    """The ``roofline`` and ``critical_path`` parts of the JSON (msgspec Structs, as builtins)."""
    out: dict[str, Any] = {}
    if ins.roofline is not None:
        out["roofline"] = msgspec.to_builtins(roofline_json(ins.roofline, top))
    if ins.critical is not None:
        out["critical_path"] = msgspec.to_builtins(critical_json(ins.critical))
    return out


def _i(v) -> int | None:
    return None if v is None else int(v)


def steps_dict(st: StepReport) -> dict[str, Any]:
    rest, tr = st.rest, st.trend
    return {
        "present": st.present, "pattern": st.pattern, "source": st.source, "count": st.count,
        "in_trace": st.in_trace, "track": st.track,
        "starts_ns": st.starts.tolist(), "durations_ns": st.durations.tolist(),
        "cpu_durations_ns": st.cpu_durations.tolist(),
        "first_ns": st.first_ns, "ttft_ns": st.ttft_ns, "run_start": st.run_start,
        "mean_ns": rest.mean if rest else None, "median_ns": rest.median if rest else None,
        "p90_ns": rest.p90 if rest else None, "max_ns": rest.max if rest else None,
        "steps_per_s": st.steps_per_s,
        "trend": tr.trend if tr else "n/a", "slope_ns_per_step": tr.slope_ns_per_step if tr else 0.0,
        "slope_r": tr.r if tr else 0.0, "rise_pct": tr.rise_pct if tr else 0.0,
        "spikes": tr.spikes if tr else [], "spike_threshold_ns": tr.spike_threshold_ns if tr else 0.0,
        "slow_first": bool(tr.slow_first) if tr else False, "first_ratio": tr.first_ratio if tr else 0.0,
        "gap_total_ns": tr.gap_total_ns if tr else 0, "gap_max_ns": tr.gap_max_ns if tr else 0,
        "gap_pct": tr.gap_pct if tr else 0.0,
        "unattributed_ns": st.unattributed_ns,
        "not_steps": st.not_steps,
    }


def gpu_dict(g: GpuReport) -> dict[str, Any]:
    def busy(b):
        return {"label": b.label, "busy_ns": b.busy_ns, "busy_pct": b.busy_pct, "kernel_ns": b.kernel_ns,
                "active_span_ns": b.active_ns, "busy_pct_of_active_span": b.busy_pct_of_active}

    return {
        "present": g.present, "busy_ns": g.busy_ns, "busy_pct": g.busy_pct if g.present else None,
        "any_busy_pct": g.any_busy_pct if g.present else None,
        "busy_pct_of_active_span": g.busy_pct_of_active if g.present else None, "active_span_ns": g.active_ns,
        "kernel_busy_pct": g.kernel_busy_pct if g.present else None, "devices": [busy(b) for b in g.devices], "streams": [busy(b) for b in g.streams],
        "kernel_ns": g.kernel_ns, "comm_ns": g.comm_ns, "comm_pct": g.comm_pct if g.present else None,
        "memcpy_ns": g.memcpy_ns, "memset_ns": g.memset_ns,
        "memcpy_pct": g.memcpy_pct if g.present else None, "memset_pct": g.memset_pct if g.present else None,
        "memcpy_by_direction_ns": dict(g.memcpy_by_direction),
        "memcpy_bytes_by_direction": dict(g.memcpy_bytes_by_direction),
        "launch_delay_from_call_start": g.launch.to_dict() if g.launch else None,
        "launch_delay_from_call_end": g.launch_after_return.to_dict() if g.launch_after_return else None,
        # schema 1's names for the same two (renamed in 2; kept so scripts reading them still work)
        "launch_delay": g.launch.to_dict() if g.launch else None,
        "launch_delay_after_return": g.launch_after_return.to_dict() if g.launch_after_return else None,
        "launches_paired": g.launches_paired, "gpu_ops": g.gpu_ops_in_range,
        "worst_launch_kernel": g.worst_launch_kernel,
        "idle_ns": {"cpu_launch_ns": g.idle_cpu_launch_ns, "queued_ns": g.idle_queued_ns,
                    "dependency_ns": g.idle_dependency_ns,
                    "dependencies": [{"call": n, "ns": v} for n, v in g.idle_dependencies],
                    "clock_offset_ns": g.idle_clock_offset_ns,
                    # schema 2's names: the CPU's share, and the rest of the gaps with a known launch
                    "waiting_on_cpu": g.idle_cpu_launch_ns,
                    "between_kernels": g.idle_queued_ns + g.idle_dependency_ns + g.idle_clock_offset_ns,
                    "unknown": g.idle_unknown_ns, "before_first_or_after_last": g.idle_edges_ns},
        "precision": [{"class": p.name, "total_ns": p.total_ns, "count": p.count, "pct": p.pct} for p in g.precision],
        "top_kernels": [{"name": k.name, "total_ns": k.total_ns, "count": k.count, "pct": k.pct} for k in g.top_kernels],
    }


def memory_dict(m: MemoryReport) -> dict[str, Any]:
    main = m.main
    return {
        "present": m.present,
        "skipped_events": m.skipped,
        "device": main.device if main else None,
        "peak_allocated": main.peak_allocated if main else None,
        "peak_reserved": main.peak_reserved if main else None,
        "devices": [
            {"device": d.device, "events": d.events, "allocs": d.allocs, "frees": d.frees,
             "alloc_bytes": d.alloc_bytes, "free_bytes": d.free_bytes, "peak_allocated": d.peak_allocated,
             "peak_reserved": d.peak_reserved, "start_allocated": d.start_allocated, "end_allocated": d.end_allocated,
             "absolute": d.absolute, "repeated_size_share": d.repeated_size_share, "verdict": d.verdict}
            for d in m.devices
        ],
    }


def insights_dict(ins: Insights) -> dict[str, Any]:
    def op(r):
        h = hint_for(r.name)
        return {"name": r.name, "self_ns": r.self_ns, "total_ns": r.total_ns, "count": r.count, "pct": r.pct,
                "total_pct": r.total_pct, "hint": h[1] if h else None}

    def phase(ph):
        return {"name": ph.name, "total_ns": ph.total_ns, "pct": ph.pct, "count": ph.count,
                "first_ns": ph.first_ns, "rest_mean_ns": ph.rest_mean_ns}

    c, p, sy = ins.caches, ins.python, ins.ops.sync
    return struct_sections("insights", ins, {
        "range": {"t0_ns": ins.range.t0, "t1_ns": ins.range.t1, "span_ns": ins.range.span_ns},
        "health": {"worst": ins.health.worst, "problems": [i.key for i in ins.health.at_least("warn")],
                   "doubt": ins.health.doubts()},
        "steps": steps_dict(ins.steps),
        "phases": [phase(ph) for ph in ins.steps.phases],
        "phases_below_python_frames": [phase(ph) for ph in ins.steps.op_phases],
        "ops": [op(r) for r in ins.ops.by_self],
        "ops_by_total": [op(r) for r in ins.ops.by_total],
        "annotations": [op(r) for r in ins.ops.annotations],
        "cpu_self_ns": ins.ops.cpu_self_ns,
        "ops_pct_of": {"range_ns": ins.ops.range_ns, "cpu_threads": ins.ops.threads,
                       "denominator_ns": ins.ops.denominator_ns},
        "sync": {"count": sy.count, "total_ns": sy.total_ns, "blocking_count": sy.blocking_count,
                 "blocking_ns": sy.blocking_ns,
                 "by_name": [{"name": n, "count": k, "total_ns": t, "blocking": sy.is_blocking(n)}
                             for n, k, t in sy.by_name],
                 "callers": [{"name": n, "count": k} for n, k in sy.callers]},
        "gpu": gpu_dict(ins.gpu),
        "memory": memory_dict(ins.memory),
        "caches": {"present": c.present, "events": c.events, "slice_time_ns": c.slice_time_ns, "hits": c.hits,
                   "misses": c.misses, "evictions": c.evictions, "hit_rate_pct": c.hit_rate,
                   "by_name": [{"name": n, "count": k} for n, k in c.by_name[:10]]},
        "python": {"present": p.present, "frames": p.frames, "max_depth": p.max_depth, "mean_depth": p.mean_depth,
                   "python_self_ns": p.python_self_ns, "op_self_ns": p.op_self_ns, "python_pct": p.python_pct,
                   "hottest": [{"name": n, "self_ns": t, "count": k} for n, t, k in p.hottest]},
        "findings": [f.to_dict() for f in ins.findings],
        "serving": to_plain(serving_out(ins.serving)),
        "graphs": to_plain(graphs_out(ins.graphs)),
        **why_dict(ins),
    })
