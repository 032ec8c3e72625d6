"""Step detection and phases on generated traces: known step names, a user regex and the generic
guess; steps in a range; phases by direct child and through Python frames. Each figure against a
brute-force pass over the events written to the file."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from vtui.analysis.steps.detect import analyse_steps, find_step_rows
from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range

OPS = ["aten::mm", "aten::add", "aten::copy_", "aten::softmax"]


def _x(name: str, ts: int, dur: int, tid: int = 1, cat: str = "cpu_op", pid: int = 1) -> dict:
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def _fill(rng: np.random.Generator, out: list[dict], lo: int, hi: int, depth: int, tid: int) -> None:
    """Ops and Python frames (frames hold more ops and frames) inside [lo, hi] on one thread."""
    t = lo + int(rng.integers(0, 5))
    while depth < 3:
        dur = int(rng.integers(0, 60))
        if t + dur > hi:
            break
        if rng.random() < 0.35:
            out.append(_x(f"model.py({int(rng.integers(1, 4))}): forward", t, dur, tid, "python_function"))
            _fill(rng, out, t, t + dur, depth + 1, tid)
        else:
            out.append(_x(str(rng.choice(OPS)), t, dur, tid))
        t += dur + int(rng.integers(1, 15))


def _step_trace(tmp_path: Path, seed: int, step_name: str = "ProfilerStep#{}") -> tuple[Path, list[dict]]:
    rng = np.random.default_rng(seed)
    events: list[dict] = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}}]
    t = 10
    for k in range(int(rng.integers(5, 9))):
        dur = int(rng.integers(150, 400)) * (3 if k == 0 else 1)  # the first step (prefill) is longer
        events.append(_x(step_name.format(k), t, dur, cat="user_annotation"))
        _fill(rng, events, t, t + dur, 0, 1)
        if k == 2:  # a re-entry inside a step is not a step of its own
            events.append(_x(step_name.format(99), t + 1, 2, cat="user_annotation"))
        t += dur + int(rng.integers(5, 40))
    for k in range(3):  # fewer steps on another thread
        events.append(_x(step_name.format(k), 10 + 500 * k, 100, tid=2, cat="user_annotation"))
    for k in range(12):  # mirrored on a GPU stream, more of them: never steps
        events.append(_x(step_name.format(k), 12 + 100 * k, 50, tid=7, cat="gpu_user_annotation", pid=0))
    events = [events[0]] + [events[1 + i] for i in rng.permutation(len(events) - 1)]
    path = tmp_path / f"s{seed}.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path, events


def _tree(events: list[dict], tid: int) -> tuple[list[dict], dict[int, int | None]]:
    """The thread's X events in (start, longer first, file order) order and each one's parent
    (the latest earlier event that contains it), by index in that list."""
    items = sorted((e for e in events if e.get("ph") == "X" and e["tid"] == tid and e["pid"] == 1),
                   key=lambda e: (e["ts"], -e["dur"], events.index(e)))
    parent: dict[int, int | None] = {}
    for i, e in enumerate(items):
        parent[i] = next((j for j in range(i - 1, -1, -1) if items[j]["ts"] + items[j]["dur"] >= e["ts"] + e["dur"]),
                         None)
    return items, parent


def _phases(items: list[dict], parent: dict, steps: list[int], through_frames: bool) -> tuple[dict, int]:
    """name -> [total, count, time in the first of ``steps``] of the steps' direct children (or the first
    non-frame slices below them), and the step time outside them."""
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    is_py = [e["cat"] == "python_function" for e in items]
    kids_of = defaultdict(list)
    for i, p in parent.items():
        if p is not None:
            kids_of[p].append(i)
    if through_frames and not any(is_py[c] for s in steps for c in kids_of[s]):
        return {}, 0
    covered = 0
    for k, s in enumerate(steps):
        todo = list(kids_of[s])
        while todo:
            c = todo.pop()
            if through_frames and is_py[c]:
                todo += kids_of[c]
                continue
            acc = found[items[c]["name"]]
            acc[0] += items[c]["dur"] * 1000
            acc[1] += 1
            acc[2] += items[c]["dur"] * 1000 if k == 0 else 0
            covered += items[c]["dur"] * 1000
    return dict(found), sum(items[s]["dur"] * 1000 for s in steps) - covered


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_known_steps_phases_and_ranges_equal_the_brute_force(tmp_path: Path, seed: int):
    path, events = _step_trace(tmp_path, seed)
    store = load_trace(path, cache=False)
    origin = min(e["ts"] for e in events if "ts" in e)
    items, parent = _tree(events, 1)
    steps = [i for i, e in enumerate(items) if e["name"].startswith("ProfilerStep#") and parent[i] is None]
    starts = [(items[i]["ts"] - origin) * 1000 for i in steps]
    ends = [(items[i]["ts"] + items[i]["dur"] - origin) * 1000 for i in steps]
    label, source, rows = find_step_rows(store)
    assert (label, source) == ("ProfilerStep#N", "known")
    assert store.slices.start_ns[rows].tolist() == starts
    span = int(store.span_ns)
    for t0, t1 in ((0, span), (starts[1], span), (starts[1], starts[3]), (starts[1] + 1, starts[3] + 1),
                   (0, starts[0]), (ends[-1], span)):
        inside = [k for k, s in enumerate(starts) if t0 <= s < t1]
        st = analyse_steps(store, time_range(store, t0, t1))
        assert st.in_trace == len(steps) and (st.pattern, st.source) == ("ProfilerStep#N", "known")
        if not inside:
            assert not st.present and st.count == 0
            continue
        assert st.present and st.starts.tolist() == [starts[k] for k in inside]
        assert st.ends.tolist() == [ends[k] for k in inside]
        assert st.run_start == (inside[0] == 0)
        assert st.ttft_ns == (ends[0] - starts[0] if inside[0] == 0 else None)
        assert st.first_ns == ends[inside[0]] - starts[inside[0]]
        durs = np.array([ends[k] - starts[k] for k in inside], dtype=float)
        rest = durs[1:] if inside[0] == 0 else durs
        assert (st.rest.count if st.rest else 0) == len(rest)
        if len(rest):
            assert st.rest.mean == pytest.approx(rest.mean()) and st.steps_per_s == pytest.approx(1e9 / rest.mean())
        assert st.all.mean == pytest.approx(durs.mean()) and st.track == int(store.slices.track[st.rows[0]])
        step_rows = [steps[k] for k in inside]
        total = sum(ends[k] - starts[k] for k in inside)
        for got, unattributed, frames in ((st.phases, st.unattributed_ns, False),
                                          (st.op_phases, st.op_unattributed_ns, True)):
            want, rest_ns = _phases(items, parent, step_rows, frames)
            assert unattributed == rest_ns, (t0, t1, frames)
            assert {p.name: (p.total_ns, p.count, p.first_ns) for p in got} == {
                n: tuple(v) for n, v in want.items()}, (t0, t1, frames)
            assert [p.total_ns for p in got] == sorted((v[0] for v in want.values()), reverse=True)
            for p in got:
                assert p.pct == pytest.approx(100 * p.total_ns / total)
                n = len(inside)
                assert p.rest_mean_ns == pytest.approx((p.total_ns - p.first_ns) / (n - 1) if n > 1 else 0.0)


def test_first_ns_is_the_first_steps_time_even_when_the_range_starts_later(tmp_path: Path):
    path, events = _step_trace(tmp_path, 4)
    store = load_trace(path, cache=False)
    st = analyse_steps(store, time_range(store, int(store.slices.start_ns[find_step_rows(store)[2][1]])))
    items, parent = _tree(events, 1)
    want, _ = _phases(items, parent, [i for i, e in enumerate(items) if e["name"].startswith("ProfilerStep#")
                                      and parent[i] is None][1:2], False)
    assert {p.name: p.first_ns for p in st.phases} == {p.name: want.get(p.name, [0])[0] for p in st.phases}
    assert set(want) <= {p.name for p in st.phases} and any(p.first_ns for p in st.phases)


def test_a_user_regex_and_the_generic_guess(tmp_path: Path):
    # decode×4 on thread 1 covers most of its top-level time; "tick"×5 on thread 2 covers little.
    events = [_x("decode", 100 * k, 80) for k in range(4)] + [_x("log", 400, 5)]
    events += [_x("tick", 1000 * k, 10, tid=2) for k in range(5)] + [_x("serve", 10, 3000, tid=2)]
    events += [_x("model.py(1): run", 100 * k + 81, 1, cat="python_function") for k in range(6)]
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(path, cache=False)
    label, source, rows = find_step_rows(store)
    assert (label, source) == ("repeated: decode", "generic")
    assert store.slices.start_ns[rows].tolist() == [0, 100_000, 200_000, 300_000]
    label, source, rows = find_step_rows(store, r"^tick$")
    assert (label, source, store.slices.start_ns[rows].tolist()) == ("^tick$", "user", [1_000_000 * k for k in range(5)])
    assert find_step_rows(store, r"^nothing$")[:2] == ("^nothing$", "user") and not len(find_step_rows(store, "x$")[2])
    st = analyse_steps(store, regex=r"^tick$")
    assert st.present and st.count == 5 and st.source == "user"
    # Three decodes against "log": 3 repeats and 30 % of the thread's top level are enough.
    few = tmp_path / "few.json"
    few.write_text(json.dumps({"traceEvents": [_x("decode", 100 * k, 2) for k in range(3)] + [_x("log", 400, 14)]}))
    assert find_step_rows(load_trace(few, cache=False))[:2] == ("repeated: decode", "generic")
    two = tmp_path / "two.json"  # twice is not a loop
    two.write_text(json.dumps({"traceEvents": [_x("decode", 100 * k, 80) for k in range(2)]}))
    assert find_step_rows(load_trace(two, cache=False))[:2] == ("", "")
    thin = tmp_path / "thin.json"  # a name repeated often that covers under 30 % of the thread's top level
    thin.write_text(json.dumps({"traceEvents": [_x("poll", 100 * k, 2) for k in range(5)] + [_x("work", 600, 100)]}))
    assert find_step_rows(load_trace(thin, cache=False))[:2] == ("", "")
    assert not analyse_steps(load_trace(thin, cache=False)).present


def test_more_engine_steps_inside_one_profiler_step_win(tmp_path: Path):
    events = [_x("ProfilerStep#0", 0, 1000, cat="user_annotation")]
    events += [_x("engine_step", 10 + 100 * k, 50) for k in range(5)]
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"traceEvents": events}))
    label, source, rows = find_step_rows(load_trace(path, cache=False))
    assert (label, source, len(rows)) == ("engine_step", "known", 5)


def test_the_generic_guess_weighs_each_thread_on_its_own_top_level(tmp_path: Path):
    # Thread 1: one long "work"; thread 2: four short decodes and nothing else at its top level.
    # The decodes cover all of thread 2's top level, though little of the trace's.
    events = [_x("work", 0, 10_000), _x("serve", 0, 10, tid=3)]
    events += [_x("decode", 100 * k, 10, tid=2) for k in range(4)]
    events += [_x("inner", 2000 * k + 10, 1000) for k in range(5)]  # nested in "work": not top level
    events += [_x("model.py(3): loop", 50 * k, 40, tid=3, cat="python_function") for k in range(6)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(path, cache=False)
    label, source, rows = find_step_rows(store)
    assert (label, source) == ("repeated: decode", "generic")
    assert store.slices.start_ns[rows].tolist() == [0, 100_000, 200_000, 300_000]
    # Only nested repeats and Python frames at the top level: no step.
    nested = tmp_path / "n.json"
    nested.write_text(json.dumps({"traceEvents": [_x("work", 0, 10_000)] + [_x("inner", 2000 * k + 10, 1000)
                                                                          for k in range(5)]
                                  + [_x("model.py(3): loop", 50 * k, 40, tid=3, cat="python_function")
                                     for k in range(6)]}))
    assert find_step_rows(load_trace(nested, cache=False))[:2] == ("", "")
