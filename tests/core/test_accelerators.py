"""Accelerators and annotations: non-CUDA device work (MTIA) gets the GPU section and its syncs
count; operator rankings hold operators, annotations are listed apart; TTFT only from the run's
start; phases seen through Python frames; GPU busy % over the range and over the GPU-active span;
launch delay from call start and from call end. Each on a minimal trace and on a real one, checked
against plain Python over the raw JSON."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import (
    DEVICE_CATS,
    FIXTURES,
    MI250,
    QWEN,
    STACK,
    STEPLOOP,
    load_events,
    norm,
    raw_events,
    raw_origin,
    raw_span_ns,
    union_length,
    write_trace,
)
from vtui.analysis.report.compare import compare
from vtui.analysis.report.insights import compute_insights, summary_metrics
from vtui.analysis.steps.detect import analyse_steps
from vtui.cli import main
from vtui.load.trace import load_trace
from vtui.present.compare_json import comparison_dict
from vtui.present.insights_json import insights_dict
from vtui.present.insights_text import insights_text
from vtui.store.slicetime import time_range
from vtui.store.tracks import GPU

SYNC_NAME = re.compile(r"^(cuda|hip)(StreamSynchronize|DeviceSynchronize|EventSynchronize|EventRecord|StreamWaitEvent)$"
                       # synchronous copies and memsets block the host too (hipMemcpyWithStream: .to() / .item())
                       r"|^(cuda|hip)(Memcpy|MemcpyWithStream|Memset)$")


# ---- MTIA and other non-CUDA devices ---------------------------------------------------------------
def _mtia_trace(tmp_path: Path) -> Path:
    """Kineto on MTIA: host calls in mtia_runtime, device work in mtia_ccp_events on a device process."""
    events = [{"ph": "M", "name": "process_name", "pid": 5, "args": {"name": "MTIA 0"}}]
    for i, ts in enumerate((10.0, 50.0, 90.0)):
        events += [
            {"ph": "X", "cat": "mtia_runtime", "name": "launchKernel", "ts": ts, "dur": 4.0, "pid": 1, "tid": 1,
             "args": {"correlation": i + 1}},
            {"ph": "X", "cat": "mtia_ccp_events", "name": f"fused_gemm_{i}", "ts": ts + 10, "dur": 20.0, "pid": 5,
             "tid": 2, "args": {"correlation": i + 1}},
        ]
    events += [{"ph": "X", "cat": "mtia_runtime", "name": "synchronizeStream", "ts": 95.0, "dur": 30.0, "pid": 1,
                "tid": 1},
               {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0.0, "dur": 130.0, "pid": 1, "tid": 1}]
    return write_trace(tmp_path, events)


def test_mtia_device_work_gets_the_gpu_section_and_its_sync_counts(tmp_path: Path):
    store = load_trace(_mtia_trace(tmp_path), cache=False)
    device_tracks = [t for t in store.tracks if t.kind == GPU]
    assert [t.pid for t in device_tracks] == [5]
    ins = compute_insights(store)
    g = ins.gpu
    assert g.present and g.gpu_ops_in_range == 3 and g.kernel_ns == 3 * 20_000
    assert g.launches_paired == 3 and g.launch.mean == 10_000 and g.launch_after_return.mean == 6_000
    assert (ins.ops.sync.count, ins.ops.sync.total_ns) == (1, 30_000)
    assert [n for n, _, _ in ins.ops.sync.by_name] == ["synchronizeStream"]
    assert all(r.name != "fused_gemm_0" for r in ins.ops.by_total)  # device work is not a CPU operator


def test_device_work_and_syncs_on_real_kineto_traces():
    """CUDA (H100) and ROCm (MI250): the device-work and sync rules against the raw categories and names."""
    for path in (QWEN, MI250):
        events = raw_events(path)
        ins = compute_insights(load_trace(path), top=10_000)
        work = [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() in DEVICE_CATS]
        assert ins.gpu.gpu_ops_in_range == len(work), path.name
        syncs = [e for e in events if e.get("ph") == "X" and (
            SYNC_NAME.search(e["name"]) or (e.get("cat", "").lower() in ("cuda_runtime", "cuda_driver")
                                            and "synchroniz" in e["name"].lower()))]
        assert ins.ops.sync.count == len(syncs) > 0, path.name
        device_pids = {norm(e["pid"]) for e in work}
        assert {t.pid for t in load_trace(path).tracks if t.kind == GPU} >= device_pids


# ---- operators, not annotations --------------------------------------------------------------------
def test_annotations_are_listed_apart_and_no_operator_exceeds_100_pct(tmp_path: Path):
    events = [
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "ts": 0.0, "dur": 200.0, "pid": "Spans",
         "tid": "PyTorch Profiler"},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0.0, "dur": 100.0, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "user_annotation", "name": "## forward ##", "ts": 10.0, "dur": 80.0, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 20.0, "dur": 60.0, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0.0, "dur": 200.0, "pid": 1, "tid": 2},  # a 2nd thread
    ]
    store = load_events(tmp_path, events)
    ops = compute_insights(store).ops
    assert [r.name for r in ops.by_self] == ["aten::mm"] and [r.name for r in ops.by_total] == ["aten::mm"]
    assert {r.name for r in ops.annotations} == {"PyTorch Profiler (0)", "ProfilerStep#1", "## forward ##"}
    assert ops.threads == 2  # the profiler's own span adds no thread to the denominator
    mm = ops.by_self[0]
    assert mm.self_ns == 260_000 and mm.pct == pytest.approx(100 * 260_000 / (200_000 * 2)) and mm.pct <= 100
    d = insights_dict(compute_insights(store))
    assert [o["name"] for o in d["ops"]] == ["aten::mm"] and len(d["annotations"]) == 3
    assert d["ops_pct_of"] == {"range_ns": 200_000, "cpu_threads": 2, "denominator_ns": 400_000}
    c = comparison_dict(compare(store, store))
    kinds = {(o["kind"], o["name"]) for o in c["ops"]}
    assert ("cpu", "aten::mm") in kinds and ("annotation", "ProfilerStep#1") in kinds
    assert not any(k == "cpu" and n.startswith(("ProfilerStep", "PyTorch Profiler", "##")) for k, n in kinds)


@pytest.mark.parametrize("path", [QWEN, MI250, STACK], ids=lambda p: p.name[:24])
def test_real_traces_rank_operators_not_annotations(path: Path):
    events = raw_events(path)
    cats: dict[str, set[str]] = defaultdict(set)
    threads = set()
    for e in events:
        if e.get("ph") == "X":
            cats[e["name"]].add(str(e.get("cat", "")).lower())
    ins = compute_insights(load_trace(path), top=10_000)
    notes = {"user_annotation", "gpu_user_annotation", "trace"}
    for r in ins.ops.by_total:
        assert not cats[r.name] & notes, r.name
        assert not r.name.startswith("ProfilerStep#") and r.pct <= 100 + 1e-9, r.name
    for e in events:
        if e.get("ph") == "X" and e["name"] in {r.name for r in ins.ops.by_total}:
            threads.add((norm(e["pid"]), norm(e["tid"])))
    assert ins.ops.threads == len(threads)
    expected = {e["name"] for e in events if e.get("ph") == "X" and (str(e.get("cat", "")).lower() in notes
                                                                       or str(e["name"]).startswith("ProfilerStep#"))}
    assert {r.name for r in ins.ops.annotations} == expected


# ---- TTFT only from the run's start -----------------------------------------------------------------
def test_first_step_is_a_ttft_only_when_the_range_starts_the_run(tmp_path: Path):
    events = [{"ph": "X", "name": "engine_step", "ts": 100.0 * i, "dur": 90.0 if i == 0 else 30.0 + i, "pid": 1,
               "tid": 1} for i in range(5)]
    store = load_events(tmp_path, events)
    whole = analyse_steps(store)
    assert whole.run_start and whole.ttft_ns == 90_000 and whole.rest.count == 4
    mid = analyse_steps(store, time_range(store, 150_000))
    assert not mid.run_start and mid.ttft_ns is None and mid.first_ns == 32_000
    assert mid.rest.count == 3 and mid.rest.mean == pytest.approx((32 + 33 + 34) * 1000 / 3)
    assert summary_metrics(store, time_range(store, 150_000))["ttft_ns"] is None
    ins = compute_insights(store, time_range(store, 150_000))
    text = insights_text(ins)
    assert "prefill" not in text and "first step in the range" in text
    assert insights_dict(ins)["steps"]["ttft_ns"] is None and insights_dict(ins)["steps"]["first_ns"] == 32_000
    assert "prefill / time to first token" in insights_text(compute_insights(store))


def test_ttft_on_a_real_trace_against_raw_steps():
    path = STEPLOOP
    events = raw_events(path)
    origin = raw_origin(events)
    steps = sorted(raw_span_ns(origin, e) for e in events if e.get("ph") == "X" and e["name"] == "engine_step")
    store = load_trace(path)
    assert summary_metrics(store)["ttft_ns"] == steps[0][1] - steps[0][0]
    t0 = steps[3][0]  # a range that starts at the fourth step
    m = summary_metrics(store, time_range(store, t0))
    assert m["ttft_ns"] is None
    durs = [b - a for a, b in steps[3:]]
    assert m["step_mean_ns"] == pytest.approx(np.mean(durs), abs=1)
    assert main(["insights", str(path), "--range", f"{t0}ns:"]) == 0


# ---- phases through Python frames -------------------------------------------------------------------
def test_phases_below_python_frames_on_a_minimal_step(tmp_path: Path):
    py = {"cat": "python_function", "pid": 1, "tid": 1}
    op = {"cat": "cpu_op", "pid": 1, "tid": 1}
    events = []
    for k in range(2):
        base = 200.0 * k
        events += [
            {"ph": "X", "cat": "user_annotation", "name": "execute_model", "ts": base, "dur": 100.0, "pid": 1, "tid": 1},
            {"ph": "X", "name": "worker.py(10): execute_model", "ts": base + 1, "dur": 98.0, **py},
            {"ph": "X", "name": "aten::mm", "ts": base + 10, "dur": 30.0, **op},
            {"ph": "X", "name": "model.py(5): forward", "ts": base + 45, "dur": 45.0, **py},
            {"ph": "X", "name": "aten::softmax", "ts": base + 50, "dur": 30.0, **op},
        ]
    store = load_events(tmp_path, events)
    st = analyse_steps(store, regex="^execute_model$")
    assert [p.name for p in st.phases] == ["worker.py(10): execute_model"]
    assert {p.name: p.total_ns for p in st.op_phases} == {"aten::mm": 60_000, "aten::softmax": 60_000}
    assert st.op_unattributed_ns == 200_000 - 120_000
    text = insights_text(compute_insights(store, step_regex="^execute_model$"))
    assert "phases below the Python frames" in text and "aten::softmax" in text


def _raw_first_non_frames(events: list[dict], step_name: re.Pattern[str]) -> dict[str, int]:
    """Nesting by containment per CPU thread, in plain Python; below each step, the first slices that are not
    python_function frames, total ns by name."""
    origin = raw_origin(events)
    per_thread = defaultdict(list)
    device = DEVICE_CATS | {"gpu_user_annotation"}  # the step mirrored onto a stream is not the step
    for e in events:
        if e.get("ph") == "X" and e.get("dur", 0) > 0 and str(e.get("cat", "")).lower() not in device:
            a, b = raw_span_ns(origin, e)
            per_thread[(norm(e["pid"]), norm(e["tid"]))].append((a, -b, e["name"], e.get("cat")))
    out: dict[str, int] = defaultdict(int)
    for items in per_thread.values():
        items.sort()
        stack: list[tuple[int, str]] = []  # (end, "step" | "frame below a step" | "other")
        for a, nb, name, cat in items:
            b = -nb
            while stack and stack[-1][0] <= a:
                stack.pop()
            # The parent is the deepest open slice that fully contains this one.
            parent = next((entry for entry in reversed(stack) if entry[0] >= b), None)
            below_step = parent is not None and parent[1] in ("step", "frame below a step")
            if below_step and cat == "python_function":
                state = "frame below a step"
            elif below_step:
                out[name] += b - a
                state = "other"
            else:
                state = "step" if step_name.search(name) else "other"
            stack.append((b, state))
    return dict(out)


@pytest.mark.parametrize(("path", "regex"), [
    (STACK, r"modeling_llama\.py\(427\): forward"),  # Llama forward frames: their children are frames
    (QWEN, r"^ProfilerStep#\d+$"),  # a vLLM-image run with stacks: the step's children are frames
], ids=["llama-forward-frames", "qwen-profiler-step"])
def test_phases_below_python_frames_on_real_traces(path: Path, regex: str):
    store = load_trace(path)
    st = analyse_steps(store, regex=regex)
    assert st.count and st.phases and st.op_phases
    raw = _raw_first_non_frames(raw_events(path), re.compile(regex))
    got = {p.name: p for p in st.op_phases if p.total_ns > 0}
    assert set(got) == set(raw)
    for name, p in got.items():  # each slice's µs -> ns rounding may differ by 1 ns per end
        assert abs(p.total_ns - raw[name]) <= 2 * p.count, name
    d = insights_dict(compute_insights(store, step_regex=regex))
    assert {p["name"] for p in d["phases_below_python_frames"] if p["total_ns"] > 0} == set(raw)


# ---- GPU busy over two denominators; launch delay from call start and call end ----------------------
def test_busy_over_range_and_active_span_and_both_launch_delays(tmp_path: Path):
    def launch(ts, corr):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 5.0, "pid": 1, "tid": 1,
                "args": {"correlation": corr}}

    def kernel(ts, corr):
        return {"ph": "X", "cat": "kernel", "name": "k", "ts": ts, "dur": 100.0, "pid": 0, "tid": 7,
                "args": {"correlation": corr}}

    events = [launch(0.0, 1), kernel(100.0, 1), launch(250.0, 2), kernel(300.0, 2),
              {"ph": "X", "cat": "cpu_op", "name": "aten::idle", "ts": 0.0, "dur": 1000.0, "pid": 1, "tid": 1}]
    path = write_trace(tmp_path, events)
    store = load_trace(path, cache=False)
    g = compute_insights(store).gpu
    assert g.busy_pct == pytest.approx(20.0) and g.active_ns == 300_000
    assert g.busy_pct_of_active == pytest.approx(100 * 200_000 / 300_000)
    assert g.launch.mean == pytest.approx((100_000 + 50_000) / 2)
    assert g.launch_after_return.mean == pytest.approx((95_000 + 45_000) / 2)
    text = insights_text(compute_insights(store))
    assert "20.0% of the range" in text and "66.7% of the GPU-active span" in text
    assert "launch delay from call start: mean 75 µs" in text and "launch delay from call end (HTA's): mean 70 µs" in text
    d = insights_dict(compute_insights(store))["gpu"]
    assert d["busy_pct_of_active_span"] == pytest.approx(66.6667, abs=1e-3) and d["active_span_ns"] == 300_000
    assert d["launch_delay_from_call_start"]["mean_ns"] == 75_000
    assert d["launch_delay_from_call_end"]["mean_ns"] == 70_000
    m = {x["name"]: x for x in comparison_dict(compare(store, store))["metrics"]}
    assert m["gpu_busy_pct"]["label"] == "GPU busy (of the range)" and m["gpu_busy_pct"]["a"] == pytest.approx(20.0)
    assert m["gpu_busy_active_pct"]["a"] == pytest.approx(66.6667, abs=1e-3)
    assert m["launch_delay_mean_ns"]["a"] == 75_000 and m["launch_delay_from_end_mean_ns"]["a"] == 70_000


@pytest.mark.parametrize("path", [QWEN, MI250], ids=lambda p: p.name[:24])
def test_busy_denominators_and_launch_delays_on_real_traces(path: Path):
    """HTA's and TraceLens's figures, computed here from the raw JSON: busy / (last GPU end − first
    GPU start) per device, and the delay from the runtime call's end (paired by correlation)."""
    events = raw_events(path)
    origin = raw_origin(events)
    work = [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() in DEVICE_CATS]
    by_dev = defaultdict(list)
    for e in work:
        by_dev[norm(e["pid"])].append(raw_span_ns(origin, e))
    per_dev = [100 * union_length(iv) / (max(b for _, b in iv) - min(a for a, _ in iv)) for iv in by_dev.values()]
    g = compute_insights(load_trace(path)).gpu
    assert g.busy_pct_of_active == pytest.approx(np.mean(per_dev), abs=0.01)
    spans = [raw_span_ns(origin, e) for e in work]
    assert g.active_ns == pytest.approx(max(b for _, b in spans) - min(a for a, _ in spans), abs=2)
    runtime = {e["args"]["correlation"]: e for e in events
               if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    # as HTA: asynchronous launches only (cudaLaunchKernel, cudaMemcpyAsync …): a synchronous copy
    # (hipMemcpyWithStream) returns after its work, so "from its end" is no delay
    def synchronous(name: str) -> bool:
        return name.startswith(("cuda", "hip")) and ("Memcpy" in name or "Memset" in name) and "Async" not in name

    from_end = [(e["ts"] - runtime[c]["ts"] - runtime[c]["dur"]) * 1000 for e in work
                if (c := e.get("args", {}).get("correlation")) in runtime and not synchronous(runtime[c]["name"])]
    assert g.launch_after_return.count == len(from_end)
    assert g.launch_after_return.mean == pytest.approx(np.mean(from_end), abs=2)
    assert g.launch_after_return.max == pytest.approx(max(from_end), abs=2)


def test_each_stream_has_its_own_active_span(tmp_path: Path):
    from vtui.analysis.gpu.activity import analyse_gpu
    from vtui.load.trace import load_trace

    meta = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
            {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}]
    kernels = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": tid, "ts": ts, "dur": dur}
               for tid, ts, dur in ((7, 10, 5), (7, 40, 10), (8, 20, 2))]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": meta + kernels}))
    g = analyse_gpu(load_trace(path, cache=False))
    spans = sorted((b.active_ns, b.busy_ns) for b in g.streams)
    assert spans == [(2_000, 2_000), (40_000, 15_000)]  # stream 8: [20, 22]; stream 7: [10, 50]
    assert {round(b.busy_pct_of_active, 1) for b in g.streams} == {100.0, 37.5}


def test_a_python_thread_under_a_gpu_labelled_process_stays_a_cpu_thread():
    from vtui.load.trace import load_trace
    from vtui.store.tracks import GPU

    store = load_trace(FIXTURES / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    events = raw_events(FIXTURES / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    device = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
    cats = defaultdict(set)
    for e in events:
        if e.get("ph") == "X":
            cats[(norm(e["pid"]), norm(e["tid"]))].add(str(e.get("cat", "")).lower())
    for t in store.tracks:
        if t.kind in ("thread", GPU) and (t.pid, t.tid) in cats:
            assert (t.kind == GPU) == bool(cats[(t.pid, t.tid)] & device), (t.pid, t.tid, cats[(t.pid, t.tid)])
    assert any(t.kind == "thread" and t.pid == 0 for t in store.tracks)  # tqdm's monitor under pid 0 ("GPU 0")
