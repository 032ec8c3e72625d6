"""OS / libc waits are never steps, whatever the profiler calls their category: a helper thread's
regular ``pthread_cond_wait`` (Nsight, perf, a hand-made tracer) is a thread waiting."""

from __future__ import annotations

import json

import pytest

from vtui.analysis.report.insights import compute_insights
from vtui.analysis.steps.detect import analyse_steps
from vtui.load.trace import load_trace


def _trace(wait: str, cat: str = "os_runtime") -> dict:
    """A main thread with one long loop and a GPU kernel every 200 µs; a pool thread that sits in
    ``wait`` 50 times (190 µs each)."""
    ev: list[dict] = [{"ph": "M", "name": "thread_name", "pid": 300, "tid": 301, "args": {"name": "pt_threadpool"}},
                      {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
                      {"ph": "X", "cat": "user_annotation", "name": "main_loop", "ts": 100, "dur": 10_000, "pid": 300, "tid": 300}]
    for j in range(50):
        t = 100 + 200 * j
        ev.append({"ph": "X", "cat": cat, "name": wait, "ts": t, "dur": 190, "pid": 300, "tid": 301})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 1, "dur": 4, "pid": 300, "tid": 300,
                   "args": {"correlation": j + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "saxpy_kernel", "ts": t + 8, "dur": 50, "pid": 0, "tid": 7,
                   "args": {"correlation": j + 1, "stream": 7}})
    return {"traceEvents": ev}


@pytest.mark.parametrize("wait", ["pthread_cond_wait", "__pthread_cond_timedwait", "futex", "epoll_wait",
                                  "sem_wait", "nanosleep", "pthread_cond_wait@@GLIBC_2.3.2"])
def test_a_helper_threads_waits_are_not_steps(tmp_path, wait):
    trace = _trace(wait)
    # the shape: the wait is the only repeated name, and covers nearly all of its thread's time
    names = [e["name"] for e in trace["traceEvents"] if e.get("tid") == 301 and e["ph"] == "X"]
    assert names.count(wait) == 50
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    store = load_trace(path, cache=False)
    st = analyse_steps(store)
    assert not st.present
    assert "OS-runtime calls" in st.not_steps
    found = compute_insights(store).findings
    text = " ".join(f.message + f.hint for f in found)
    assert "KV cache" not in text and "prefill" not in text


def test_the_same_shape_with_work_is_a_step(tmp_path):
    """The twin: the pool thread's repeated call is work (no OS wait name): it is a step, as before."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_trace("run_task", cat="cpu_op")))
    st = analyse_steps(load_trace(path, cache=False))
    assert st.present and st.count == 50
