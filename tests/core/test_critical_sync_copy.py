"""The critical path through a synchronous copy (``cudaMemcpy``, ``hipMemcpyWithStream``): the call
enqueues the copy when it starts and returns after it, so the copy waits behind the stream's
earlier work, and the host's blocked time is that work's, not CPU time."""

from __future__ import annotations

import json

from tests.core.test_critical import Builder
from tests.core.test_critical_batch import assert_same_as_reference
from vtui.analysis.steps.detect import analyse_steps
from vtui.analysis.why.critical import analyse_critical
from vtui.load.trace import load_trace


def _decode_steps_with_item(b: Builder, call: str, steps: int = 3) -> list[tuple[float, float, float]]:
    """SGLang-like decode steps: 20 kernels launched every 5 µs run 30 µs each back to back, then
    ``.item()`` copies the next token ids to the host with a synchronous copy queued behind them.
    Returns (step start, step end, copy end) per step."""
    out = []
    t = 0.0
    for _ in range(steps):
        g = t + 10
        for i in range(20):
            b.launch(t + 5 + 5 * i, "decode_layer_kernel", g, 30)
            g += 30
        c = t + 5 + 5 * 20
        b.corr += 1
        b.cpu("aten::_local_scalar_dense", c, g + 4 + 3 - c)
        b.cpu(call, c + 1, g + 4 + 1 - (c + 1), cat="cuda_runtime", correlation=b.corr)
        b.events.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "ts": g, "dur": 4,
                         "pid": 0, "tid": 7, "args": {"correlation": b.corr, "stream": 7}})
        end = g + 4 + 5
        b.cpu("step[DECODE bs=8]", t, end - t, cat="user_annotation")
        out.append((t, end, g + 4))
        t = end + 40
    return out


def _plain(events: list[dict], lo: float, hi: float) -> tuple[float, float]:
    """Device time inside [lo, hi] and the CPU time before the first device work starts, by plain
    Python over the events."""
    dev = [e for e in events if e.get("pid") == 0 and e.get("ph") == "X" and lo <= e["ts"] <= hi]
    return sum(e["dur"] for e in dev), min(e["ts"] for e in dev) - lo


def test_a_blocking_copy_queued_behind_kernels_is_the_gpus_time(tmp_path):
    for call in ("cudaMemcpy", "hipMemcpyWithStream"):
        b = Builder()
        spans = _decode_steps_with_item(b, call)
        path = tmp_path / f"{call}.json"
        path.write_text(json.dumps({"traceEvents": b.events}))
        store = load_trace(path, cache=False)
        steps = analyse_steps(store)
        assert steps.count == 3
        report = analyse_critical(store, steps.rows)
        assert [st.bound for st in report.steps] == ["gpu"] * 3
        for st, (lo, hi, _copy_end) in zip(report.steps, spans):
            device_us, lead_us = _plain(b.events, lo, hi)
            assert st.gpu_ns == round(device_us * 1000)  # 20 kernels and the copy: all on the path
            call_end = max(e["ts"] + e["dur"] for e in b.events if e["name"] == call and lo <= e["ts"] <= hi)
            # the first launch and the return after the copy: never the 500+ µs the host sat blocked
            assert st.cpu_ns <= round((lead_us + hi - call_end) * 1000)
            assert st.cpu_ns + st.gpu_ns + st.comm_ns + st.wait_ns == st.end - st.start
            assert st.top[0][0] == "gpu"
        assert assert_same_as_reference(store) == 3  # the batched walk agrees with the step-by-step one


def test_a_blocking_copy_on_an_idle_stream_waits_from_its_call(tmp_path):
    """No queue ahead of the copy: the path is CPU up to the call, then the copy's launch wait."""
    b = Builder()
    b.cpu("step[DECODE bs=8]", 0, 200, cat="user_annotation")
    b.cpu("aten::index_select", 5, 50)
    b.corr += 1
    b.cpu("cudaMemcpy", 60, 130, cat="cuda_runtime", correlation=b.corr)
    b.events.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 150, "dur": 35,
                     "pid": 0, "tid": 7, "args": {"correlation": b.corr, "stream": 7}})
    path = tmp_path / "idle.json"
    path.write_text(json.dumps({"traceEvents": b.events}))
    store = load_trace(path, cache=False)
    steps = analyse_steps(store)
    (st,) = analyse_critical(store, steps.rows).steps
    assert st.gpu_ns == 35_000
    assert st.cpu_ns == 60_000 + 10_000  # to the call's start, and from the call's return to the step's end
    assert st.wait_ns == 90_000 + 5_000  # the call's start to the copy's start; the copy's end to the return
