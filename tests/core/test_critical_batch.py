"""The batched critical-path walk (every step's hop in one numpy pass) equals the step-by-step
reference walk, segment by segment, and the report is worked out once per store and steps."""

from __future__ import annotations

import random

import numpy as np
import pytest

import vtui.analysis.why.critical as critical
import vtui.analysis.why.critical_graph as critical_graph
import vtui.analysis.why.critical_walk as critical_walk
from tests.core.test_critical import Builder
from tests.helpers import FIXTURES, MI250, QWEN, STEPLOOP, UNCLOSED
from vtui.analysis.steps.detect import analyse_steps
from vtui.load.trace import load_trace


def _plain(st: critical.StepPath) -> tuple:
    segs = [(g.kind, g.track, g.start, g.end, g.ns, tuple(int(r) for r in g.rows)) for g in st.segments]
    return (st.index, st.row, st.start, st.end, st.step_end, st.bound, st.cpu_ns, st.gpu_ns, st.comm_ns, st.wait_ns,
            st.sync_ns, st.queue_ns, st.top, segs, st.path_rows().tolist())


def assert_same_as_reference(store) -> int:
    rows = analyse_steps(store).rows
    batched = critical.analyse_critical(store, rows).steps
    reference = critical.walk_steps_one_by_one(store, rows[: critical.MAX_STEPS])
    assert len(batched) == len(reference)
    for b, r in zip(batched, reference):
        assert _plain(b) == _plain(r)
    return len(batched)


def _random_trace(tmp_path, seed: int):
    """Steps of random launches on two streams, blocking calls, event waits, collectives and
    kernels that overlap on a stream (their ends out of order), so every branch of the walk runs."""
    rnd = random.Random(seed)
    b = Builder()
    t, gpu_t = 0.0, 0.0
    for i in range(40):
        dur = rnd.uniform(200, 900)
        b.cpu(f"ProfilerStep#{i}", t, dur, cat="user_annotation")
        at = t + 2
        while at < t + dur - 10:
            pick = rnd.random()
            if pick < 0.55:
                stream = rnd.choice((7, 7, 9))
                name = rnd.choice(("gemm", "elementwise", "ncclKernel_AllReduce"))
                start = max(gpu_t, at + rnd.uniform(0, 30)) - rnd.choice((0, 0, 0, 15))  # some overlap
                k_dur = rnd.uniform(1, 120)
                b.launch(at, name, start, k_dur, stream=stream)
                gpu_t = max(gpu_t, start + k_dur * rnd.choice((0.3, 1.0)))
            elif pick < 0.7:
                b.cpu(rnd.choice(("cudaStreamSynchronize", "cudaDeviceSynchronize")), at, rnd.uniform(5, 150),
                      cat="cuda_runtime")
            elif pick < 0.8:
                b.cpu("cudaEventRecord", at, 2, cat="cuda_runtime")
                b.cpu("cudaStreamWaitEvent", at + 3, 2, cat="cuda_runtime")
            else:
                b.cpu(rnd.choice(("aten::mm", "aten::add")), at, rnd.uniform(3, 40))
            at += rnd.uniform(5, 60)
        t += dur + rnd.choice((0, 5, 50))
    return b.load(tmp_path)


@pytest.mark.parametrize("seed", range(6))
def test_batched_walk_equals_the_reference_on_random_steps(tmp_path, seed):
    assert assert_same_as_reference(_random_trace(tmp_path, seed)) == 40


def test_batched_walk_equals_the_reference_when_hops_run_out(tmp_path, monkeypatch):
    monkeypatch.setattr(critical_walk, "MAX_HOPS", 2)
    assert assert_same_as_reference(_random_trace(tmp_path, 99)) == 40


@pytest.mark.parametrize("path", [QWEN, UNCLOSED, STEPLOOP], ids=lambda p: p.name)
def test_batched_walk_equals_the_reference_on_real_traces(path):
    assert assert_same_as_reference(load_trace(path, cache=False)) > 0


@pytest.mark.parametrize("name", ["hta__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "hta__nccl_data.json.gz",
                                  "kineto__worker0.1623143089861.pt.trace.json.gz", "catapult__lthi_cats.json.gz"])
def test_batched_walk_equals_the_reference_on_shared_traces(shared_traces, name):
    path = shared_traces / "public" / name
    if not path.exists():
        pytest.skip(f"{name} not in the shared traces")
    assert assert_same_as_reference(load_trace(path, cache=False)) > 0


