"""Critical path per step: verdicts on steps built so the answer is known, and sanity on real traces."""

from __future__ import annotations

import json

import pytest

from tests.helpers import QWEN, STEPLOOP
from vtui.analysis.steps.detect import analyse_steps
from vtui.analysis.why.critical import analyse_critical
from vtui.load.trace import load_trace
from vtui.present.critical_json import critical_json
from vtui.present.why_text import critical_lines

CPU, GPU = {"pid": 1, "tid": 1}, {"pid": 0, "tid": 7}


class Builder:
    """A Kineto-like trace: one CPU thread, streams on GPU 0, launches paired by correlation id."""

    def __init__(self) -> None:
        self.events: list[dict] = [
            {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        ]
        self.corr = 0

    def cpu(self, name: str, ts: float, dur: float, cat: str = "cpu_op", **args) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, **CPU, "args": args})

    def launch(self, ts: float, kernel: str, k_ts: float, k_dur: float, stream: int = 7,
               call: str = "cudaLaunchKernel", cat: str = "kernel") -> None:
        self.corr += 1
        self.cpu(call, ts, 4, cat="cuda_runtime", correlation=self.corr)
        self.events.append({"ph": "X", "cat": cat, "name": kernel, "ts": k_ts, "dur": k_dur, "pid": 0, "tid": stream,
                            "args": {"correlation": self.corr, "stream": stream}})

    def step(self, ts: float, dur: float) -> None:
        self.cpu("ProfilerStep#1", ts, dur, cat="user_annotation")

    def load(self, tmp_path):
        path = tmp_path / "t.json"
        path.write_text(json.dumps({"traceEvents": self.events}))
        return load_trace(path, cache=False)


def verdict(store):
    steps = analyse_steps(store)
    assert steps.count == 1
    report = analyse_critical(store, steps.rows)
    st = report.steps[0]
    # Every edge's time is on the path once: the parts add up to the path's length.
    assert st.cpu_ns + st.gpu_ns + st.comm_ns + st.wait_ns == st.end - st.start
    return report, st


def test_decode_loop_of_tiny_kernels_is_cpu_bound(tmp_path):
    b = Builder()
    b.step(0, 1000)
    for i in range(50):  # a launch every 19 µs, each kernel runs 2 µs: the GPU waits on the CPU
        t = 5 + 19 * i
        b.cpu("aten::add", t - 1, 7)
        b.launch(t, "tiny_kernel", t + 3, 2)
    report, st = verdict(b.load(tmp_path))
    assert st.bound == "cpu" and report.bound == "cpu"
    assert st.cpu_ns >= 900_000 and st.gpu_ns <= 2_000 * 2
    assert st.top[0][0] == "cpu"


def test_big_kernels_the_cpu_waits_on_are_gpu_bound(tmp_path):
    b = Builder()
    b.step(0, 1030)
    for i in range(5):  # launched in 50 µs, they run back to back for 1000 µs
        b.launch(10 + 10 * i, "big_gemm", 20 + 200 * i, 200)
    b.cpu("cudaDeviceSynchronize", 70, 955, cat="cuda_runtime")
    _report, st = verdict(b.load(tmp_path))
    assert st.bound == "gpu"
    assert st.gpu_ns == 1_000_000  # all five kernels are on the path
    assert st.cpu_ns < 50_000
    assert st.top[0][:2] == ("gpu", "big_gemm") and st.top[0][2] == 1_000_000


def test_a_sync_in_the_middle_of_a_step_is_sync_bound(tmp_path):
    b = Builder()
    b.step(0, 970)
    for i in range(3):
        b.launch(5 + 5 * i, "gemm_a", 20 + 150 * i, 150)  # GPU busy 20..470
    b.cpu("cudaStreamSynchronize", 40, 440, cat="cuda_runtime")  # returns at 480
    b.cpu("aten::index_put_", 490, 400)  # CPU work that could have overlapped the GPU
    b.launch(900, "gemm_b", 905, 50)
    b.cpu("cudaStreamSynchronize", 906, 54, cat="cuda_runtime")
    _report, st = verdict(b.load(tmp_path))
    assert st.bound == "sync"
    assert st.sync_ns >= 400_000
    assert ("cpu", "aten::index_put_", 400_000) in st.top


def test_a_straggling_collective_is_comm_bound(tmp_path):
    b = Builder()
    b.step(0, 1000)
    b.launch(5, "compute_kernel", 10, 100)
    b.launch(12, "ncclKernel_AllReduce_RING_LL_Sum_bfloat16", 110, 850)  # waits for the slowest rank
    b.cpu("cudaStreamSynchronize", 20, 945, cat="cuda_runtime")
    report, st = verdict(b.load(tmp_path))
    assert st.bound == "comm" and report.bound == "comm"
    assert st.comm_ns == 850_000 and st.gpu_ns == 100_000
    j = critical_json(report)
    assert j.steps[0].gpu_ns == 950_000 and j.steps[0].comm_ns == 850_000
    assert j.steps[0].top[0].name.startswith("ncclKernel") and j.steps[0].top[0].kind == "comm"


