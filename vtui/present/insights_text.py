"""`vtui insights` as text for a terminal (also reused by the app's Insights screen)."""

from __future__ import annotations

from vtui.analysis.gpu.memory import sparkline_series
from vtui.analysis.report.insights import Insights
from vtui.analysis.slices.operators import hint_for
from vtui.analysis.steps.detect import SERVING_STEP_PATTERNS
from vtui.present.bars import sparkline, step_bars
from vtui.present.health_json import health_headline
from vtui.present.names import distinct_cuts
from vtui.present.serving_text import graph_lines, serving_lines
from vtui.present.why_text import critical_lines, roofline_lines
from vtui.safe_text import escape_controls, safe_field
from vtui.units import counted, format_bytes
from vtui.units import format_duration as fd

MAX_BAR_ROWS = 40  # more steps than this: a sparkline row instead of one bar per step
NAME_WIDTH = 44  # trace names: clipped to this, control characters escaped (safe_field)


def _trend_line(tr, steps: int) -> str:
    """The trend of the step times; with too few steps it says so rather than print zeros (a slope
    of 0 ns/step and r=0.00 from one step read as a measured flat run)."""
    if tr.trend == "n/a":
        parts = [f"trend: n/a ({counted(steps, 'step')}: a trend, spikes and slow first need more)"]
    else:
        spikes = ", ".join(f"#{i}" for i in tr.spikes[:8]) or "none"
        parts = [f"trend: {tr.trend} (slope {fd(tr.slope_ns_per_step)}/step, {tr.rise_pct:+.0f}% over the run, "
                 f"r={tr.r:.2f}) · spikes: {spikes}"]
    if steps >= 2:  # gaps and the first step against the others need a second step
        parts.append(f"gaps {fd(tr.gap_total_ns)} ({tr.gap_pct:.1f}%) · "
                     f"slow first: {'yes' if tr.slow_first else 'no'} ({tr.first_ratio:.1f}× median)")
    return "  " + " · ".join(parts)


def _then(rest_mean_ns: float, steps: int) -> str:
    """A phase's mean in the steps after the first (none with one step)."""
    return f" · then {fd(rest_mean_ns)}/step" if steps >= 2 else ""


