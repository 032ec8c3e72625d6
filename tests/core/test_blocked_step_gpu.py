"""A step that is mostly one blocking call: the host waited either for queued device work (the GPU
busy meanwhile: the step's time is that work) or for something the stream was held behind, the
GPU idle (SGLang's prefill: 493 ms in hipMemcpyWithStream behind a hipStreamWaitEvent). The
headline says which, with the GPU's busy time inside the call checked by plain Python."""

from __future__ import annotations

import json

from vtui.analysis.report.insights import compute_insights
from vtui.load.trace import load_trace

CPU = {"pid": 251, "tid": 251}


def _trace(held: bool) -> dict:
    """One step[EXTEND …] annotation; a stream wait, a kernel launched behind it, then a blocking
    hipMemcpyWithStream of 120 B. ``held``: the stream is released only 400 ms later (the GPU idle
    meanwhile); else 40 kernels of 10 ms run back to back before the copy."""
    ev: list[dict] = [{"ph": "M", "name": "process_labels", "pid": 3, "tid": 0, "args": {"labels": "GPU 0"}},
                      {"ph": "X", "cat": "cuda_runtime", "name": "hipStreamWaitEvent", "ts": 100, "dur": 10, **CPU}]
    corr, gpu_at = 0, (400_120.0 if held else 130.0)
    for i in range(1 if held else 40):
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "ts": 115 + i, "dur": 1, **CPU,
                   "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": "resolve_future_token_ids", "ts": gpu_at,
                   "dur": 7 if held else 10_000, "pid": 3, "tid": 1, "args": {"correlation": corr, "stream": 1}})
        gpu_at += 7 if held else 10_000
    corr += 1
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "ts": 170, "dur": gpu_at + 6 - 170, **CPU,
               "args": {"correlation": corr}})
    ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Host -> Device)", "ts": gpu_at, "dur": 4.7,
               "pid": 3, "tid": 1, "args": {"correlation": corr, "stream": 1}})
    ev.append({"ph": "X", "cat": "user_annotation", "name": "step[EXTEND bs=15 toks=15360]", "ts": 0,
               "dur": gpu_at + 30, **CPU})
    return {"traceEvents": ev}


def _busy_inside(ev: list[dict], name: str) -> float:
    """Plain Python: device busy time (µs) inside the blocking call."""
    call = next(e for e in ev if e["name"] == name)
    lo, hi = call["ts"], call["ts"] + call["dur"]
    return sum(max(0.0, min(e["ts"] + e["dur"], hi) - max(e["ts"], lo)) for e in ev if e.get("pid") == 3 and e["ph"] == "X")


def _headline(tmp_path, held: bool):
    trace = _trace(held)
    path = tmp_path / f"{held}.json"
    path.write_text(json.dumps(trace))
    found = compute_insights(load_trace(path, cache=False)).findings
    assert found[0].kind == "step_blocked"
    return trace["traceEvents"], found[0]


def test_a_copy_held_behind_a_stream_wait_is_no_queue_of_work(tmp_path):
    ev, f = _headline(tmp_path, held=True)
    busy = _busy_inside(ev, "hipMemcpyWithStream")
    assert busy < 20  # µs of 400 ms: the shape
    assert f"the GPU was busy {round(busy, 3):g} µs of that time" in f.message
    assert f.hint.startswith("the GPU sat idle") and "queued before it" not in f.hint


def test_a_copy_waiting_for_queued_kernels_is_their_time(tmp_path):
    ev, f = _headline(tmp_path, held=False)
    busy = _busy_inside(ev, "hipMemcpyWithStream")
    assert busy > 390_000  # µs: the GPU ran the 40 kernels while the host waited
    assert f"the GPU was busy {busy / 1000:.3f} ms of that time" in f.message
    assert "queued before it" in f.hint