def test_cpu_running_ahead_ends_the_path_at_the_gpu(tmp_path):
    """No sync: the step's CPU part ends at 100 µs, its kernels run to 600 µs: the GPU bounds it."""
    b = Builder()
    b.step(0, 100)
    for i in range(5):
        b.launch(10 + 15 * i, "gemm", 15 + 100 * i, 100)
    report, st = verdict(b.load(tmp_path))
    assert st.bound == "gpu" and st.end == 515_000 and st.step_end == 100_000
    # the step's time is its path's, as serving counts it (to the end of its GPU work): 515 µs, the
    # annotation's 100 µs said as such
    assert report.by_bound_ns == {"gpu": 515_000}
    line = critical_lines(report)[1]
    assert "path 515 µs (annotation 100 µs)" in line, line


def test_real_traces_are_sane():
    for path in (QWEN, STEPLOOP):
        store = load_trace(path)
        steps = analyse_steps(store)
        report = analyse_critical(store, steps.rows)
        assert report.present == bool(steps.count)
        for st in report.steps:
            assert st.cpu_ns + st.gpu_ns + st.comm_ns + st.wait_ns == st.end - st.start
            assert st.end >= st.step_end > st.start
            assert st.bound in ("cpu", "gpu", "sync", "comm")
        if path != QWEN:  # the CPU-only step loop: every step is CPU time
            assert {st.bound for st in report.steps} == {"cpu"}
            assert all(st.gpu_ns == 0 and st.cpu_ns == st.step_end - st.start for st in report.steps)
        else:  # the Qwen prefill: 49 ms of GEMMs and elementwise kernels behind a 47 ms CPU step
            st = report.steps[0]
            assert st.bound == "gpu" and st.gpu_ns + st.queue_ns > 0.8 * (st.end - st.start)
            assert any("gemm" in name for kind, name, _ in st.top if kind == "gpu")


@pytest.mark.parametrize("name", ["hta__nccl_data.json.gz", "hta__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"])
def test_shared_hta_traces_are_sane(shared_traces, name):
    store = load_trace(shared_traces / "public" / name)
    steps = analyse_steps(store)
    report = analyse_critical(store, steps.rows)
    assert report.present and len(report.steps) == steps.count
    for st in report.steps:
        assert st.cpu_ns + st.gpu_ns + st.comm_ns + st.wait_ns == st.end - st.start


def test_many_steps_are_sampled_and_said(tmp_path, monkeypatch):
    import vtui.analysis.why.critical as critical

    b = Builder()
    for i in range(10):
        b.cpu(f"ProfilerStep#{i}", 100 * i, 90, cat="user_annotation")
        b.launch(100 * i + 5, "k", 100 * i + 10, 20)
    store = b.load(tmp_path)
    steps = analyse_steps(store)
    monkeypatch.setattr(critical, "MAX_STEPS", 4)
    report = critical.analyse_critical(store, steps.rows)
    assert report.steps_total == 10 and [st.index for st in report.steps] == [0, 3, 6, 9]
    assert critical_json(report).steps_total == 10


def test_a_stream_wait_event_leads_the_path_to_the_other_stream(tmp_path):
    """B (stream 9) waits on an event recorded after A (stream 7): A is on the path, not a wait."""
    b = Builder()
    b.step(0, 620)
    b.launch(5, "kernel_a", 10, 495, stream=7)
    b.cpu("cudaEventRecord", 12, 2, cat="cuda_runtime")
    b.cpu("cudaStreamWaitEvent", 15, 2, cat="cuda_runtime")
    b.launch(20, "kernel_b", 506, 100, stream=9)
    b.cpu("cudaStreamSynchronize", 30, 580, cat="cuda_runtime")
    _report, st = verdict(b.load(tmp_path))
    assert st.bound == "gpu" and st.gpu_ns == 595_000
    assert [n for _k, n, _v in st.top[:2]] == ["kernel_a", "kernel_b"]
    assert st.wait_ns < 20_000


def test_work_queued_behind_earlier_steps_is_the_gpus(tmp_path):
    """The GPU runs 400 µs behind: step 2's kernels wait behind step 1's, and the path says so in
    queue time (a gpu verdict), without walking the older work."""
    b = Builder()
    b.cpu("ProfilerStep#1", 0, 50, cat="user_annotation")
    b.launch(5, "old_kernel", 10, 500)  # launched in step 1, runs until 510
    b.cpu("ProfilerStep#2", 60, 50, cat="user_annotation")
    b.launch(65, "new_kernel", 510, 40)  # queued behind it
    store = b.load(tmp_path)
    report = analyse_critical(store, analyse_steps(store).rows)
    st = report.steps[1]
    assert st.bound == "gpu" and st.end == 550_000
    assert st.queue_ns == 450_000 and st.gpu_ns == 40_000 and st.cpu_ns == 0
    assert [n for _k, n, _v in st.top] == ["new_kernel"]
    assert critical_json(report).steps[1].queue_ns == 450_000
