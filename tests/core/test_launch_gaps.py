"""GPU idle time waiting for the CPU: launch-bound only when the gaps are launch-sized. Gaps of
milliseconds are the host busy with something else, which fusion or CUDA graphs do not remove."""

from __future__ import annotations

import json

from vtui.analysis.report.insights import compute_insights
from vtui.load.trace import load_trace

CPU = {"pid": 10, "tid": 10}


def _trace(bursts: int, per_burst: int, every_us: float, pause_us: float) -> dict:
    """``bursts`` × ``per_burst`` launches of 5 µs kernels, one every ``every_us``; ``pause_us`` of
    host work (a Python data step, no launch) between bursts."""
    ev: list[dict] = [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}]
    t, corr = 100.0, 0
    for _ in range(bursts):
        for _ in range(per_burst):
            corr += 1
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t, "dur": 4, **CPU,
                       "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": "void elementwise<bf16>", "ts": t + 6, "dur": 5,
                       "pid": 0, "tid": 7, "args": {"correlation": corr, "stream": 7}})
            t += every_us
        if pause_us:
            ev.append({"ph": "X", "cat": "cpu_op", "name": "load_next_batch", "ts": t, "dur": pause_us, **CPU})
            t += pause_us
    return {"traceEvents": ev}


def _cpu_wait_gaps(trace: dict) -> list[float]:
    """Plain Python: per gap between consecutive kernels, the part before the next launch call."""
    ev = trace["traceEvents"]
    kernels = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    call = {e["args"]["correlation"]: e["ts"] for e in ev if e.get("name") == "cudaLaunchKernel"}
    out = []
    for a, b in zip(kernels, kernels[1:]):
        end = a["ts"] + a["dur"]
        wait = min(call[b["args"]["correlation"]], b["ts"]) - end
        if wait > 0:
            out.append(wait)
    return out


def _gpu_waits_cpu(tmp_path, trace: dict):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    found = {f.kind: f for f in compute_insights(load_trace(path, cache=False)).findings}
    return found["gpu_waits_cpu"]


def test_launch_sized_gaps_are_launch_bound(tmp_path):
    trace = _trace(bursts=1, per_burst=400, every_us=25.0, pause_us=0.0)
    gaps = _cpu_wait_gaps(trace)
    assert max(gaps) < 50  # µs: the shape, a kernel every 25 µs
    f = _gpu_waits_cpu(tmp_path, trace)
    assert f"over {len(gaps):,} gaps" in f.message
    assert f.hint.startswith("launch-bound")


def test_millisecond_gaps_are_host_work_not_launch_cost(tmp_path):
    trace = _trace(bursts=20, per_burst=5, every_us=25.0, pause_us=5_000.0)
    gaps = _cpu_wait_gaps(trace)
    mean_us = sum(gaps) / len(gaps)
    assert mean_us > 100  # the shape: few launches, long host pauses
    f = _gpu_waits_cpu(tmp_path, trace)
    assert f"over {len(gaps):,} gaps" in f.message
    assert "launch-bound" not in f.hint and "host was busy elsewhere" in f.hint
    assert f"in {sum(1 for x in gaps if x >= 1000)} longer" in f.message  # the pauses, each over 1 ms


def test_launch_delay_from_call_end_leaves_out_synchronous_calls(tmp_path):
    """HTA's delay from the call's end means nothing for a synchronous cudaMemcpy (it returns after its
    copy: a negative 'delay' of the copy's length); it is taken over the asynchronous launches only."""
    from vtui.analysis.gpu.activity import analyse_gpu

    ev: list[dict] = [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}]
    corr, t = 0, 100.0
    for _ in range(5):
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpy", "ts": t, "dur": 20_000, **CPU,
                   "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": t + 100,
                   "dur": 19_800, "pid": 0, "tid": 7, "args": {"correlation": corr, "stream": 7}})
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 20_010, "dur": 4, **CPU,
                   "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": "saxpy", "ts": t + 20_016, "dur": 50, "pid": 0, "tid": 7,
                   "args": {"correlation": corr, "stream": 7}})
        t += 30_000
    path = tmp_path / "sync.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    g = analyse_gpu(load_trace(path, cache=False))
    call = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime"}
    after = [e["ts"] - (call[e["args"]["correlation"]]["ts"] + call[e["args"]["correlation"]]["dur"])
             for e in ev if e.get("cat") == "kernel"]  # plain Python: the asynchronous launches
    assert g.launch_after_return is not None and g.launch_after_return.count == len(after) == 5
    assert g.launch_after_return.mean == round(sum(after) / len(after) * 1000)
    assert g.launch is not None and g.launch.count == 10
    f = next(f for f in compute_insights(load_trace(path, cache=False)).findings if f.kind == "launch_delay")
    assert "5 synchronous calls left out" in f.message
