"""Findings: what was seen, how big it is, and what to try — one short hint each, as a profiling
guide would give. Built from the analysis reports; thresholds are named constants here."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from vtui.analysis.base.comm import is_comm
from vtui.analysis.base.stats import pct
from vtui.analysis.calltree.python_overhead import PythonReport
from vtui.analysis.gpu.activity import LAUNCH_SIZED_GAP_NS, GpuReport, precision_of
from vtui.analysis.gpu.graphs import GraphReport
from vtui.analysis.gpu.memory import MemoryReport
from vtui.analysis.slices.caches import CacheReport
from vtui.analysis.slices.operators import OpsReport, hint_for
from vtui.analysis.steps.blocking import StepBlock, dominant_blocks
from vtui.analysis.steps.detect import SERVING_STEP_PATTERNS, StepReport
from vtui.analysis.steps.serving import ServingReport
from vtui.analysis.steps.trends import SLOW_FIRST_RATIO
from vtui.units import format_bytes
from vtui.units import format_duration as fd

INFO, WARNING, HIGH = "info", "warning", "high"
OP_SHARE = 5.0  # an operator kind worth a hint: >= 5% of the range in self time
SYNC_SHARE = 5.0
GPU_BUSY_LOW = 50.0
GPU_BUSY_VERY_LOW = 20.0
IDLE_CPU_SHARE = 10.0
MEMCPY_SHARE = 10.0
FP32_GEMM_SHARE = 10.0
COMM_SHARE = 10.0  # communication kernels' share of kernel time worth saying
PYTHON_SHARE = 30.0
GAP_SHARE = 10.0
BLOCKED_BUSY_SHARE = 0.5  # the GPU busy less than this share of a blocking call's time: it waited on no queued work
GRAPH_SHARE = 50.0  # kernel time already replayed from CUDA/HIP graphs: no "use CUDA graphs" advice

STEP_OPTION = "pass --step REGEX"  # the CLI's way to name the steps (the app says its own key)


@dataclass
class Finding:
    kind: str
    severity: str
    message: str
    hint: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def step_findings(st: StepReport, serving: ServingReport | None = None) -> list[Finding]:
    """Findings over all steps alike. When the steps' kinds are known (``serving``), the first-step
    and spike verdicts are left to ``serving_findings``, which judges each kind on its own."""
    if not st.present or st.trend is None:
        if st.in_trace:
            return [Finding("steps", INFO, f"no {st.pattern} step starts in this range ({st.in_trace} in the trace)",
                            "widen the range to cover whole steps")]
        why = f" ({st.not_steps})" if st.not_steps else ""
        return [Finding("steps", INFO, "no repeating step found" + (f" for /{st.pattern}/" if st.source == "user" else "")
                        + why + ": no per-step or serving figures",
                        "name the unit of work (record_function('engine_step')) or " + STEP_OPTION)]
    out: list[Finding] = []
    tr, rest = st.trend, st.rest
    by_kind = serving is not None and serving.present and serving.kinds_known
    # A prefill, a KV cache: only for an inference engine's steps (a training step, a guessed name: not)
    llm = st.pattern in SERVING_STEP_PATTERNS or by_kind
    if tr.slow_first and rest and st.run_start and not by_kind:  # a prefill only when the range starts the run
        out.append(Finding("slow_first", INFO if tr.first_ratio < 10 else WARNING,
                           f"first step {tr.first_ratio:.1f}× the median of the others ({fd(st.first_ns or 0)} vs {fd(rest.median)})",
                           ("expected for a prefill (time to first token); if it is warm-up (compilation, autotuning, "
                            "allocator growth), run warm-up iterations before measuring") if llm else
                           "warm-up (compilation, autotuning, allocator growth, first-touch I/O): run warm-up "
                           "iterations before measuring"))
    if tr.trend in ("staircase", "decreasing") and not by_kind:
        word = "rises" if tr.trend == "staircase" else "falls"
        grows = ("per-step cost grows with context: check the KV cache is used (no recompute of past tokens) "
                 "and attention is a fused/paged kernel") if llm else \
            "per-step cost grows: something accumulates across steps (a growing tensor, list, cache or queue)"
        out.append(Finding(tr.trend, WARNING if tr.trend == "staircase" else INFO,
                           f"step time {word} {fd(abs(tr.slope_ns_per_step))} per step ({tr.rise_pct:+.0f}% of the median "
                           f"over {st.count - 1} steps, r={tr.r:.2f})",
                           grows if tr.trend == "staircase" else
                           "steps get cheaper over time: a warm-up or a shrinking batch"))
    if tr.spikes and not by_kind:
        shown = ", ".join(f"#{i} {fd(st.durations[i])}" for i in tr.spikes[:5])
        out.append(Finding("spikes", WARNING, f"{len(tr.spikes)} step(s) above {fd(tr.spike_threshold_ns)}: {shown}",
                           "compare a spike with a normal step: garbage collection, allocator growth (cudaMalloc), "
                           "host syncs or data loading usually explain one-off slow steps"))
    if tr.gap_pct >= GAP_SHARE:
        out.append(Finding("gaps", WARNING, f"{fd(tr.gap_total_ns)} between steps ({tr.gap_pct:.0f}% of the step span, "
                           f"largest {fd(tr.gap_max_ns)})",
                           "the host works outside the step (scheduling, tokenisation, Python): overlap it with the "
                           "GPU or move it off the critical path"))
    return out


def blocking_findings(blocks: list[StepBlock], steps: int) -> list[Finding]:
    """The headline of a step whose annotation is mostly one blocking call: the host waited there
    for the device, so the step's time is the device work queued before the call."""
    worst = dominant_blocks(blocks)
    if not worst:
        return []
    b = worst[0]
    more = f"; {len(worst) - 1} more of {steps} steps likewise" if len(worst) > 1 else ""
    where = f" (from {b.caller})" if b.caller else ""
    # What the host waited for: queued device work (the GPU busy meanwhile), or, with the GPU idle,
    # something the stream was held behind (a stream wait, another stream or process, untraced work).
    idle = 0 <= b.device_busy_ns < BLOCKED_BUSY_SHARE * b.ns
    gpu = f"; the GPU was busy {fd(b.device_busy_ns)} of that time" if b.device_busy_ns >= 0 else ""
    return [Finding("step_blocked", HIGH,
                    f"step #{b.step}: {fd(b.ns)} of its annotation's {fd(b.step_ns)} ({100 * b.share:.0f}%) is the host "
                    f"blocked in {b.name} ×{b.calls}{where}{more}{gpu}",
                    "the GPU sat idle while the host waited: the call was held behind something other than queued "
                    "work (a stream wait on an event, another stream or process, work from before the trace); see "
                    "the GPU section's idle split for what held it, and move the sync out of the step" if idle else
                    "a blocking call waits for every GPU op queued before it: the step's time is that work (see the "
                    "GPU section), and the host idles meanwhile; move the sync (.item(), .cpu(), .tolist(), a "
                    "synchronous copy) out of the step, or copy with non_blocking=True into pinned memory")]