def steps_lines(ins: Insights, bar_width: int = 40, times: bool = True, step_option: str = "try --step REGEX") -> list[str]:
    """The steps, their trend and phases; ``times``: and the step times (the app plots them itself).
    ``step_option``: what to do when no steps are found (try the CLI's option; press the app's key)."""
    st = ins.steps
    if not st.present and st.in_trace:
        return [f"Steps: no {safe_field(st.pattern, 120)} step starts in this range ({st.in_trace} in the trace)"]
    if not st.present:
        what = f" matching /{safe_field(st.pattern, 120)}/" if st.source == "user" else ""
        why = [f"  {safe_field(st.not_steps, 400)}"] if st.not_steps else []
        return [f"Steps: no repeating step found{what} ({step_option})", *why]
    rest, tr = st.rest, st.trend
    src = {"known": "known pattern", "user": "your regex", "generic": "guessed: most time among repeated top-level names"}
    sv = ins.serving
    # A prefill / TTFT only where the steps are an inference engine's (its step names, or steps
    # whose kind the annotations tell); a training ProfilerStep, a browser's task, a guessed name: not.
    serving = st.pattern in SERVING_STEP_PATTERNS or (sv.present and sv.kinds_known)
    first = ("  first step (prefill / time to first token)" if st.run_start and serving
             else "  first step (the run's first)" if st.run_start
             else "  first step in the range (the run's first step is before it: not a TTFT)")
    if sv.present and sv.kinds_known and sv.steps and sv.steps[0].kind not in ("prefill", "mixed"):
        first = f"  first step (a {sv.steps[0].kind} step, not a prefill: see Serving for TTFT)"
    on = f" on {safe_field(st.where, 120)}" if st.where else ""  # a folder of ranks: whose steps these are
    if st.processes > 1 and not on:  # engine processes / ranks in one file: say whose steps these are
        on = (f" · on {safe_field(st.process, 80)}, 1 of {st.processes} processes with such steps "
               "(the others are not in these figures)")
    lines = [f"Steps: {safe_field(st.pattern, 120)} ({src.get(st.source, st.source)}) · {counted(st.count, 'step')}{on}",
             f"{first}  {fd(st.first_ns)}"]
    late = st.gpu_outlasts
    if late.any():  # the times below run to the GPU's end: say so, with the annotations' own figure
        lines.append(f"  {int(late.sum())} of {counted(st.count, 'step')} end after the annotation: a step runs to "
                     f"the end of the GPU work it launched (annotations alone: first {fd(int(st.cpu_durations[0]))})")
    queued = st.queued
    if queued.any():  # the CPU ran ahead: a step's time starts where the previous steps' work ended
        lines.append(f"  {int((queued > 0).sum())} of {counted(st.count, 'step')} began while the previous step's GPU work "
                     f"still ran: a step's own time starts at that work's end ({fd(int(queued.sum()))} not counted twice)")
    if rest:
        per_sequence = " (tokens/s per sequence)" if serving else ""
        rate = f" · ≈{st.steps_per_s:,.1f} steps/s{per_sequence}" if st.steps_per_s else ""
        which = "other steps" if st.run_start else "all steps in the range"
        lines.append(f"  {which}: mean {fd(rest.mean)} · median {fd(rest.median)} · p90 {fd(rest.p90)} · "
                     f"max {fd(rest.max)}{rate}")
    if tr:
        lines.append(_trend_line(tr, st.count))
    if st.phases:
        total = int(st.durations.sum())
        lines.append(f"  phases (direct children; {fd(total)} of step time, {fd(st.unattributed_ns)} outside them):")
        for ph in st.phases[:12]:
            lines.append(f"    {safe_field(ph.name, 32):<32} {fd(ph.total_ns):>12} {ph.pct:5.1f}%   first {fd(ph.first_ns)}"
                         + _then(ph.rest_mean_ns, st.count))
        if len(st.phases) > 12:
            lines.append(f"    … {len(st.phases) - 12} more")
    if st.op_phases:
        lines.append(f"  phases below the Python frames (first non-frame level; {fd(st.op_unattributed_ns)} outside them):")
        for ph in st.op_phases[:12]:
            lines.append(f"    {safe_field(ph.name, 32):<32} {fd(ph.total_ns):>12} {ph.pct:5.1f}%   first {fd(ph.first_ns)}"
                         + _then(ph.rest_mean_ns, st.count))
    durs = st.durations
    if not times:
        return lines
    if len(durs) <= MAX_BAR_ROWS:
        lines.append("  step times:")
        for i, (d, bar) in enumerate(zip(durs.tolist(), step_bars(durs, bar_width))):
            lines.append(f"    #{i:<3} {fd(d):>11} {bar}")
    else:
        lines.append(f"  step times ({counted(len(durs), 'step')}, min {fd(durs.min())} … max {fd(durs.max())}):")
        for k in range(0, len(durs), 100):
            lines.append("    " + sparkline(durs[k:k + 100]))
    return lines


