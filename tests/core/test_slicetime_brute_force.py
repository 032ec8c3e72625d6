"""The range rule on generated traces: the slices a range selects (by the interval index for a
narrow range, by a scan for a wide one, on all tracks or some), their clipped bounds and their
self time, each against a brute-force pass over the events written to the file."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import union_length
from vtui.load.trace import load_trace
from vtui.store import slicetime
from vtui.store.slicetime import clipped_durations, range_rows, range_slices, rows_by_index, rows_by_scan, self_times

# Each slice: (name, thread, start ns, end ns); whole µs in the file, the first event at ts 0.
Slice = tuple[str, int, int, int]


def _random_trace(tmp_path: Path, seed: int) -> tuple[Path, list[Slice]]:
    """Three threads of nested calls (children inside their parent, some zero-length, some
    touching their parent's end), written as X events in shuffled file order."""
    rng = np.random.default_rng(seed)
    slices: list[Slice] = []

    def fill(tid: int, lo: int, hi: int, depth: int) -> None:
        t = lo
        while t < hi and depth < 4:
            if rng.random() < 0.15:  # a zero-length slice, sometimes right at the parent's end
                at = hi if rng.random() < 0.3 else t
                slices.append((f"s{len(slices)}", tid, at, at))
            a = t + int(rng.integers(0, 40))
            b = min(hi, a + int(rng.integers(1, 300)))
            if a >= b:
                break
            slices.append((f"s{len(slices)}", tid, a, b))
            fill(tid, a, b, depth + 1)
            t = b + int(rng.integers(0, 20))

    slices.append(("origin", 1, 0, 5))
    for tid in (1, 2, 3):
        fill(tid, 10, 3000, 0)
    slices = [slices[i] for i in rng.permutation(len(slices))]  # file order breaks exact ties
    events = [{"ph": "X", "name": n, "ts": a, "dur": b - a, "pid": 1, "tid": tid} for n, tid, a, b in slices]
    path = tmp_path / f"t{seed}.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path, [(n, tid, a * 1000, b * 1000) for n, tid, a, b in slices]


def _inside(a: int, b: int, t0: int, t1: int) -> bool:
    return (a < t1 and b > t0) if b > a else t0 <= a <= t1


def _brute_parent(slices: list[Slice]) -> dict[str, str | None]:
    """Per thread, the latest slice before it in (start, longer first, file) order that contains it."""
    out: dict[str, str | None] = {}
    by_tid = defaultdict(list)
    for s in slices:
        by_tid[s[1]].append(s)
    for items in by_tid.values():
        items.sort(key=lambda s: (s[2], s[2] - s[3]))
        for i, s in enumerate(items):
            out[s[0]] = next((p[0] for p in reversed(items[:i]) if p[3] >= s[3]), None)
    return out


def _ranges(slices: list[Slice], span: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Narrow and wide ranges, with ends on slice edges (where the rule's < and <= differ)."""
    edges = sorted({x for s in slices for x in s[2:]})
    out = [(0, span), (1, span), (0, span - 1), (-5, span + 5), (span // 3, span // 3)]
    for _ in range(12):
        a, b = sorted(int(x) for x in rng.choice(edges, 2))
        out.append((a, b))
        w = int(rng.integers(1, span // 40))  # narrow: the index path
        out.append((a, a + w))
        out.append((b - w, b))
    return out


def _name_of(store) -> list[str]:
    return [store.name(r) for r in range(len(store.slices))]


def _tracks_of(store, tids: set[int]) -> np.ndarray:
    return np.array([t.id for t in store.tracks if t.kind == "thread" and t.tid in tids], dtype=np.int64)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rows_bounds_and_self_time_equal_the_brute_force(tmp_path: Path, seed: int):
    path, slices = _random_trace(tmp_path, seed)
    store = load_trace(path, cache=False)
    names = _name_of(store)
    parent = _brute_parent(slices)
    span = int(store.span_ns)
    assert span == max(s[3] for s in slices)
    rng = np.random.default_rng(seed)
    for t0, t1 in _ranges(slices, span, rng):
        for tids in (None, {2}, {1, 3}):
            tracks = None if tids is None else _tracks_of(store, tids)
            want = {s[0]: s for s in slices if _inside(s[2], s[3], t0, t1) and (tids is None or s[1] in tids)}
            for rows in (range_rows(store, t0, t1, tracks), rows_by_index(store, t0, t1, tracks),
                         rows_by_scan(store, t0, t1, tracks)):
                assert (np.diff(rows) > 0).all()
                assert sorted(names[r] for r in rows.tolist()) == sorted(want), (t0, t1, tids)
            rs = range_slices(store, t0, t1, tracks)
            cut = {names[r]: (max(want[names[r]][2], t0), max(min(want[names[r]][3], t1), max(want[names[r]][2], t0)))
                   for r in rs.rows.tolist()}
            assert [(int(a), int(b)) for a, b in zip(rs.start, rs.end)] == [cut[names[r]] for r in rs.rows.tolist()]
            assert rs.clip.tolist() == [b - a for a, b in (cut[names[r]] for r in rs.rows.tolist())]
            assert clipped_durations(store, rs.rows, t0, t1).tolist() == rs.clip.tolist()
            expected_self = []
            for r in rs.rows.tolist():
                lo, hi = cut[names[r]]
                kids = [(max(cut[k][0], lo), min(cut[k][1], hi)) for k in cut if parent[k] == names[r]]
                expected_self.append(hi - lo - union_length(kids))
            assert rs.self_ns.tolist() == expected_self, (t0, t1, tids)


def test_the_index_and_the_scan_meet_at_the_width_threshold(tmp_path: Path, monkeypatch):
    # range_rows picks the scan from WIDE × span on; each path alone gives the same rows, so a
    # path that ignores its arguments shows up here.
    path, slices = _random_trace(tmp_path, 4)
    store = load_trace(path, cache=False)
    span = int(store.span_ns)
    width = int(slicetime.WIDE * span)
    calls: list[str] = []
    for name in ("rows_by_index", "rows_by_scan"):
        real = getattr(slicetime, name)
        monkeypatch.setattr(slicetime, name, lambda *a, _n=name, _f=real, **k: calls.append(_n) or _f(*a, **k))
    tracks = _tracks_of(store, {1, 2})
    for t0, t1, way in ((1000, 1000 + width - 1, "rows_by_index"), (1000, 1000 + width, "rows_by_scan")):
        calls.clear()
        rows = range_rows(store, t0, t1, tracks)
        assert calls == [way]
        want = sorted(s[0] for s in slices if s[1] in (1, 2) and _inside(s[2], s[3], t0, t1))
        assert sorted(store.name(r) for r in rows.tolist()) == want


def test_a_zero_length_child_at_its_parents_end_is_in_a_range_that_starts_there(tmp_path: Path):
    # parent [0, 10] µs, its child zero-length at 10: the range [10, 20] µs holds the child and
    # a later slice but not the parent, so the child has no parent among the rows.
    events = [{"ph": "X", "name": n, "ts": ts, "dur": d, "pid": 1, "tid": 1}
              for n, ts, d in (("parent", 0, 10), ("child", 10, 0), ("next", 12, 6), ("inner", 13, 2))]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(path, cache=False)
    rs = range_slices(store, 10_000, 20_000)
    assert [store.name(r) for r in rs.rows.tolist()] == ["child", "next", "inner"]
    assert rs.self_ns.tolist() == [0, 4_000, 2_000]
    assert rs.mask(np.array([n == "inner" for n in _name_of(store)])).tolist() == [2]
    empty = range_slices(store, 30_000, 40_000)
    assert len(empty.rows) == 0 and empty.self_ns.tolist() == [] and empty.self_ns.dtype == np.int64
    assert self_times(store, np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)).tolist() == []


def test_a_range_just_after_the_trace_start_leaves_out_a_zero_length_slice_at_it(tmp_path: Path):
    events = [{"ph": "X", "name": n, "ts": ts, "dur": d, "pid": 1, "tid": 1}
              for n, ts, d in (("mark", 0, 0), ("work", 0, 10), ("tail", 10, 0))]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(path, cache=False)
    span = int(store.span_ns)
    for t0, t1, want in ((0, span, ["work", "mark", "tail"]), (1, span, ["work", "tail"]),
                         (0, span - 1, ["work", "mark"]), (1, 1, ["work"])):
        rs = range_slices(store, t0, t1)
        assert (rs.t0, rs.t1) == (t0, t1)
        assert sorted(store.name(r) for r in rs.rows.tolist()) == sorted(want), (t0, t1)


def test_self_times_of_rows_without_their_parents(tmp_path: Path):
    # Only the second level and below, zero-length slices left out: each keeps its own children's
    # time off, and a row whose parent is not among the rows is nobody's child.
    path, slices = _random_trace(tmp_path, 6)
    store = load_trace(path, cache=False)
    names = _name_of(store)
    parent = _brute_parent(slices)
    by_name = {s[0]: s for s in slices}
    rows = np.array([r for r in range(len(names)) if parent[names[r]] is not None
                     and by_name[names[r]][3] > by_name[names[r]][2]], dtype=np.int64)
    assert len(rows) > 10
    start, end = store.slices.start_ns[rows], store.slices.end_ns[rows]
    kept = {names[r] for r in rows.tolist()}
    want = []
    for r in rows.tolist():
        _, _, lo, hi = by_name[names[r]]
        kids = [(max(s[2], lo), min(s[3], hi)) for s in slices if s[0] in kept and parent[s[0]] == names[r]]
        want.append(hi - lo - union_length(kids))
    assert self_times(store, rows, start, end).tolist() == want