def serving_findings(sv: ServingReport) -> list[Finding]:
    """Per kind: a mixed step among decode steps is not a spike, a long prefill is slow only for
    its tokens."""
    if not sv.present or not sv.kinds_known:
        return []
    out: list[Finding] = []
    by_index = {s.index: s for s in sv.steps}
    for k in sv.kinds:
        if k.kind == "unknown" or k.trend is None:
            continue
        if k.spikes:
            shown = ", ".join(f"#{i} {fd(by_index[i].dur_ns)}" for i in k.spikes[:5])
            out.append(Finding(f"spikes:{k.kind}", WARNING,
                               f"{len(k.spikes)} {k.kind} step(s) above {fd(k.trend.spike_threshold_ns)} "
                               f"(median {fd(k.stats.median)}): {shown}",
                               "compare a spike with a normal step of its kind: garbage collection, allocator growth, "
                               "host syncs or a scheduler stall usually explain one-off slow steps"))
        if k.kind == "decode" and k.trend.trend == "staircase":
            out.append(Finding("staircase:decode", WARNING,
                               f"decode step time rises {fd(abs(k.trend.slope_ns_per_step))} per step "
                               f"({k.trend.rise_pct:+.0f}% of the median over {k.count} steps, r={k.trend.r:.2f})",
                               "decode cost grows with context or batch: check the KV cache is used and attention "
                               "is a paged/fused kernel; compare with the steady-state window"))
    for i in sv.slow_prefills[:3]:
        s = by_index[i]
        out.append(Finding("slow_prefill", WARNING,
                           f"prefill step #{i} took {fd(s.dur_ns)} for {s.prefill_tokens:,} tokens "
                           f"({fd(s.dur_ns / s.prefill_tokens)} per token, ≥ {SLOW_FIRST_RATIO:.0f}× the other prefills)",
                           "slow for its tokens: warm-up (compilation, autotuning) or allocator growth; run warm-up "
                           "requests before measuring"))
    st = sv.steady
    if st is not None:
        rate = f", {st.decode_tokens_per_s:,.0f} decode tokens/s" if st.decode_tokens_per_s else ""
        out.append(Finding("steady_state", INFO,
                           f"steady decode: steps #{st.first}–#{st.last} ({st.count} steps, batch ≈ {st.batch_median:g}): "
                           f"TPOT {fd(st.tpot_ns)}{rate}",
                           "judge decode cost on this window: ramp-up and ramp-down steps have smaller batches"))
    return out


