"""The first device work of a trace starting long after its launch on an idle device: work from
before the profiler started, or a clock offset. The trace cannot tell which; a step's time to its
GPU end takes the wait as its own, so health says so (the shared vLLM replay: 7.8 ms)."""

from __future__ import annotations

from tests.core.test_health import _health, _keys, _loop
from tests.helpers import SHARED_TRACES, raw_events
from vtui.analysis.health.report import analyse_health
from vtui.load.trace import load_trace


def _late_first(ev: list[dict]) -> float:
    """Plain Python: the first kernel's start − its launch call's start (µs)."""
    calls = {e["args"]["correlation"]: e["ts"] for e in ev if e.get("cat") == "cuda_runtime" and "args" in e}
    work = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["args"].get("correlation") in calls]
    first = min(work, key=lambda e: e["ts"])
    return first["ts"] - calls[first["args"]["correlation"]]


def test_a_replay_whose_first_work_waits_on_an_idle_device(tmp_path):
    """vLLM-like: the step launches 6 ops within 600 µs, the GPU starts the first 8 ms later and
    runs them back to back (one late start, then queueing: too little for a clock-offset estimate)."""
    ev = _loop(n=6, gap=100.0, delay=10.0, kdur=900.0)
    kernels = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    t = kernels[0]["ts"] + 8_000.0
    for k in kernels:
        k["ts"], t = t, t + k["dur"] + 2.0
    late = _late_first(ev)
    assert late > 1_000  # µs: the shape
    keys = _keys(_health(tmp_path, ev))
    assert keys.get("clock.first_work_late") == "warn" and "clock.offset" not in keys
    item = next(i for i in _health(tmp_path, ev).items if i.key == "clock.first_work_late")
    assert item.detail["late_ns"] == round(late * 1000)
    assert {"ttft", "tpot"} <= set(item.doubts) and item.examples[0].text.endswith("gemm_kernel")


def test_a_first_kernel_that_starts_promptly_is_fine(tmp_path):
    ev = _loop(n=6, gap=100.0, delay=10.0, kdur=900.0)  # queued behind each other, the first on time
    assert _late_first(ev) < 1_000
    assert "clock.first_work_late" not in _keys(_health(tmp_path, ev))


def test_the_shared_vllm_replay():
    path = SHARED_TRACES / "public" / "tracelens__vllm_decode_full_graph_execution.json.gz"
    if not path.exists():
        import pytest

        pytest.skip(f"{path} absent (../shared not here)")
    late = _late_first(raw_events(path))
    item = next(i for i in analyse_health(load_trace(path)).items if i.key == "clock.first_work_late")
    assert abs(item.detail["late_ns"] - late * 1000) < 1 and 7_000 < late < 8_000
