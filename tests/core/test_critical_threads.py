"""The critical path across host threads, on training steps shaped like HTA's MI250 trace
(hta__mi250_minitoy_train_ROCm6_2_kineto): the main thread records nothing while ``backward()``
runs, the autograd thread (``pt_autograd_0``) runs ``autograd::engine::evaluate_function: …``
nodes and launches their kernels; with Python stacks the main thread shows a ``backward`` frame.
The path follows the thread doing the work; figures against plain Python over the events."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import load_events
from vtui.analysis.steps.detect import find_step_rows
from vtui.analysis.why.critical import analyse_critical, walk_steps_one_by_one

MAIN, WORKER = {"pid": 5, "tid": 5}, {"pid": 5, "tid": 6}
STEP = (0.0, 520.0)
MAIN_OPS = [("aten::linear", 0.0, 100.0), ("aten::add_", 450.0, 50.0)]
WORKER_OPS = [("autograd::engine::evaluate_function: MseLossBackward0", 150.0, 100.0),
              ("autograd::engine::evaluate_function: AddmmBackward0", 260.0, 140.0)]


def _events(backward_frame: bool) -> list[dict]:
    ev: list[dict] = [
        {"ph": "M", "name": "thread_name", **MAIN, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", **WORKER, "args": {"name": "pt_autograd_0"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": STEP[0], "dur": STEP[1], **MAIN},
    ]
    ev += [{"ph": "X", "cat": "cpu_op", "name": n, "ts": ts, "dur": d, **MAIN} for n, ts, d in MAIN_OPS]
    ev += [{"ph": "X", "cat": "cpu_op", "name": n, "ts": ts, "dur": d, **WORKER} for n, ts, d in WORKER_OPS]
    # the worker's nodes call operators of their own (inner: named after the outer node)
    ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mse_loss_backward", "ts": 160.0, "dur": 50.0, **WORKER})
    if backward_frame:
        ev.append({"ph": "X", "cat": "python_function", "name": "torch/_tensor.py(521): backward", "ts": 120.0,
                   "dur": 300.0, **MAIN})
    return ev


def _truth() -> dict[str, int]:
    """Every named operator's time on the path: the main thread's and, while it waited, the
    worker's outermost nodes; the rest of the step is CPU outside operators."""
    named = {n: int(d * 1000) for n, _ts, d in MAIN_OPS + WORKER_OPS}
    step_ns = int(STEP[1] * 1000)
    return {**named, "(CPU outside operators)": step_ns - sum(named.values())}


def _path(tmp_path: Path, backward_frame: bool):
    store = load_events(tmp_path, _events(backward_frame))
    _label, _src, steps = find_step_rows(store)
    (p,) = analyse_critical(store, steps).steps
    (ref,) = walk_steps_one_by_one(store, steps)
    def cols(path):
        return [(s.kind, s.track, s.start, s.end, s.ns) for s in path.segments]

    assert (p.cpu_ns, p.wait_ns, p.top, cols(p)) == (ref.cpu_ns, ref.wait_ns, ref.top, cols(ref))  # batched = reference
    return store, p


def test_a_thread_idle_during_backward_hands_the_path_to_the_autograd_thread(tmp_path: Path):
    store, p = _path(tmp_path, backward_frame=False)
    want = _truth()
    assert p.cpu_ns == int(STEP[1] * 1000) and p.bound == "cpu"
    assert {name: ns for kind, name, ns in p.top} == {k: want[k] for k in sorted(want, key=lambda k: -want[k])[:5]}
    assert dict((n, v) for _k, n, v in p.top)["(CPU outside operators)"] == 130_000  # not 370 µs
    threads = {store.tracks[s.track].label for s in p.segments}
    assert any("pt_autograd_0" in t for t in threads)


def test_a_backward_frame_hands_the_path_to_the_autograd_thread(tmp_path: Path):
    _store, p = _path(tmp_path, backward_frame=True)
    got = {name: ns for _k, name, ns in p.top}
    for name, _ts, d in WORKER_OPS:
        assert got[name] == int(d * 1000)
    # from the worker's last node to the frame's return the main thread runs again: its own CPU time
    assert p.wait_ns == 0
    assert got["(CPU outside operators)"] == _truth()["(CPU outside operators)"]