def graph_findings(g: GraphReport) -> list[Finding]:
    if not g.present or not g.launches:
        return []
    d = g.launch_delay
    delay = f"; first kernel {fd(d.median)} after the launch call (median)" if d else ""
    cap = ""
    if g.capture is not None:
        cap = f"; {g.capture.matched:,} of {g.capture.replayed_kernels:,} kernels matched to the capture"
    hint = ("graph kernels belong to the launch call; pass --capture (vLLM's capture trace) to see the "
            "operators and shapes they were captured from" if g.capture is None else
            "the replayed time per captured operator is under CUDA/HIP graphs; unmatched kernels were not in "
            "the capture (another batch size or mode)")
    return [Finding("cuda_graphs", INFO, f"{g.launches:,} graph launches replay {g.kernels:,} kernels "
                    f"({fd(g.kernel_ns)}){delay}{cap}", hint)]


def op_findings(ops: OpsReport) -> list[Finding]:
    out: list[Finding] = []
    seen: dict[str, list] = {}
    for row in ops.by_self:
        h = hint_for(row.name)
        if h and row.pct >= OP_SHARE and h[0] not in seen:
            seen[h[0]] = [row, h[1]]
    for kind, (row, hint) in seen.items():
        out.append(Finding(f"op:{kind}", WARNING if row.pct >= 20 else INFO,
                           f"{row.name} takes {fd(row.self_ns)} self time ({row.pct:.1f}% of {_of_range(ops)}, {row.count:,} calls)",
                           hint))
    sy = ops.sync
    if sy.blocking_count:
        share = pct(sy.blocking_ns, ops.range_ns)
        names = ", ".join(f"{n} ×{c}" for n, c, _ in sy.by_name if sy.is_blocking(n))
        where = ", ".join(n for n, _ in sy.callers[:2])
        ordering = sy.count - sy.blocking_count
        also = f"; {ordering} ordering call(s) (event record / stream wait: the host goes on)" if ordering else ""
        out.append(Finding("sync", WARNING if share >= SYNC_SHARE else INFO,
                           f"{sy.blocking_count} blocking sync points take {fd(sy.blocking_ns)} ({share:.1f}%): "
                           f"{_first(names, 3)}; called from {where}{also}",
                           "each blocking call stalls the CPU until the GPU drains: avoid .item(), .cpu(), printing GPU "
                           "tensors and blocking copies inside the loop"))
    return out


def _first(joined: str, n: int) -> str:
    return ", ".join(joined.split(", ")[:n])


def _of_range(ops: OpsReport) -> str:
    return "the range" if ops.threads <= 1 else f"the range × {ops.threads} CPU threads"