def ops_lines(ins: Insights, top: int = 10) -> list[str]:
    ops = ins.ops
    if not ops.by_self:
        return ["Operators: none in this range"]
    of = f"the range ({fd(ops.range_ns)})" if ops.threads <= 1 else \
        f"the range ({fd(ops.range_ns)}) × {ops.threads} CPU threads with operators"
    lines = [f"Operators (CPU) by self time — % of {of}; annotations listed apart:"]
    for r in ops.by_self[:top]:
        h = hint_for(r.name)
        lines.append(f"  {safe_field(r.name, NAME_WIDTH):<{NAME_WIDTH}} {fd(r.self_ns):>12} {r.pct:5.1f}%  total {fd(r.total_ns):>11}"
                     f"  ×{r.count:<6,}{'  ← ' + h[0] if h else ''}")
    lines.append("Operators (CPU) by total time:")
    for r in ops.by_total[: max(top // 2, 5)]:
        lines.append(f"  {safe_field(r.name, NAME_WIDTH):<{NAME_WIDTH}} {fd(r.total_ns):>12} {r.total_pct:5.1f}%  ×{r.count:,}")
    if ops.annotations:
        lines.append("Annotations (user / GPU annotations, ProfilerStep#N, the profiler's span; not operators) by total:")
        for r in ops.annotations[: max(top // 2, 5)]:
            lines.append(f"  {safe_field(r.name, NAME_WIDTH):<{NAME_WIDTH}} {fd(r.total_ns):>12} ×{r.count:,}")
    sy = ops.sync
    if sy.count:
        lines.append(f"Sync points: {sy.count} · {fd(sy.total_ns)} · blocking {sy.blocking_count} · "
                     f"{fd(sy.blocking_ns)} — " +
                     ", ".join(f"{safe_field(n, NAME_WIDTH)} ×{c} {fd(t)} ({'blocks' if sy.is_blocking(n) else 'orders'})"
                               for n, c, t in sy.by_name) +
                     " · from " + ", ".join(f"{safe_field(n, NAME_WIDTH)} ×{c}" for n, c in sy.callers[:3]))
        lines.append("  (blocks: the host waits for the device; orders: event record / stream wait, the host goes on)")
    else:
        lines.append("Sync points: none")
    return lines


def gpu_lines(ins: Insights) -> list[str]:
    g = ins.gpu
    if not g.present:
        return ["GPU: no GPU activity in this trace"]
    if not g.gpu_ops_in_range:
        return ["GPU: no GPU activity in this range"]
    many = f" (mean of {len(g.devices)} devices; any busy {g.any_busy_pct:.1f}%)" if len(g.devices) > 1 else f" ({fd(g.busy_ns)})"
    lines = [f"GPU: busy {g.busy_pct:.1f}% of the range{many} · {g.busy_pct_of_active:.1f}% of the GPU-active span "
             f"(first → last GPU op, as HTA/TraceLens) · kernels {fd(g.kernel_ns)} · "
             f"memcpy {fd(g.memcpy_ns)} ({g.memcpy_pct:.1f}%) · memset {fd(g.memset_ns)} ({g.memset_pct:.1f}%)"]
    for b in g.devices:
        lines.append(f"  {safe_field(b.label, 80)}: busy {b.busy_pct:.1f}% of the range · {b.busy_pct_of_active:.1f}% of "
                     f"its active span ({fd(b.active_ns)})")
    for b in g.streams:
        lines.append(f"    {safe_field(b.label, 80)}: busy {b.busy_pct:.1f}% ({fd(b.busy_ns)})")
    if g.memcpy_by_direction:
        moved = g.memcpy_bytes_by_direction
        lines.append("  memcpy by direction: " + ", ".join(
            f"{safe_field(k, NAME_WIDTH)} {fd(v)}" + (f" ({format_bytes(moved[k])})" if k in moved else "")
            for k, v in g.memcpy_by_direction.items()))
    if g.launch:
        a = g.launch_after_return
        lines.append(f"  launch delay from call start: mean {fd(g.launch.mean)} · p90 {fd(g.launch.p90)} · worst "
                     f"{fd(g.launch.max)} ({g.launches_paired:,} of {g.gpu_ops_in_range:,} GPU ops paired)")
        lines.append(f"  launch delay from call end (HTA's): mean {fd(a.mean)} · p90 {fd(a.p90)} · worst {fd(a.max)}")
    else:
        lines.append("  launch delay: no CPU launch found for the GPU work (no flows or correlation ids)")
    deps = ", ".join(f"{safe_field(n, NAME_WIDTH)} {fd(v)}" for n, v in g.idle_dependencies[:3])
    lines.append(f"  idle: CPU not yet launching {fd(g.idle_cpu_launch_ns)} · launched, queued {fd(g.idle_queued_ns)} · "
                 f"behind a stream wait {fd(g.idle_dependency_ns)}" + (f" ({deps})" if deps else "")
                 + (f" · clock offset {fd(g.idle_clock_offset_ns)}" if g.idle_clock_offset_ns else "")
                 + f" · unknown cause {fd(g.idle_unknown_ns)} · before/after the work {fd(g.idle_edges_ns)}")
    if g.comm_ns:
        lines.append(f"  communication kernels: {fd(g.comm_ns)} ({g.comm_pct:.1f}% of kernel time)")
    lines.append("  precision (share of kernel time): " + ", ".join(f"{safe_field(p.name, NAME_WIDTH)} {p.pct:.1f}%" for p in g.precision))
    lines.append("  top kernels:")
    top = g.top_kernels[:8]
    # cut in the middle, distinct: templated kernels share long heads (Cijk_Alik_Bljk_…_MI…) and
    # differ at the end
    names = distinct_cuts([escape_controls(k.name) for k in top], 60)
    for k, name in zip(top, names):
        lines.append(f"    {name:<60} {fd(k.total_ns):>11} {k.pct:5.1f}% ×{k.count:,}")
    return lines


def memory_lines(ins: Insights, width: int = 60) -> list[str]:
    m = ins.memory
    skipped = (f" ({m.skipped:,} [memory] events skipped: Bytes or totals beyond any real size)"
               if m.skipped else "")
    if not m.present:
        return [f"Memory: no usable [memory] events in this trace{skipped}" if m.skipped
                else "Memory: no [memory] events in this trace"]
    lines = [f"Memory ([memory] events){skipped}:"]
    for d in m.devices:
        rel = "" if d.absolute else " (relative to the profile start)"
        res = f" · peak reserved {format_bytes(d.peak_reserved)}" if d.peak_reserved else ""
        lines.append(f"  {safe_field(d.device, NAME_WIDTH)}: {d.allocs:,} allocs / {d.frees:,} frees · peak allocated {format_bytes(d.peak_allocated)}"
                     f"{rel}{res} · {d.verdict}")
        lines.append(f"    allocated {sparkline(sparkline_series(d, ins.range.t0, ins.range.t1, width))}")
    return lines


def misc_lines(ins: Insights) -> list[str]:
    c, p = ins.caches, ins.python
    lines = []
    if c.present:
        rate = f" · hit rate {c.hit_rate:.0f}% ({c.hits} hits / {c.misses} misses)" if c.hit_rate is not None \
            else " · no hit/miss information"
        lines.append(f"Caches: {c.events} cache events{rate} · evictions {c.evictions} · " +
                     ", ".join(f"{safe_field(n, 40)} ×{k}" for n, k in c.by_name[:3]))
    else:
        lines.append("Caches: no cache events")
    if p.present:
        lines.append(f"Python: {p.frames:,} frames · stack depth max {p.max_depth}, mean {p.mean_depth:.1f} · "
                     f"{p.python_pct:.1f}% of CPU self time in Python frames")
        for name, t, k in p.hottest[:5]:
            lines.append(f"  {safe_field(name, 60):<60} {fd(t):>11} ×{k:,}")
    else:
        lines.append("Python: no python_function events (profile with with_stack=True)")
    return lines


def findings_lines(ins: Insights) -> list[str]:
    lines = ["Findings:"]
    for f in ins.findings:
        lines.append(f"  [{f.severity}] {safe_field(f.message, 2000)}")
        lines.append(f"      → {safe_field(f.hint, 2000)}")
    return lines


def insights_text(ins: Insights, title: str = "") -> str:
    head = f"{safe_field(title, 200)} · " if title else ""
    top = [f"{head}range {fd(ins.range.t0)} – {fd(ins.range.t1)} ({fd(ins.range.span_ns)})"]
    headline = health_headline(ins.health)
    parts = [top + ([headline] if headline else []), steps_lines(ins),
             serving_lines(ins.serving), graph_lines(ins.graphs), ops_lines(ins), gpu_lines(ins),
             roofline_lines(ins.roofline), critical_lines(ins.critical), memory_lines(ins), misc_lines(ins),
             findings_lines(ins)]
    return "\n\n".join("\n".join(p) for p in parts)
