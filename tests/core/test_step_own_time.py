"""Steps whose GPU work outlasts them while the CPU runs ahead: each step's own time starts where the
previous steps' work ended, so a GPU-bound loop whose queue grows is flat, not a staircase, and
its step time is the GPU's time per step (plain Python over the events is the reference)."""

from __future__ import annotations

import json
import statistics

from vtui.analysis.report.insights import compute_insights
from vtui.analysis.steps.detect import analyse_steps
from vtui.load.trace import load_trace

CPU, GPU = {"pid": 500, "tid": 500}, {"pid": 0, "tid": 7}


def _events(steps: int = 10, cpu_us: float = 500.0, kernels: int = 40, kernel_us: float = 30.0) -> list[dict]:
    """A worker's ``execute_model`` annotations every 520 µs, each launching 40 kernels of 30 µs:
    1.2 ms of GPU work per step, so the GPU queue grows by ~700 µs a step."""
    ev: list[dict] = [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}]
    t, gpu_free, corr = 100.0, 0.0, 0
    for _ in range(steps):
        ev.append({"ph": "X", "cat": "user_annotation", "name": "execute_model", "ts": t, "dur": cpu_us, **CPU})
        for j in range(kernels):
            corr += 1
            call = t + 10 + j * 10
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": call, "dur": 4.5, **CPU,
                       "args": {"correlation": corr}})
            k_ts = max(call + 5, gpu_free + 1)
            ev.append({"ph": "X", "cat": "kernel", "name": "void engine::layer<bf16>", "ts": k_ts, "dur": kernel_us,
                       **GPU, "args": {"correlation": corr, "stream": 7}})
            gpu_free = k_ts + kernel_us
        t += cpu_us + 20
    return ev


def _plain(ev: list[dict]) -> tuple[list[float], list[float]]:
    """Per step: its start and the end of the kernels its launch calls launched (µs)."""
    steps = sorted((e for e in ev if e["name"] == "execute_model"), key=lambda e: e["ts"])
    kernel_end = {e["args"]["correlation"]: e["ts"] + e["dur"] for e in ev if e.get("cat") == "kernel"}
    starts, ends = [], []
    for s in steps:
        mine = [kernel_end[e["args"]["correlation"]] for e in ev if e["name"] == "cudaLaunchKernel"
                and s["ts"] <= e["ts"] < s["ts"] + s["dur"]]
        starts.append(s["ts"])
        ends.append(max(s["ts"] + s["dur"], *mine))
    return starts, ends


def test_a_gpu_bound_loop_with_the_cpu_ahead_is_flat_at_the_gpus_time(tmp_path):
    ev = _events()
    path = tmp_path / "ahead.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    store = load_trace(path, cache=False)
    st = analyse_steps(store)
    starts, ends = _plain(ev)
    assert st.count == len(starts)
    # the shape: every step after the first begins while the one before is still on the GPU
    assert all(s < e for s, e in zip(starts[1:], ends[:-1]))
    own = [ends[0] - starts[0]] + [e - max(s, max(ends[:i + 1])) for i, (s, e) in enumerate(zip(starts[1:], ends[1:]))]
    assert [round(d) for d in (st.durations / 1000).tolist()] == [round(d) for d in own]
    gpu_per_step = 40 * (30 + 1)  # back to back on the GPU, 1 µs apart
    assert statistics.median(own[1:]) == gpu_per_step
    assert st.rest is not None and round(st.rest.median / 1000) == gpu_per_step
    assert st.steps_per_s is not None and round(st.steps_per_s) == round(1e6 / gpu_per_step)
    assert st.trend is not None and st.trend.trend == "flat"
    assert (st.queued > 0).sum() == len(starts) - 1
    kinds = {f.kind for f in compute_insights(store).findings}
    assert "staircase" not in kinds and "spikes" not in kinds


def test_steps_that_do_not_overlap_keep_their_start(tmp_path):
    """The CPU waits for each step's GPU work (no overlap): a step's time is start to end, as before."""
    ev = _events(steps=5, cpu_us=1400.0)
    path = tmp_path / "paced.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    st = analyse_steps(load_trace(path, cache=False))
    starts, ends = _plain(ev)
    assert all(s >= e for s, e in zip(starts[1:], ends[:-1]))
    assert [round(d) for d in (st.durations / 1000).tolist()] == [round(e - s) for s, e in zip(starts, ends)]
    assert not st.queued.any()


def test_shared_resnet_training_steps_are_their_own_time(shared_traces):
    """HTA's V100 ResNet rank 0: each ProfilerStep's GPU work runs ~95 ms past its annotation, into the
    next step. Plain Python over the raw events: a step ends at its last launched kernel's end; its own
    time starts at the previous step's end."""
    import gzip

    path = shared_traces / "public" / "hta__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    ev = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    steps = sorted((e for e in xs if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
    device_end: dict = {}
    for e in xs:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "correlation" in e.get("args", {}):
            c = e["args"]["correlation"]
            device_end[c] = max(device_end.get(c, 0.0), e["ts"] + e["dur"])
    calls = [(e["ts"], e["args"]["correlation"]) for e in xs if e.get("cat") == "cuda_runtime"
             and e.get("args", {}).get("correlation") in device_end]
    ends = []
    for s in steps:
        mine = [device_end[c] for t, c in calls if s["ts"] <= t < s["ts"] + s["dur"]]
        ends.append(max([s["ts"] + s["dur"], *mine]))
    own = [ends[0] - steps[0]["ts"]] + [ends[i] - max(steps[i]["ts"], max(ends[:i])) for i in range(1, len(steps))]
    st = analyse_steps(load_trace(path))
    assert st.count == len(steps) == 5
    assert all(abs(d / 1000 - o) < 1.0 for d, o in zip(st.durations.tolist(), own))  # µs floats vs exact ns
    assert 95_000 < statistics.median(own[1:]) < 96_000  # µs: not the 185 ms from each step's start
    assert st.steps_per_s is not None and round(st.steps_per_s, 1) == round(1e6 / statistics.fmean(own[1:]), 1)
