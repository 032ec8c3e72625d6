"""Findings, the headline of Insights: each on a minimal trace (or report) whose answer is known by
hand — which finding, its severity at the thresholds' edges, the figures in its message, its hint."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import X, load_events
from vtui.analysis.gpu.activity import GpuReport
from vtui.analysis.report.insights import compute_insights
from vtui.analysis.slices.operators import OP_HINTS, OpRow, OpsReport, SyncReport, hint_for
from vtui.analysis.why.findings import gpu_findings, op_findings

HINT = {kind: hint for kind, _, hint in OP_HINTS}


# ---- operator hints ------------------------------------------------------------------------------
@pytest.mark.parametrize("name, kind", [
    ("aten::addmm", "matmul"), ("aten::mm", "matmul"), ("aten::linear", "matmul"), ("aten::matmul", "matmul"),
    ("aten::bmm", "attention"), ("aten::baddbmm", "attention"), ("aten::softmax", "attention"),
    ("aten::_softmax", "attention"), ("aten::scaled_dot_product_attention", "attention"),
    ("aten::copy_", "layout copy"), ("aten::to", "layout copy"), ("aten::_to_copy", "layout copy"),
    ("aten::contiguous", "layout copy"), ("aten::clone", "layout copy"),
    ("aten::layer_norm", "norm"), ("aten::native_layer_norm", "norm"), ("LlamaRMSNorm", "norm"), ("aten::rms_norm", "norm"),
    ("aten::mm_out", None), ("aten::add", None), ("aten::tolist", None), ("my::linear", None), ("aten::clone_", None),
])
def test_each_operator_kind_gets_its_hint(name: str, kind: str | None):
    assert hint_for(name) == ((kind, HINT[kind]) if kind else None)


def _ops(rows: list[tuple[str, float]], sync: SyncReport | None = None, threads: int = 1) -> OpsReport:
    """An operator report over a 1 ms range: (name, % self time) rows, largest first."""
    op_rows = [OpRow(n, round(p * 10_000), round(p * 10_000), 3, p, p) for n, p in rows]
    return OpsReport(1_000_000, op_rows, op_rows, sync or SyncReport(), sum(r.self_ns for r in op_rows), threads)


def test_operator_findings_one_per_kind_from_five_percent_warning_from_twenty():
    found = op_findings(_ops([("aten::mm", 20.0), ("aten::addmm", 19.0), ("aten::bmm", 19.9), ("aten::copy_", 5.0),
                              ("aten::layer_norm", 4.9), ("aten::add", 30.0)]))
    assert [(f.kind, f.severity, f.hint) for f in found] == [
        ("op:matmul", "warning", HINT["matmul"]),  # the largest of its kind speaks for it: mm, not addmm
        ("op:attention", "info", HINT["attention"]),
        ("op:layout copy", "info", HINT["layout copy"]),
    ]  # the norm at 4.9% is under the bar; aten::add has no hint
    assert found[0].message == "aten::mm takes 200 µs self time (20.0% of the range, 3 calls)"
    two = op_findings(_ops([("aten::mm", 20.0)], threads=2))
    assert two[0].message.endswith("(20.0% of the range × 2 CPU threads, 3 calls)")


def test_sync_finding_names_its_callers_and_turns_warning_at_five_percent():
    sync = SyncReport(5, 50_010, [("cudaStreamSynchronize", 3, 40_000), ("cudaDeviceSynchronize", 1, 10_000),
                                  ("cudaStreamWaitEvent", 1, 10)],
                      [("aten::item", 2), ("aten::to", 1), ("(top level)", 1)],
                      frozenset({"cudaStreamSynchronize", "cudaDeviceSynchronize"}), 4, 50_000)
    (f,) = op_findings(_ops([], sync))
    assert f.kind == "sync" and f.severity == "warning"  # 50 µs of 1 ms = 5.0% (the ordering call not counted)
    assert f.message == ("4 blocking sync points take 50 µs (5.0%): cudaStreamSynchronize ×3, cudaDeviceSynchronize ×1; "
                         "called from aten::item, aten::to; 1 ordering call(s) (event record / stream wait: the host goes on)")
    assert "avoid .item(), .cpu()" in f.hint
    sync.blocking_ns = 49_000
    assert op_findings(_ops([], sync))[0].severity == "info"
    # ordering calls alone block nothing: no sync finding
    assert op_findings(_ops([], SyncReport(1, 10, [("cudaStreamWaitEvent", 1, 10)], [("(top level)", 1)]))) == []


def test_sync_callers_are_the_enclosing_operators(tmp_path: Path):
    events = [X("aten::item", 0.0, 100.0), X("cudaStreamSynchronize", 10.0, 20.0, "cuda_runtime"),
              X("aten::item", 200.0, 100.0), X("cudaStreamSynchronize", 210.0, 20.0, "cuda_runtime"),
              X("aten::to", 400.0, 100.0), X("cudaStreamSynchronize", 410.0, 20.0, "cuda_runtime"),
              X("cudaDeviceSynchronize", 600.0, 10.0, "cuda_runtime")]
    ins = compute_insights(load_events(tmp_path, events))
    assert ins.ops.sync.callers[0] == ("aten::item", 2)
    assert sorted(ins.ops.sync.callers) == [("(top level)", 1), ("aten::item", 2), ("aten::to", 1)]
    sync = next(f for f in ins.findings if f.kind == "sync")
    assert sync.message.endswith("called from aten::item, aten::to") or sync.message.endswith(
        "called from aten::item, (top level)")


# ---- GPU busy --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel_us, severity", [(100.0, "high"), (199.0, "high"), (200.0, "warning"),
                                                 (499.0, "warning"), (500.0, None)])
def test_gpu_busy_finding_high_under_twenty_warning_under_fifty(tmp_path: Path, kernel_us: float, severity):
    """One kernel in a 1 ms trace: busy is its share of the range; the GPU-active span is the kernel."""
    events = [X("aten::run", 0.0, 1000.0), X("cudaLaunchKernel", 1.0, 2.0, "cuda_runtime", correlation=1),
              X("k", 100.0, kernel_us, "kernel", pid=0, tid=7, correlation=1)]
    ins = compute_insights(load_events(tmp_path, events))
    busy = [f for f in ins.findings if f.kind == "gpu_busy"]
    if severity is None:
        assert not busy
        return
    (f,) = busy
    pct = kernel_us / 10
    assert f.severity == severity
    assert f.message.startswith(f"GPU busy {pct:.1f}% of the range (") and f.message.endswith(
        ", 100.0% of the GPU-active span")
    assert f.hint.startswith("the GPU waits")


def test_gpu_busy_finding_over_several_devices_says_mean():
    g = GpuReport(True, range_ns=1_000_000, busy_ns=300_000, busy_pct=15.0, busy_pct_of_active=40.0,
                  devices=[object(), object()], gpu_ops_in_range=4)
    (f,) = [f for f in gpu_findings(g) if f.kind == "gpu_busy"]
    assert f.severity == "high" and f.message == "GPU busy 15.0% of the range (mean of 2 devices), 40.0% of the GPU-active span"


# ---- memory: churn, growth, steady ----------------------------------------------------------------
def _memory(tmp_path: Path, deltas: list[int]):
    """A [memory] instant per allocation (+) or free (−) on the CPU, 1 µs apart, with running totals."""
    events, total = [X("aten::run", 0.0, len(deltas) + 1.0)], 0
    for i, b in enumerate(deltas):
        total += b
        events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
                       "ts": i + 0.5, "args": {"Bytes": b, "Total Allocated": total, "Total Reserved": 0,
                                               "Device Type": 0, "Device Id": -1}})
    ins = compute_insights(load_events(tmp_path, events))
    return ins.memory.main, [f for f in ins.findings if f.kind.startswith("memory")]


def test_memory_churn_needs_a_hundred_allocations_freed_again(tmp_path: Path):
    d, found = _memory(tmp_path, [1024, -1024] * 100)
    assert d.verdict == "churn" and (d.allocs, d.frees, d.peak_allocated) == (100, 100, 1024)
    assert [(f.kind, f.severity, f.message) for f in found] == [
        ("memory_churn", "info", "cpu: 100 allocations / 100 frees, 100% of the same few sizes (peak 1.0 KiB)")]
    assert found[0].hint.startswith("re-allocation churn")
    assert _memory(tmp_path, [1024, -1024] * 99)[0].verdict == "steady"  # 99 allocations: too few to call it churn
    # Sizes that do not repeat (each seen < 10 times) are not churn.
    assert _memory(tmp_path, [s for k in range(100) for s in (1000 + k, -(1000 + k))])[0].verdict == "steady"


def test_memory_growth_when_the_net_rise_is_half_the_peak_rise(tmp_path: Path):
    d, found = _memory(tmp_path, [1000, 1000, -1000])  # ends 1000 up, peak 2000: exactly half
    assert d.verdict == "growing" and (d.start_allocated, d.end_allocated, d.peak_allocated) == (0, 1000, 2000)
    assert [(f.kind, f.severity, f.message) for f in found] == [
        ("memory_growth", "warning", "cpu: allocated memory grows 1000 B over the range (peak 2.0 KiB)")]
    assert found[0].hint.startswith("tensors kept across steps")
    d, found = _memory(tmp_path, [1000, 1000, -1001])  # just under half: steady, no finding
    assert d.verdict == "steady" and not found
    # Churn (100 same-size allocations, 90% of the bytes freed) that also grows at the end: growth wins.
    d, found = _memory(tmp_path, [1024, -1024] * 90 + [1024] * 10)
    assert d.verdict == "growing" and [f.kind for f in found] == ["memory_growth"]


# ---- steps: slow first, staircase, decreasing, spikes, gaps ---------------------------------------
def _steps(tmp_path: Path, durations_us: list[float], gap_us: float = 1.0):
    """engine_step slices one after another with ``gap_us`` between them: the step findings."""
    events, t = [], 0.0
    for d in durations_us:
        events.append(X("engine_step", t, d))
        t += d + gap_us
    return {f.kind: f for f in compute_insights(load_events(tmp_path, events)).findings
            if f.kind in ("slow_first", "staircase", "decreasing", "spikes", "gaps", "steps")}


def test_slow_first_step_is_info_below_ten_times_warning_from_ten(tmp_path: Path):
    f = _steps(tmp_path, [99.0] + [10.0] * 9)["slow_first"]
    assert f.severity == "info" and f.message == "first step 9.9× the median of the others (99 µs vs 10 µs)"
    assert f.hint.startswith("expected for a prefill")
    assert _steps(tmp_path, [100.0] + [10.0] * 9)["slow_first"].severity == "warning"
    assert "slow_first" not in _steps(tmp_path, [29.0] + [10.0] * 9)  # under 3×: no finding


def test_staircase_and_decreasing_steps(tmp_path: Path):
    up = _steps(tmp_path, [10.0 + k for k in range(11)])  # after the first: 11..20 µs, a 9 µs rise over a 15.5 µs median
    f = up["staircase"]
    assert f.severity == "warning" and f.message.startswith("step time rises 1 µs per step (+58% of the median over 10 steps, r=1.00)")
    assert "KV cache" in f.hint and "decreasing" not in up
    f = _steps(tmp_path, [20.0 - k for k in range(11)])["decreasing"]
    assert f.severity == "info" and f.message.startswith("step time falls 1 µs per step (-62% of the median over 10 steps")
    assert f.hint == "steps get cheaper over time: a warm-up or a shrinking batch"
    assert not {"staircase", "decreasing", "spikes"} & set(_steps(tmp_path, [10.0] * 11))  # flat: nothing


def test_spike_and_gap_findings(tmp_path: Path):
    found = _steps(tmp_path, [10.0] * 5 + [30.0] + [10.0] * 5)
    f = found["spikes"]
    assert f.severity == "warning" and f.message == "1 step(s) above 15 µs: #5 30 µs"  # 1.5× the median: MAD is 0
    assert f.hint.startswith("compare a spike with a normal step")
    assert "gaps" not in found  # 10 µs of gaps over a 140 µs span: 7%
    assert "gaps" not in _steps(tmp_path, [10.0] * 11, gap_us=1.2)  # 12 µs of 122 µs: 9.8%, under the bar
    f = _steps(tmp_path, [10.0] * 11, gap_us=1.25)["gaps"]  # 12.5 µs of 122.5 µs: 10.2%
    assert f.severity == "warning" and f.message == "12.5 µs between steps (10% of the step span, largest 1.25 µs)"
    assert f.hint.startswith("the host works outside the step")


# ---- the other GPU findings, Python and caches -------------------------------------------------------
def _gpu(**kw) -> dict:
    base = dict(range_ns=1_000_000, busy_ns=900_000, busy_pct=90.0, busy_pct_of_active=90.0, devices=[object()],
                gpu_ops_in_range=10)
    return {f.kind: f for f in gpu_findings(GpuReport(True, **{**base, **kw}))}


def test_gpu_waiting_for_the_cpu_memcpy_and_fp32_gemm_findings():
    from vtui.analysis.gpu.activity import NameTime

    assert set(_gpu()) == set()  # a busy GPU with nothing else to say
    f = _gpu(idle_cpu_launch_ns=100_000, idle_queued_ns=20_000, idle_dependency_ns=10_000)["gpu_waits_cpu"]
    assert f.severity == "warning" and f.message == ("GPU idle 100 µs (10.0%) before the CPU launched the next work "
                                                     "(launched and then queued: 30 µs)")
    assert "CUDA graphs" in f.hint
    assert "gpu_waits_cpu" not in _gpu(idle_cpu_launch_ns=99_000)
    # Launched and then held behind a stream wait: a dependency, never launch-bound advice.
    got = _gpu(idle_cpu_launch_ns=40_000, idle_dependency_ns=900_000, idle_dependencies=[("hipStreamWaitEvent", 900_000)])
    assert "gpu_waits_cpu" not in got
    f = got["gpu_waits_dependency"]
    assert f.message == ("GPU idle 900 µs (90.0%) with the next work launched but held behind a stream wait "
                         "(hipStreamWaitEvent 900 µs)") and "CUDA graphs" not in f.hint
    assert _gpu(idle_queued_ns=100_000)["gpu_queued"].severity == "info"
    assert "gpu_clock_offset" in _gpu(idle_clock_offset_ns=100_000)
    f = _gpu(memcpy_pct=6.0, memset_pct=4.0, memcpy_by_direction={"HtoD": 20_000, "DtoH": 50_000})["memcpy"]
    assert f.message == "memcpy 6.0% and memset 4.0% of GPU time (DtoH 50 µs, HtoD 20 µs)" and "pinned memory" in f.hint
    assert "memcpy" not in _gpu(memcpy_pct=6.0, memset_pct=3.9)
    kernels = [NameTime("sm80_xmma_gemm_f32f32_f32f32", 100_000, 1, 10.0), NameTime("volta_sgemm_128x64_nn", 100_000, 1, 10.0)]
    f = _gpu(kernel_ns=1_000_000, top_kernels=kernels[:1])["precision"]
    assert f.message == "fp32 GEMM kernels take 10% of kernel time" and "tensor cores" in f.hint
    assert "precision" not in _gpu(kernel_ns=1_000_001, top_kernels=kernels[:1])
    assert not _gpu(gpu_ops_in_range=0).keys() - {"gpu"} and _gpu(gpu_ops_in_range=0)["gpu"].message == "no GPU activity in this range"


def test_python_and_cache_findings():
    from vtui.analysis.calltree.python_overhead import PythonReport
    from vtui.analysis.slices.caches import CacheReport
    from vtui.analysis.why.findings import cache_findings, python_findings

    (f,) = python_findings(PythonReport(True, max_depth=12, python_pct=30.0))
    assert f.severity == "warning" and f.message == "30% of CPU self time is in Python frames (stacks up to 12 deep)"
    assert "torch.compile" in f.hint and python_findings(PythonReport(True, python_pct=29.9)) == []
    (f,) = cache_findings(CacheReport(True, hits=1, misses=3, evictions=2))
    assert f.severity == "warning" and f.message == "cache hit rate 25% (1 hits, 3 misses, 2 evictions)"
    assert cache_findings(CacheReport(True, hits=1, misses=1))[0].severity == "info"  # 50%: not low
