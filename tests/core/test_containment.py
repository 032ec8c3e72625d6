"""Nesting by containment and self time by the union of children, against plain-Python oracles."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import FIXTURES, SHARED_TRACES, X, norm, raw_events, raw_origin, union_length, write_trace
from vtui.load.trace import load_trace
from vtui.store import containment
from vtui.store.containment import containment_parents, depths, self_time


def _by_name(store) -> dict[str, int]:
    return {store.name(r): r for r in range(len(store.slices))}


def test_annotation_inside_enter_frame_nests_by_containment(tmp_path: Path):
    # record_function starts inside the Python __enter__ frame and ends inside __exit__.
    store = load_trace(write_trace(tmp_path, [X("outer", 0, 100), X("enter", 0, 10), X("step", 5, 85),
                                              X("work", 20, 40), X("exit", 85, 10)]))
    row = _by_name(store)
    s = store.slices
    assert s.parent[row["step"]] == row["outer"] and s.depth[row["step"]] == 1
    assert s.parent[row["work"]] == row["step"] and s.depth[row["work"]] == 2
    assert s.parent[row["exit"]] == row["outer"] and s.parent[row["enter"]] == row["outer"]
    assert store.self_ns[row["step"]] == 45_000
    # outer's children enter [0,10], step [5,90], exit [85,95] cover [0,95]: 5 µs self.
    assert store.self_ns[row["outer"]] == 5_000


def test_zero_length_child_at_its_parents_end_nests(tmp_path: Path):
    store = load_trace(write_trace(tmp_path, [
        {"ph": "B", "name": "outer", "ts": 1, "pid": 1, "tid": 1},
        {"ph": "B", "name": "inner", "ts": 3, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 3, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 3, "pid": 1, "tid": 1},
    ]))
    row = _by_name(store)
    assert store.slices.depth[row["inner"]] == 1 and store.slices.parent[row["inner"]] == row["outer"]


def test_a_slice_starting_where_another_ends_is_its_sibling(tmp_path: Path):
    store = load_trace(write_trace(tmp_path, [X("a", 0, 10), X("b", 10, 10), X("c", 12, 2)]))
    row = _by_name(store)
    s = store.slices
    assert s.parent[row["b"]] == -1 and s.parent[row["c"]] == row["b"]
    assert store.self_ns[row["b"]] == 8_000


def _contains(top_end: int, start: int, end: int, tol: int) -> bool:
    return top_end >= end or (top_end + tol >= end and start < top_end)


def _stack_parents(starts: list[int], ends: list[int], bounds: list[int], tol: int = 0) -> list[int]:
    """The oracle: per track in sorted order, pop the open chain until its top contains the slice."""
    out = [-1] * len(starts)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        stack: list[int] = []
        for i in range(lo, hi):
            while stack and not _contains(ends[stack[-1]], starts[i], ends[i], tol):
                stack.pop()
            out[i] = stack[-1] if stack else -1
            stack.append(i)
    return out


def _random_tracks(rng: np.random.Generator, n_tracks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    starts, ends, bounds = [], [], [0]
    for _ in range(n_tracks):
        n = int(rng.integers(0, 400))
        s = np.sort(rng.integers(0, 2000, n))
        e = s + np.where(rng.random(n) < 0.15, 0, rng.integers(0, 300, n))
        order = np.lexsort((s - e, s))
        starts += s[order].tolist()
        ends += e[order].tolist()
        bounds.append(len(starts))
    return np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64), np.array(bounds)


@pytest.mark.parametrize("rounds", [0, 1, 32])
@pytest.mark.parametrize("tol", [0, 3])
def test_parents_equal_the_stack_oracle(monkeypatch, rounds: int, tol: int):
    monkeypatch.setattr(containment, "JUMP_ROUNDS", rounds)  # the walk and the jumps agree
    rng = np.random.default_rng(11)
    for _ in range(40):
        starts, ends, bounds = _random_tracks(rng, int(rng.integers(1, 5)))
        got = containment_parents(starts, ends, bounds, tol)
        assert got.tolist() == _stack_parents(starts.tolist(), ends.tolist(), bounds.tolist(), tol)


def test_tolerance_follows_the_timestamps_float_step():
    assert containment.nesting_tolerance_ns(0.0, 10**12) == 0  # relative µs: exact to the ns
    assert containment.nesting_tolerance_ns(5.19e12, 10**9) == 1  # a 0.98 ns step
    assert containment.nesting_tolerance_ns(1.712e15, 10**9) == 250  # epoch µs: 0.25 µs steps


def test_a_child_ending_a_float_step_after_its_parent_still_nests(tmp_path: Path):
    # Epoch µs near 1.7e15: the child ends with its parent in the file (…582.988 + 0.012 = …583.000)
    # but the doubles land 0.25 µs apart; a short sibling right after the parent stays a sibling.
    base = 1712195495505000
    store = load_trace(write_trace(tmp_path, [X("parent", base + 100.5, 482.5), X("child", base + 582.25, 0.75),
                                              X("next", base + 583.0, 0.1)]))
    row = _by_name(store)
    s = store.slices
    assert s.parent[row["child"]] == row["parent"]
    assert s.parent[row["next"]] == -1
    assert 0 <= store.self_ns[row["parent"]] <= s.end_ns[row["parent"]] - s.start_ns[row["parent"]]


def test_depths_count_ancestors():
    rng = np.random.default_rng(3)
    starts, ends, bounds = _random_tracks(rng, 3)
    parent = containment_parents(starts, ends, bounds)
    expected = []
    for i in range(len(parent)):
        d, p = 0, parent[i]
        while p >= 0:
            d, p = d + 1, parent[p]
        expected.append(d)
    assert depths(parent).tolist() == expected


def test_self_time_is_duration_minus_union_of_children():
    rng = np.random.default_rng(5)
    for _ in range(30):
        starts, ends, bounds = _random_tracks(rng, 2)
        parent = containment_parents(starts, ends, bounds)
        shuffle = rng.permutation(len(starts))  # any row order
        inverse = np.empty_like(shuffle)
        inverse[shuffle] = np.arange(len(shuffle))
        p = parent[shuffle]
        got = self_time(np.where(p >= 0, inverse[np.maximum(p, 0)], -1), starts[shuffle], ends[shuffle])
        kids = defaultdict(list)
        for i, q in enumerate(parent.tolist()):
            if q >= 0:
                kids[q].append((int(starts[i]), int(ends[i])))
        expected = [int(ends[i] - starts[i]) - union_length(kids[i]) for i in range(len(starts))]
        assert got[inverse].tolist() == expected


def _oracle(events: list[dict], tol: int) -> list[tuple]:
    """Per thread, X events in (start, longer first, file order) order; parent by the stack
    oracle; self = dur minus the union of the children. Keyed by what identifies a slice."""
    origin = raw_origin(events)
    per_thread = defaultdict(list)
    for i, e in enumerate(events):
        if e.get("ph") == "X":
            ts = (round(e["ts"] * 1000) - round(origin * 1000))
            key = (repr(norm(e["pid"])), repr(norm(e["tid"])))
            per_thread[key].append((ts, -round(e.get("dur", 0) * 1000), i, e["name"]))
    out = []
    for key, items in per_thread.items():
        items.sort()
        starts = [ts for ts, _, _, _ in items]
        ends = [ts - nd for ts, nd, _, _ in items]
        parent = _stack_parents(starts, ends, [0, len(items)], tol)
        kids = defaultdict(list)
        for i, q in enumerate(parent):
            if q >= 0:  # cut to the parent (a child may pass its end by the tolerance)
                kids[q].append((max(starts[i], starts[q]), min(ends[i], ends[q])))
        for i, (ts, _, _, name) in enumerate(items):
            d, q = 0, parent[i]
            while q >= 0:
                d, q = d + 1, parent[q]
            out.append((key, ts, ends[i], name, d, ends[i] - ts - union_length(kids[i])))
    return sorted(out)


def _store_rows(store) -> list[tuple]:
    s = store.slices
    track_key = {t.id: (repr(t.pid), repr(t.tid)) for t in store.tracks if t.kind in ("thread", "gpu")}
    self_ = store.self_ns
    return sorted((track_key[int(s.track[r])], int(s.start_ns[r]), int(s.end_ns[r]), store.name(r), int(s.depth[r]),
                   int(self_[r])) for r in range(len(s)) if int(s.track[r]) in track_key)


STACK_TRACES = [FIXTURES / "hf_llama_stack.json.gz", FIXTURES / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"]


@pytest.mark.parametrize("path", STACK_TRACES, ids=lambda p: p.name)
def test_depth_and_self_equal_the_oracle_on_real_with_stack_traces(path: Path):
    store = load_trace(path)
    assert _store_rows(store) == _oracle(raw_events(path), store.nesting_tolerance_ns)


def test_profiler_step_has_its_work_as_children():
    # with_stack=True: ProfilerStep#N starts inside the profiler's __enter__ frame.
    store = load_trace(STACK_TRACES[1])
    steps = [r for r in range(len(store.slices)) if store.name(r).startswith("ProfilerStep#")]
    assert steps
    kids = np.bincount(store.slices.parent[store.slices.parent >= 0], minlength=len(store.slices))
    for r in steps:
        assert kids[r] > 0
        assert store.self_ns[r] < 0.5 * (store.slices.end_ns[r] - store.slices.start_ns[r])


def _all_traces() -> list[Path]:
    found = sorted(p for p in FIXTURES.glob("*.json*"))
    if SHARED_TRACES.is_dir():
        found += sorted(p for p in SHARED_TRACES.glob("*/*.json*"))
    return found


@pytest.mark.parametrize("path", _all_traces(), ids=lambda p: p.name)
def test_self_time_bounds_on_every_trace(path: Path):
    store = load_trace(path)
    s = store.slices
    dur = s.end_ns - s.start_ns
    self_ = store.self_ns
    assert (self_ >= 0).all() and (self_ <= dur).all()
    kids = np.flatnonzero(s.parent >= 0)
    assert (s.start_ns[kids] >= s.start_ns[s.parent[kids]]).all()
    assert (s.end_ns[kids] <= s.end_ns[s.parent[kids]] + store.nesting_tolerance_ns).all()
    assert (s.depth[kids] == s.depth[s.parent[kids]] + 1).all()
    # Per thread: the self times cover the busy union once, plus what siblings share.
    for t in np.unique(s.track).tolist():
        rows = np.flatnonzero(s.track == t)
        order = rows[np.argsort(s.start_ns[rows], kind="stable")]
        busy = union_length(list(zip(s.start_ns[order].tolist(), s.end_ns[order].tolist())))
        shared = _sibling_overlap(s, rows)
        kids_t = rows[s.parent[rows] >= 0]
        past = int(np.maximum(s.end_ns[kids_t] - s.end_ns[s.parent[kids_t]], 0).sum())  # within the tolerance
        assert int(self_[rows].sum()) <= busy + shared + past


def _sibling_overlap(s, rows: np.ndarray) -> int:
    """Σ over sibling groups of (Σ lengths − union): time two siblings both claim."""
    groups = defaultdict(list)
    for r in rows.tolist():
        groups[int(s.parent[r])].append((int(s.start_ns[r]), int(s.end_ns[r])))
    return sum(sum(e - b for b, e in iv) - union_length(iv) for iv in groups.values())


def test_down_and_up_walk_the_containment_tree_across_lanes(tmp_path: Path):
    from vtui.ui.timeline.view import ViewState

    store = load_trace(write_trace(tmp_path, [X("outer", 0, 100), X("enter", 0, 10), X("step", 5, 85),
                                              X("work", 20, 40), X("exit", 85, 10)]))
    row = _by_name(store)
    view = ViewState(store)
    view.select(row["step"])  # drawn on an extra lane; its child sits on a nesting lane
    assert view.to_child() and view.selected == row["work"]
    assert view.to_parent() and view.selected == row["step"]
    assert view.to_parent() and view.selected == row["outer"]
    assert view.to_child() and view.selected == row["enter"]


def test_a_b_opened_inside_an_open_b_is_its_child(tmp_path: Path):
    store = load_trace(write_trace(tmp_path, [
        {"ph": "B", "name": "outer", "ts": 0, "pid": 1, "tid": 1},
        {"ph": "B", "name": "inner", "ts": 2, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 4, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 4, "pid": 1, "tid": 1},
        {"ph": "X", "name": "after", "ts": 4, "dur": 1, "pid": 1, "tid": 1},
    ]))
    row = _by_name(store)
    s = store.slices
    assert s.parent[row["inner"]] == row["outer"] and s.depth[row["inner"]] == 1
    assert s.parent[row["after"]] == -1  # starts where outer ends: a sibling, not a child


def test_info_states_the_nesting_tolerance(tmp_path: Path, capsys):
    from vtui.cli import main

    def trace(parent_ts: str, parent_dur: str, child_ts: str, child_dur: str) -> str:
        x = '{{"ph":"X","name":"{}","pid":1,"tid":1,"ts":{},"dur":{}}}'
        return "[" + x.format("parent", parent_ts, parent_dur) + "," + x.format("child", child_ts, child_dur) + "]"

    # Epoch µs written as doubles print shortest ("…582.2" for …582.25, never to the ns): the
    # file's own times hold 0.25 µs steps, so a child may pass its parent's end by one.
    path = tmp_path / "t.json"
    path.write_text(trace("1712195495505100.5", "482.5", "1712195495505582.2", "0.75"))
    assert main(["info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nesting_tolerance_ns"] == 250
    assert main(["info", str(path)]) == 0
    assert "250 ns steps" in capsys.readouterr().out
    # Times written to the ns (Kineto's 3 decimals) are exact: no tolerance.
    path.write_text(trace("1712195495505100.500", "482.500", "1712195495505582.250", "0.750"))
    assert main(["info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nesting_tolerance_ns"] == 0
    assert main(["info", str(path)]) == 0
    assert "timestamps exact to the ns" in capsys.readouterr().out


def test_async_slices_nest_only_within_their_id(tmp_path: Path):
    def ev(ph: str, name: str, id_: int, ts: float) -> dict:
        return {"ph": ph, "name": name, "cat": "c", "id": id_, "ts": ts, "pid": 1, "tid": 1}

    # Two requests named alike (one track per root name draws both), overlapping in time.
    store = load_trace(write_trace(tmp_path, [ev("b", "R", 1, 0), ev("b", "s1", 1, 1), ev("b", "R", 2, 3),
                                              ev("e", "R", 2, 5), ev("e", "s1", 1, 11), ev("e", "R", 1, 20)]))
    s = store.slices
    first = next(r for r in range(len(s)) if store.name(r) == "R" and s.start_ns[r] == 0)
    second = next(r for r in range(len(s)) if store.name(r) == "R" and s.start_ns[r] == 3000)
    s1 = next(r for r in range(len(s)) if store.name(r) == "s1")
    assert s.track[first] == s.track[second] == s.track[s1]
    assert s.parent[s1] == first and s.parent[second] == -1
    assert store.self_ns[s1] == 10_000 and store.self_ns[first] == 10_000