def test_the_report_is_worked_out_once_per_store_and_steps(tmp_path):
    store = _random_trace(tmp_path, 3)
    rows = analyse_steps(store).rows
    first = critical.analyse_critical(store, rows)
    assert critical.analyse_critical(store, rows.copy()) is first
    other = critical.analyse_critical(store, rows[:5])
    assert other is not first and len(other.steps) == 5
    assert [_plain(s) for s in other.steps] == [_plain(s) for s in first.steps[:5]]


def test_batched_walk_equals_the_reference_when_a_runs_ends_are_out_of_order(tmp_path):
    """Clock skew: work the step launched starts before the step, and a short kernel inside a long
    one puts the run's ends out of order (the batched binary search cannot be used on it)."""
    b = Builder()
    b.step(100, 200)
    b.launch(105, "long", 90, 310)  # 90 .. 400, launched at 105
    b.launch(106, "short", 95, 25)  # 95 .. 120: ends before the long one's
    b.launch(107, "last", 120, 380)  # 120 .. 500, right after the short one
    store = b.load(tmp_path)
    assert assert_same_as_reference(store) == 1
    assert critical_graph.build_graph(store)[0].end_drops[-1] > 0  # the ends do drop


def _same_device_columns(store) -> int:
    """The C helper's device columns (``device_runs``) equal the numpy ones, attribute by attribute."""
    fast, ref = critical_graph.DeviceWork(store, use_c=True), critical_graph.DeviceWork(store, use_c=False)
    for name in DEVICE_COLUMNS:
        assert np.array_equal(getattr(fast, name), getattr(ref, name)), name
    return len(ref.rows)


DEVICE_COLUMNS = ("rows", "launch", "track", "start", "end", "launch_track", "by_launch", "launch_start_sorted", "l_acc",
                  "event_src", "ready", "head", "comm", "cum_gpu", "cum_comm", "cum_gap", "end_drops", "end_by_launch")


needs_c = pytest.mark.skipif(critical_graph.c_device_runs is None, reason="_vtui_fastcols is not built: only numpy's path exists")


@needs_c
@pytest.mark.parametrize("seed", range(6))
def test_device_columns_from_c_equal_numpy_on_random_steps(tmp_path, seed):
    store = _random_trace(tmp_path, seed)
    assert _same_device_columns(store) > 0


@needs_c
@pytest.mark.parametrize("path", [QWEN, FIXTURES / "kineto__worker0_first_step.json.gz", MI250], ids=lambda p: p.name)
def test_device_columns_from_c_equal_numpy_on_real_traces(path):
    assert _same_device_columns(load_trace(path, cache=False)) > 0


@needs_c
def test_a_trace_without_device_work_but_with_collective_names(tmp_path):
    """CPU-only, a ``c10d::allreduce_`` op among its names (HTA's rank-34): no device work, so no
    comm columns for the helper (it once refused the buffers and Insights failed)."""
    from tests.helpers import X, load_events
    from vtui.analysis.report.insights import compute_insights

    store = load_events(tmp_path, [X("ProfilerStep#1", 0, 100), X("c10d::allreduce_", 10, 20)])
    dev = critical_graph.DeviceWork(store, use_c=True)
    assert len(dev.rows) == 0
    assert compute_insights(store).critical is not None


@needs_c
def test_device_columns_from_c_equal_numpy_with_event_waits(shared_traces):
    path = shared_traces / "public" / "hta__nccl_data.json.gz"  # waits on other streams' events
    if not path.exists():
        pytest.skip("hta__nccl_data.json.gz not in the shared traces")
    store = load_trace(path, cache=False)
    assert _same_device_columns(store) > 0 and (critical_graph.DeviceWork(store).event_src >= 0).any()


@needs_c
def test_device_rows_out_of_stream_order_are_sorted_first(tmp_path, monkeypatch):
    """Rows not in (stream, start) order (device work on lanes): the helper says so, they are sorted
    and it runs again, as numpy's lexsort orders them."""
    store = _random_trace(tmp_path, 3)
    rows, launch = critical_graph.device_work_launches(store)
    flipped = (rows[::-1].copy(), launch[::-1].copy())
    monkeypatch.setattr(critical_graph, "device_work_launches", lambda _store: flipped)
    assert _same_device_columns(store) > 0