def gpu_findings(g: GpuReport, graph_kernel_ns: int = 0) -> list[Finding]:
    """``graph_kernel_ns``: kernel time replayed from CUDA/HIP graphs; where it is most of the
    kernel time, the hints do not suggest graphs or fusion (already done): the idle time is outside them."""
    graphed = pct(graph_kernel_ns, g.kernel_ns) if g.present and g.kernel_ns else 0.0
    replay = graphed >= GRAPH_SHARE
    in_graphs = (f"{graphed:.0f}% of kernel time is already CUDA/HIP graph replays: the GPU waits outside them "
                 "(host work between replays, a blocking copy or sync); shorten the host's work between launches")
    if not g.present:
        return [Finding("gpu", INFO, "no GPU activity in this trace", "profile with CUDA activities to see kernels")]
    if not g.gpu_ops_in_range:
        return [Finding("gpu", INFO, "no GPU activity in this range", "widen the range")]
    out: list[Finding] = []
    if g.busy_pct < GPU_BUSY_LOW:
        out.append(Finding("gpu_busy", HIGH if g.busy_pct < GPU_BUSY_VERY_LOW else WARNING,
                           f"GPU busy {g.busy_pct:.1f}% of the range" + (f" ({fd(g.busy_ns)} of {fd(g.range_ns)})" if len(g.devices) == 1
                                                                        else f" (mean of {len(g.devices)} devices)")
                           + f", {g.busy_pct_of_active:.1f}% of the GPU-active span",
                           in_graphs if replay else
                           "the GPU waits: batch more work, overlap CPU work, or capture the step in a CUDA graph"))
    # The idle gaps by cause: the CPU's share only up to each next launch call; what follows it
    # was queued, and a launch-bound hint would be wrong for it.
    denom = g.range_ns * max(len(g.devices), 1)
    cpu_share = pct(g.idle_cpu_launch_ns, denom)
    if cpu_share >= IDLE_CPU_SHARE:
        # Launch cost is microseconds a kernel: longer gaps are the host busy elsewhere, which fusion or
        # graphs would not remove. The hint follows where most of the time is.
        long_ns, long_gaps = g.idle_cpu_launch_ns - g.idle_cpu_short_ns, g.idle_cpu_gaps - g.idle_cpu_short_gaps
        host_work = g.idle_cpu_gaps > 0 and long_ns > g.idle_cpu_short_ns  # gaps not counted: as before
        gaps = (f" over {g.idle_cpu_gaps:,} gaps: {fd(g.idle_cpu_short_ns)} in {g.idle_cpu_short_gaps:,} under "
                f"{fd(LAUNCH_SIZED_GAP_NS)} (per-op launch and dispatch cost), {fd(long_ns)} in {long_gaps:,} longer"
                if g.idle_cpu_gaps else "")
        out.append(Finding("gpu_waits_cpu", WARNING,
                           f"GPU idle {fd(g.idle_cpu_launch_ns)} ({cpu_share:.1f}%) before the CPU launched the next work"
                           f"{gaps} (launched and then queued: {fd(g.idle_queued_ns + g.idle_dependency_ns)})",
                           in_graphs if replay else
                           "not per-op launch cost: the host was busy elsewhere between launches "
                           "(a blocking call, data preparation, scheduling, Python, I/O or communication setup); "
                           "see what the CPU threads run in those gaps and overlap it with the GPU" if host_work else
                           "launch-bound: fewer, larger kernels (fusion, torch.compile) or CUDA graphs "
                           "(mode='reduce-overhead') cut per-kernel CPU cost"))
    dep_share = pct(g.idle_dependency_ns, denom)
    if dep_share >= IDLE_CPU_SHARE:
        calls = ", ".join(f"{n} {fd(v)}" for n, v in g.idle_dependencies[:3])
        out.append(Finding("gpu_waits_dependency", WARNING,
                           f"GPU idle {fd(g.idle_dependency_ns)} ({dep_share:.1f}%) with the next work launched but held "
                           f"behind a stream wait ({calls})",
                           "not launch-bound: the stream waits on an event another stream or a host copy records; "
                           "find what records it (a blocking copy, a sync, another stream's work) and overlap or remove it"))
    queued_share = pct(g.idle_queued_ns, denom)
    if queued_share >= IDLE_CPU_SHARE:
        out.append(Finding("gpu_queued", INFO,
                           f"GPU idle {fd(g.idle_queued_ns)} ({queued_share:.1f}%) with the next work already launched",
                           "not launch-bound: launch latency, or a dependency the trace does not show (another "
                           "process on the GPU, an untraced copy)"))
    offset_share = pct(g.idle_clock_offset_ns, denom)
    if offset_share >= IDLE_CPU_SHARE:
        out.append(Finding("gpu_clock_offset", INFO,
                           f"GPU idle {fd(g.idle_clock_offset_ns)} ({offset_share:.1f}%) before work that started ahead of "
                           "its launch call: host and device clocks disagree, so the cause is not known",
                           "the trace's host and device clocks are offset: read launch delays with care"))
    if g.memcpy_pct + g.memset_pct >= MEMCPY_SHARE:
        dirs = ", ".join(f"{k} {fd(v)}" for k, v in sorted(g.memcpy_by_direction.items(), key=lambda kv: -kv[1]))
        out.append(Finding("memcpy", WARNING, f"memcpy {g.memcpy_pct:.1f}% and memset {g.memset_pct:.1f}% of GPU time ({dirs})",
                           "keep tensors on the GPU across steps; use pinned memory and non_blocking=True for copies "
                           "that must happen"))
    if g.launch:
        after = g.launch_after_return
        sync = g.launches_paired - (after.count if after else 0)
        end = (f"; from call end (HTA): mean {fd(after.mean)}" if after else "") + (
            f" ({sync:,} synchronous calls left out: they return after their work)" if sync else "")
        out.append(Finding("launch_delay", INFO,
                           f"kernel launch delay from call start: mean {fd(g.launch.mean)}, p90 {fd(g.launch.p90)}, "
                           f"worst {fd(g.launch.max)}{end} ({g.launches_paired:,} launches)",
                           "long delays with a busy GPU mean a deep queue (fine); with an idle GPU they point at the "
                           "driver or contention"))
    if g.comm_pct >= COMM_SHARE:
        heaviest = next((k.name for k in g.top_kernels if is_comm(k.name)), "")
        out.append(Finding("communication", INFO,
                           f"communication kernels take {g.comm_pct:.1f}% of kernel time ({fd(g.comm_ns)})"
                           + (f", most in {heaviest[:80]}" if heaviest else ""),
                           "collectives wait for the slowest rank and move data: overlap them with compute, and "
                           "compare ranks (vtui ranks) for stragglers and exposed communication"))
    fp32 = sum(k.total_ns for k in g.top_kernels if "gemm" in k.name.lower() and precision_of(k.name) == "fp32")
    share = pct(fp32, g.kernel_ns)
    if share >= FP32_GEMM_SHARE:
        out.append(Finding("precision", WARNING, f"fp32 GEMM kernels take {share:.0f}% of kernel time",
                           "use bf16/fp16 (autocast) or allow TF32 so matrix multiplies run on tensor cores"))
    return out


