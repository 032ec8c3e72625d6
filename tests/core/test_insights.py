"""Insights checked against independent computations over the raw JSON (stdlib json, plain loops)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import (
    FIXTURES,
    GPU_CATS,
    MI250,
    QWEN,
    SHARED_TRACES,
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
from vtui.analysis.report.insights import compute_insights, summary_metrics
from vtui.analysis.steps.detect import analyse_steps
from vtui.analysis.steps.trends import analyse_trend
from vtui.load.trace import load_trace
from vtui.present.insights_json import insights_dict
from vtui.store.slicetime import time_range

GENERATED = SHARED_TRACES / "generated"


# Where ../shared is absent (CI), a trace with a copy in the repo is read from that copy.
IN_REPO = {"hf_llama_steploop.json.gz": STEPLOOP}


def _shared(name: str) -> Path:
    path = GENERATED / name if (GENERATED / name).exists() else SHARED_TRACES / "public" / name
    if not path.exists() and name in IN_REPO:
        path = IN_REPO[name]
    if not path.exists():
        pytest.skip(f"{name} is not in ../shared/traces")
    return path


# ---- steps and phases: the step loop trace ---------------------------------------------------
@pytest.fixture(scope="module")
def steploop():
    path = _shared("hf_llama_steploop.json.gz")
    return load_trace(path), raw_events(path)


def test_steploop_steps_match_raw_engine_steps(steploop):
    store, events = steploop
    origin = raw_origin(events)
    raw = sorted(raw_span_ns(origin, e) for e in events if e.get("ph") == "X" and e.get("name") == "engine_step")
    durs = np.array([b - a for a, b in raw], dtype=np.float64)
    st = analyse_steps(store)
    assert st.present and st.source == "known" and st.count == len(raw) == 32
    assert np.abs(st.durations - durs).max() <= 2  # ns rounding of µs floats
    rest = durs[1:]
    assert st.first_ns == pytest.approx(durs[0], abs=2)
    assert st.rest.median == pytest.approx(np.median(rest), abs=2)
    assert st.rest.p90 == pytest.approx(np.percentile(rest, 90), abs=2)
    assert st.rest.mean == pytest.approx(rest.mean(), abs=2)
    assert st.trend.slope_ns_per_step == pytest.approx(np.polyfit(np.arange(len(rest)), rest, 1)[0], abs=1)
    assert st.trend.slow_first == (durs[0] >= 3 * np.median(rest))  # the prefill: 52 ms vs 8 ms
    assert st.trend.slow_first


def test_steploop_phases_match_raw_children(steploop):
    store, events = steploop
    steps = [e for e in events if e.get("ph") == "X" and e.get("name") == "engine_step"]
    step_total = sum(round(e["dur"] * 1000) for e in steps)
    # Direct children by containment: X events inside a step that no other contained event encloses.
    per_name: dict[str, int] = defaultdict(int)
    in_first: dict[str, int] = defaultdict(int)  # time in the first step (the prefill)
    xs = [e for e in events if e.get("ph") == "X" and e.get("name") != "engine_step"]
    steps.sort(key=lambda e: e["ts"])
    for k, s in enumerate(steps):
        a, b = s["ts"], s["ts"] + s["dur"]
        inside = [e for e in xs if e["tid"] == s["tid"] and a <= e["ts"] and e["ts"] + e["dur"] <= b]
        inside.sort(key=lambda e: (e["ts"], -e["dur"]))
        end = -1.0
        for e in inside:
            if e["ts"] >= end:  # not inside the previous direct child
                per_name[e["name"]] += round(e["dur"] * 1000)
                in_first[e["name"]] += round(e["dur"] * 1000) if k == 0 else 0
                end = e["ts"] + e["dur"]
    st = analyse_steps(store)
    got = {p.name: p.total_ns for p in st.phases}
    assert set(got) == set(per_name) == {"schedule", "execute_model", "sample", "update_kv_cache"}
    for name, total in per_name.items():
        assert got[name] == pytest.approx(total, abs=64)
        phase = next(p for p in st.phases if p.name == name)
        assert phase.pct == pytest.approx(100 * total / step_total, abs=0.01)
        assert phase.count == 32
        assert phase.first_ns == pytest.approx(in_first[name], abs=2)
        assert phase.rest_mean_ns == pytest.approx((total - in_first[name]) / 31, abs=2)
    # Step time outside every phase: a few ms here (python glue between the phases), not zero.
    outside = step_total - sum(per_name.values())
    assert st.unattributed_ns == pytest.approx(outside, abs=64) and outside > 1_000_000


def test_steploop_range_keeps_steps_that_start_inside(steploop):
    store, _ = steploop
    st = analyse_steps(store)
    t0, t1 = int(st.starts[5]), int(st.starts[10])
    sub = analyse_steps(store, time_range(store, t0, t1))
    assert sub.count == 5 and sub.in_trace == 32
    assert sub.first_ns == st.durations[5]


def test_steploop_memory_matches_raw_memory_events(steploop):
    store, events = steploop
    mem = [e["args"] for e in events if e.get("name") == "[memory]"]
    ins = compute_insights(store)
    d = ins.memory.main
    assert d.device == "cpu" and d.events == len(mem)
    assert d.allocs == sum(1 for a in mem if a["Bytes"] > 0)
    assert d.frees == sum(1 for a in mem if a["Bytes"] < 0)
    assert d.peak_allocated == max(a["Total Allocated"] for a in mem)
    assert d.alloc_bytes == sum(a["Bytes"] for a in mem if a["Bytes"] > 0)


# ---- operators: KV cache vs no KV cache -------------------------------------------------------
def _raw_self_and_total(events: list[dict]) -> tuple[dict[str, int], dict[str, int]]:
    """Self and total ns per name over cpu_op/user_annotation X events, nesting by a plain stack."""
    origin = raw_origin(events)
    per_thread = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation", "python_function"):
            a, b = raw_span_ns(origin, e)
            per_thread[(norm(e["pid"]), norm(e["tid"]))].append((a, -b, e["name"], e["cat"]))
    self_ns: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for items in per_thread.values():
        items.sort()
        stack: list[list] = []  # [end, name, child time, cat]
        def close(entry):
            dur = entry[4]
            if entry[3] != "python_function":
                self_ns[entry[1]] += dur - entry[2]
        for a, neg_b, name, cat in items:
            b = -neg_b
            while stack and stack[-1][0] <= a:
                close(stack.pop())
            if stack:
                stack[-1][2] += b - a
            if cat != "python_function":
                total[name] += b - a
            stack.append([b, name, 0, cat, b - a])
        while stack:
            close(stack.pop())
    return self_ns, total


@pytest.mark.parametrize("name", ["hf_llama_kvcache.json.gz", "hf_llama_nocache.json.gz"])
def test_ops_match_raw_self_and_total(name: str):
    path = _shared(name)
    store, events = load_trace(path), raw_events(path)
    self_ns, total = _raw_self_and_total(events)
    ops = compute_insights(store, top=10).ops
    cats = {e["name"]: e["cat"] for e in events if e.get("ph") == "X"}
    threads = {(norm(e["pid"]), norm(e["tid"])) for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"}
    assert ops.threads == len(threads)
    for row in ops.by_self:
        assert cats[row.name] == "cpu_op", row.name  # annotations are ranked apart
        assert row.self_ns == pytest.approx(self_ns[row.name], rel=1e-5, abs=2 * row.count + 2), row.name  # children round too
        assert row.pct == pytest.approx(100 * row.self_ns / (store.span_ns * len(threads)))
        assert row.pct <= 100
    for row in ops.by_total:
        assert row.total_ns == pytest.approx(total[row.name], abs=2 * row.count + 2), row.name
    for row in ops.annotations:
        assert cats[row.name] in ("user_annotation", "gpu_user_annotation", "Trace"), row.name
        assert row.total_ns == pytest.approx(total[row.name], abs=2 * row.count + 2) or cats[row.name] != "user_annotation"
    operators = [n for n in self_ns if cats[n] == "cpu_op"]
    expected_top = sorted(operators, key=lambda n: -self_ns[n])[:3]
    assert [r.name for r in ops.by_self[:3]] == expected_top


def test_kvcache_vs_nocache_linear_layers():
    """Without the KV cache every step recomputes all positions: far more addmm time."""
    with_cache = compute_insights(load_trace(_shared("hf_llama_kvcache.json.gz")))
    without = compute_insights(load_trace(_shared("hf_llama_nocache.json.gz")))

    def addmm(ins):
        return next(r.total_ns for r in ins.ops.by_total + ins.ops.by_self if r.name == "aten::addmm")

    assert addmm(without) > 5 * addmm(with_cache)
    assert not with_cache.steps.present and not without.steps.present  # no step annotations in these
    assert not with_cache.gpu.present


# ---- GPU: Kineto traces ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", [QWEN, MI250], ids=lambda p: p.name)
def test_gpu_busy_memcpy_and_launch_delay_match_raw(path: Path):
    store, events = load_trace(path), raw_events(path)
    origin = raw_origin(events)
    gpu = [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() in GPU_CATS]
    busy = union_length([raw_span_ns(origin, e) for e in gpu])
    dur = {c: sum(round(e["dur"] * 1000) for e in gpu if e["cat"].lower() == c) for c in ("kernel", "gpu_memcpy", "gpu_memset")}
    g = compute_insights(store).gpu
    assert g.present and g.gpu_ops_in_range == len(gpu)
    assert g.busy_ns == pytest.approx(busy, abs=len(gpu))
    assert g.busy_pct == pytest.approx(100 * g.busy_ns / store.span_ns)
    assert g.kernel_ns == pytest.approx(dur["kernel"], abs=len(gpu))
    kernels_only = union_length([raw_span_ns(origin, e) for e in gpu if e["cat"].lower() == "kernel"])
    assert g.kernel_busy_pct == pytest.approx(100 * kernels_only / store.span_ns, abs=1e-4)
    work = sum(dur.values())
    assert g.memcpy_pct == pytest.approx(100 * dur["gpu_memcpy"] / work, abs=0.01)
    # Launch delay by correlation id: runtime call start -> GPU start.
    runtime = {e["args"]["correlation"]: e for e in events
               if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    delays = [(e["ts"] - runtime[e["args"]["correlation"]]["ts"]) * 1000 for e in gpu
              if e.get("args", {}).get("correlation") in runtime]
    assert g.launches_paired == len(delays) > 0
    assert g.launch.mean == pytest.approx(np.mean(delays), abs=2)
    assert g.launch.p90 == pytest.approx(np.percentile(delays, 90), abs=2)
    assert g.launch.max == pytest.approx(max(delays), abs=2)


def test_gpu_precision_classes_on_qwen():
    g = compute_insights(load_trace(QWEN)).gpu
    shares = {p.name: p.pct for p in g.precision}
    assert sum(shares.values()) == pytest.approx(100)
    assert shares["fp16/bf16"] > 50  # a bf16 model: sm90_xmma_gemm_bf16… and BFloat16 elementwise kernels
    events = raw_events(QWEN)
    bf16 = sum(e["dur"] for e in events if e.get("cat") == "kernel" and "bf16" in e["name"].lower())
    kern = sum(e["dur"] for e in events if e.get("cat") == "kernel")
    assert shares["fp16/bf16"] >= 100 * bf16 / kern - 0.01


def test_legacy_kineto_gpu_and_memory_without_totals():
    path = _shared("kineto__worker0.1623143089861.pt.trace.json.gz")
    store, events = load_trace(path), raw_events(path)
    origin = raw_origin(events)
    gpu = [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() in GPU_CATS]
    ins = compute_insights(store)
    assert ins.gpu.busy_ns == pytest.approx(union_length([raw_span_ns(origin, e) for e in gpu]), abs=len(gpu))
    memcpy = sum(e["dur"] for e in gpu if e["cat"] == "Memcpy") * 1000
    assert ins.gpu.memcpy_by_direction == {"HtoD": pytest.approx(memcpy, abs=len(gpu))}
    assert ins.steps.pattern == "ProfilerStep#N" and ins.steps.count == 6
    # [memory] has only Bytes here: the level is the running sum (ordered by time).
    mem = sorted((e["ts"], e["args"]["Bytes"]) for e in events
                 if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1)
    level = np.cumsum([b for _, b in mem])
    cuda = next(d for d in ins.memory.devices if d.device == "cuda:0")
    assert not cuda.absolute and cuda.peak_allocated == level.max()


def test_qwen_cuda_memory_peaks_match_raw():
    events = raw_events(QWEN)
    mem = [e["args"] for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1]
    d = compute_insights(load_trace(QWEN)).memory.main
    assert d.device == "cuda:0" and d.absolute
    assert d.peak_allocated == max(a["Total Allocated"] for a in mem)
    assert d.peak_reserved == max(a["Total Reserved"] for a in mem)


# ---- Python overhead ------------------------------------------------------------------------------
def test_python_frames_and_depth_on_stack_trace():
    events = raw_events(STACK)
    origin = raw_origin(events)
    py = sorted((raw_span_ns(origin, e) for e in events if e.get("cat") == "python_function" and e.get("ph") == "X"),
                key=lambda ab: (ab[0], -ab[1]))
    stack: list[int] = []
    deepest = 0
    for a, b in py:
        while stack and stack[-1] <= a:
            stack.pop()
        stack.append(b)
        deepest = max(deepest, len(stack))
    p = compute_insights(load_trace(STACK)).python
    assert p.present and p.frames == len(py)
    assert p.max_depth == deepest
    assert 0 < p.python_pct < 100


# ---- traces without steps / GPU / memory ------------------------------------------------------
@pytest.mark.parametrize("name", ["speedscope__simple-partial-trailing-comma.json", "kineto__before_fix_trace.json"])
def test_absent_sections_say_not_present(name: str):
    ins = compute_insights(load_trace(FIXTURES / name))
    d = insights_dict(ins)
    json.dumps(d)
    assert d["steps"]["present"] is False and d["steps"]["count"] == 0 and d["steps"]["durations_ns"] == []
    assert d["memory"]["present"] is False
    messages = [f["message"] for f in d["findings"]]
    if not ins.gpu.present:
        assert "no GPU activity in this trace" in messages
    assert any("[memory]" in m for m in messages)
    m = summary_metrics(load_trace(FIXTURES / name))
    assert m["step_count"] == 0 and m["ttft_ns"] is None and m["peak_allocated_bytes"] is None


def test_json_has_the_documented_keys():
    d = insights_dict(compute_insights(load_trace(QWEN)))
    assert {"pattern", "count", "durations_ns", "first_ns", "median_ns", "p90_ns", "trend", "slope_ns_per_step",
            "slow_first"} <= set(d["steps"])
    assert {"present", "busy_pct", "memcpy_pct"} <= set(d["gpu"])
    assert {"name", "self_ns", "total_ns", "pct"} <= set(d["ops"][0])
    assert {"kind", "severity", "message", "hint"} <= set(d["findings"][0])
    assert isinstance(d["phases"], list) and d["memory"]["present"] is True


# ---- detection on synthetic traces (names no fixture has) --------------------------------------
def _loop(names, durs_us, gap_us=10.0, tid=1, children=("prep", "run")):
    events, t = [], 0.0
    for name, d in zip(names, durs_us):
        events.append({"ph": "X", "name": name, "ts": t, "dur": d, "pid": 1, "tid": tid, "cat": "user_annotation"})
        events.append({"ph": "X", "name": children[0], "ts": t, "dur": d * 0.25, "pid": 1, "tid": tid})
        events.append({"ph": "X", "name": children[1], "ts": t + d * 0.25, "dur": d * 0.75, "pid": 1, "tid": tid})
        t += d + gap_us
    return events


def test_vllm_step_names_and_staircase(tmp_path: Path):
    durs = [5000.0] + [100.0 + 10 * i for i in range(30)]  # prefill, then +10 µs per step
    names = [f"execute_context_{1 if i == 0 else 0}({64 if i == 0 else 0})_generation_{0 if i == 0 else 8}({0 if i == 0 else 8})"
             for i in range(len(durs))]
    st = analyse_steps(load_trace(write_trace(tmp_path, _loop(names, durs))))
    assert st.source == "known" and st.count == 31
    assert st.trend.trend == "staircase" and st.trend.slope_ns_per_step == pytest.approx(10_000, rel=1e-6)
    assert st.trend.slow_first and {p.name for p in st.phases} == {"prep", "run"}


def test_generic_repeated_name_spike_and_user_regex(tmp_path: Path):
    durs = [1000.0] * 20
    durs[12] = 5000.0
    events = _loop(["tick"] * 20, durs) + [{"ph": "X", "name": "setup", "ts": -500.0, "dur": 100.0, "pid": 1, "tid": 1}]
    store = load_trace(write_trace(tmp_path, events))
    st = analyse_steps(store)
    assert st.source == "generic" and st.pattern == "repeated: tick" and st.count == 20
    assert st.trend.spikes == [12] and st.trend.trend == "spiky" and not st.trend.slow_first
    assert analyse_steps(store, regex="^run$").count == 20  # the user's regex wins
    assert not analyse_steps(store, regex="^nothing$").present


def test_annotations_mirrored_on_gpu_are_not_steps(tmp_path: Path):
    events = _loop([f"ProfilerStep#{i}" for i in range(4)], [100.0] * 4)
    # The GPU stream mirrors more of them (5): counting by track alone would pick the stream.
    events += [{"ph": "X", "name": f"ProfilerStep#{i}", "ts": 5.0 + 110 * i, "dur": 90.0, "pid": 0, "tid": 7,
                "cat": "gpu_user_annotation"} for i in range(5)]
    events += [{"ph": "X", "name": "k", "ts": 6.0 + 110 * i, "dur": 50.0, "pid": 0, "tid": 7, "cat": "kernel"}
               for i in range(5)]
    store = load_trace(write_trace(tmp_path, events))
    st = analyse_steps(store)
    assert st.count == 4 and store.tracks[st.track].kind == "thread"
    assert np.all(st.durations == 100_000)


def test_trend_verdicts():
    starts = np.arange(10, dtype=np.int64) * 1000
    flat = analyse_trend(starts, starts + 900)
    assert flat.trend == "flat" and flat.gap_total_ns == 9 * 100 and not flat.slow_first
    few = analyse_trend(starts[:3], starts[:3] + 900)
    assert few.trend == "n/a"


def test_gpu_track_without_kineto_categories_and_engine_steps_inside_one_profiler_step(tmp_path: Path):
    """Another producer: a GPU process by label, kernels without categories, an annotation around them."""
    events = [{"ph": "M", "name": "process_labels", "pid": 9, "args": {"labels": "GPU 0"}},
              {"ph": "X", "name": "ProfilerStep#1", "ts": 0.0, "dur": 1000.0, "pid": 1, "tid": 1, "cat": "user_annotation"},
              {"ph": "X", "name": "annot", "ts": 0.0, "dur": 500.0, "pid": 9, "tid": 3}]
    events += [{"ph": "X", "name": "my_gemm", "ts": 10.0 + 100 * i, "dur": 40.0, "pid": 9, "tid": 3} for i in range(4)]
    events += [{"ph": "X", "name": "Memcpy HtoD", "ts": 700.0, "dur": 100.0, "pid": 9, "tid": 3}]
    events += [{"ph": "X", "name": "engine_step", "ts": 1.0 + 200 * i, "dur": 150.0, "pid": 1, "tid": 1} for i in range(4)]
    store = load_trace(write_trace(tmp_path, events))
    g = compute_insights(store).gpu
    assert g.present and g.kernel_ns == 4 * 40_000 and g.memcpy_ns == 100_000
    assert g.busy_ns == 4 * 40_000 + 100_000  # the annotation around the kernels is not work
    assert g.memcpy_by_direction == {"HtoD": 100_000}
    st = analyse_steps(store)
    assert st.pattern == "engine_step" and st.count == 4  # more steps than the one ProfilerStep around them


def test_idle_split_launch_delay_and_sync_on_a_synthetic_kineto_trace(tmp_path: Path):
    """Kernel A runs 0–100 µs; B was launched at 50 µs (queued) and starts at 120 (gap 20: queued);
    C is launched at 300 µs, after the GPU went idle at 200, and starts at 310 (gap 110: 100 waiting
    on the CPU, then 10 queued after the call)."""
    def launch(ts, corr):
        return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 5.0, "pid": 1, "tid": 1,
                 "args": {"correlation": corr}},
                {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "ts": ts, "pid": 1, "tid": 1}]

    def kernel(ts, dur, corr, name):
        return [{"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": 7,
                 "args": {"correlation": corr}},
                {"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": corr, "ts": ts, "pid": 0, "tid": 7}]

    events = launch(0.0, 1) + launch(50.0, 2) + launch(300.0, 3)
    events += kernel(0.0, 100.0, 1, "ampere_sgemm_128x64_nn") + kernel(120.0, 80.0, 2, "ampere_bf16_s16816gemm")
    events += kernel(310.0, 90.0, 3, "ncclKernel_AllReduce")
    events += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 310.0, "dur": 90.0,
                "pid": 1, "tid": 1}]
    store = load_trace(write_trace(tmp_path, events))
    g = compute_insights(store).gpu
    assert g.launches_paired == 3
    assert (g.idle_queued_ns, g.idle_cpu_launch_ns, g.idle_dependency_ns, g.idle_edges_ns) == (30_000, 100_000, 0, 0)
    assert g.launch.max == 70_000 and g.launch.mean == pytest.approx((0 + 70_000 + 10_000) / 3)
    assert {p.name: p.total_ns for p in g.precision} == {"fp32": 100_000, "fp16/bf16": 80_000, "communication": 90_000}
    ops = compute_insights(store).ops
    assert (ops.sync.count, ops.sync.total_ns) == (1, 90_000)


def test_cache_hits_and_misses_from_names_and_args(tmp_path: Path):
    events = [{"ph": "i", "name": "prefix_cache_hit", "ts": float(i), "pid": 1, "tid": 1, "s": "t"} for i in range(3)]
    events += [{"ph": "X", "name": "kv_cache_lookup", "ts": 10.0 + i, "dur": 0.5, "pid": 1, "tid": 1,
                "args": {"result": "miss"}} for i in range(1)]
    events += [{"ph": "X", "name": "block_cache_evict", "ts": 20.0, "dur": 1.0, "pid": 1, "tid": 1}]
    c = compute_insights(load_trace(write_trace(tmp_path, events))).caches
    assert (c.hits, c.misses, c.evictions, c.events) == (3, 1, 1, 5)
    assert c.hit_rate == pytest.approx(75.0)


def test_memory_events_with_odd_args_are_read_one_by_one(tmp_path):
    """The batch decode of [memory] args falls back to one event at a time when an args value is
    not an object; the events that are well formed still count (checked by hand)."""
    from vtui.analysis.gpu.memory import analyse_memory

    mem = [{"Bytes": 100, "Total Allocated": 100, "Device Type": 1, "Device Id": 0},
           [1, 2, 3],
           {"Bytes": "50", "Total Allocated": 150, "Total Reserved": 200, "Device Type": 1, "Device Id": 0},
           {"Bytes": -100, "Total Allocated": 50, "Device Type": 1, "Device Id": 0},
           {"Bytes": 7, "Device Type": [1], "Device Id": 0}]  # a device type that is no number
    events = [{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": i, "args": a} for i, a in enumerate(mem)]
    events.append({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 10})
    report = analyse_memory(load_events(tmp_path, events))
    dev = next(d for d in report.devices if d.device == "cuda:0")
    assert (dev.allocs, dev.frees, dev.peak_allocated, dev.alloc_bytes) == (2, 1, 150, 150)
    assert [d.device for d in report.devices] == ["?:0", "cuda:0"]
