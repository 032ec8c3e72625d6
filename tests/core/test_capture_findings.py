"""A trace that captures CUDA graphs: the launches made during capture run nothing, so the GPU's
busy / idle / launch findings (and their "use CUDA graphs" advice) would judge a GPU that was never
asked to work. One finding says so instead; the twin that runs the same launches keeps them."""

from __future__ import annotations

import json

from vtui.analysis.report.insights import compute_insights
from vtui.load.trace import load_trace

CPU = {"pid": 10, "tid": 10}


def _trace(captured: bool) -> dict:
    """Three warm-up kernels that run, then 60 launches ~1 ms apart: inside cudaStreamBeginCapture …
    cudaStreamEndCapture (no device work recorded) or, in the twin, run as they are launched."""
    ev: list[dict] = [{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}]
    corr = 0

    def launch(ts: float, runs: bool) -> None:
        nonlocal corr
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 5, **CPU,
                   "args": {"correlation": corr}})
        if runs:
            ev.append({"ph": "X", "cat": "kernel", "name": "void model::layer<bf16>", "ts": ts + 8, "dur": 20,
                       "pid": 0, "tid": 7, "args": {"correlation": corr, "stream": 7}})

    for i in range(3):
        launch(100 + 50 * i, True)
    t = 1_000.0
    if captured:
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamBeginCapture", "ts": t, "dur": 3, **CPU})
    for i in range(60):
        launch(t + 10 + 1_000 * i, not captured)
    if captured:
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamEndCapture", "ts": t + 61_000, "dur": 3, **CPU})
    return {"traceEvents": ev}


def _findings(tmp_path, captured: bool):
    path = tmp_path / f"{captured}.json"
    trace = _trace(captured)
    path.write_text(json.dumps(trace))
    return trace, compute_insights(load_trace(path, cache=False)).findings


def test_a_capture_trace_has_no_launch_bound_advice(tmp_path):
    trace, found = _findings(tmp_path, captured=True)
    ev = trace["traceEvents"]
    begin = next(e["ts"] for e in ev if e["name"] == "cudaStreamBeginCapture")
    end = next(e["ts"] for e in ev if e["name"] == "cudaStreamEndCapture")
    calls = [e for e in ev if e["name"] == "cudaLaunchKernel"]
    inside = [e for e in calls if begin <= e["ts"] <= end]
    ran = [e for e in ev if e.get("cat") == "kernel"]
    assert (len(inside), len(calls), len(ran)) == (60, 63, 3)
    kinds = [f.kind for f in found]
    assert kinds.count("graph_capture") == 1
    capture = found[kinds.index("graph_capture")]
    assert f"{len(inside)} of {len(calls)} launch calls" in capture.message and f"the {len(ran)} device ops" in capture.message
    assert not {"gpu_busy", "gpu_waits_cpu", "launch_delay"} & set(kinds)
    assert not any("CUDA graphs" in f.hint or "capture the step" in f.hint for f in found)


def test_the_same_launches_run_keep_the_gpu_findings(tmp_path):
    _, found = _findings(tmp_path, captured=False)
    kinds = {f.kind for f in found}
    assert "graph_capture" not in kinds and "gpu_busy" in kinds