CAPTURE_SHARE = 0.5  # launch calls made while capturing a graph: a capture trace
CAPTURE_REFRAMED = ("gpu_busy", "gpu_waits_cpu", "gpu_queued", "memcpy", "launch_delay")


def capture_findings(found: list[Finding], captured: int, calls: int, gpu_ops: int) -> list[Finding]:
    """A trace that mostly captures CUDA/HIP graphs: its launch calls record kernels into a graph and
    run nothing, so the GPU's busy and idle time, its copies and launch delays cover only the few
    ops run outside capture (warm-up, inputs). Those findings go; one says why."""
    if not calls or captured < CAPTURE_SHARE * calls:
        return found
    out = [Finding("graph_capture", INFO,
                   f"{captured:,} of {calls:,} launch calls are made while a CUDA/HIP graph is captured: they record "
                   f"kernels into the graph and run nothing here, so GPU busy, idle, copy and launch-delay figures "
                   f"cover only the {gpu_ops:,} device ops that ran (warm-up, inputs)",
                   "a capture trace shows how graphs are built, not the GPU at work: profile the replay (and pass "
                   "this trace as its --capture) for GPU figures")]
    at = next((i for i, f in enumerate(found) if f.kind in CAPTURE_REFRAMED), len(found))  # where the GPU's findings were
    kept = [f for f in found if f.kind not in CAPTURE_REFRAMED]
    at = sum(1 for f in found[:at] if f.kind not in CAPTURE_REFRAMED)
    return kept[:at] + out + kept[at:]


def memory_findings(m: MemoryReport) -> list[Finding]:
    if not m.present or m.main is None:
        return [Finding("memory", INFO, "no [memory] events in this trace", "profile with profile_memory=True")]
    d = m.main
    out = []
    if d.verdict == "growing":
        out.append(Finding("memory_growth", WARNING,
                           f"{d.device}: allocated memory grows {format_bytes(d.end_allocated - d.start_allocated)} over the range "
                           f"(peak {format_bytes(d.peak_allocated)})",
                           "tensors kept across steps (a growing cache or history): check what holds references"))
    elif d.verdict == "churn":
        out.append(Finding("memory_churn", INFO,
                           f"{d.device}: {d.allocs:,} allocations / {d.frees:,} frees, {d.repeated_size_share * 100:.0f}% "
                           f"of the same few sizes (peak {format_bytes(d.peak_allocated)})",
                           "re-allocation churn: preallocate and reuse buffers (static KV cache, out= arguments)"))
    return out


def python_findings(p: PythonReport) -> list[Finding]:
    if not p.present or p.python_pct < PYTHON_SHARE:
        return []
    return [Finding("python", WARNING, f"{p.python_pct:.0f}% of CPU self time is in Python frames (stacks up to {p.max_depth} deep)",
                    "per-op Python overhead: torch.compile or CUDA graphs remove it; move Python work out of the hot loop")]


def cache_findings(c: CacheReport) -> list[Finding]:
    if not c.present or c.hit_rate is None:
        return []
    return [Finding("cache", WARNING if c.hit_rate < 50 else INFO,
                    f"cache hit rate {c.hit_rate:.0f}% ({c.hits} hits, {c.misses} misses, {c.evictions} evictions)",
                    "a low hit rate: the cache is too small or keys do not repeat (prefix caching needs shared prefixes)")]
