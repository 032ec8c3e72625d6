"""Aggregation on generated traces, every grouping and sort key, against a brute-force pass over
the events written to the file (range rule, clipping, nesting and self time in plain Python)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import union_length
from vtui.analysis.slices.aggregate import SORT_KEYS, aggregate, check_grouping, sort_rows
from vtui.errors import UsageError
from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range

NAMES = ["mm", "add", "copy", "relu", "gelu"]
CATS = ["cpu_op", "user_annotation", "python_function"]


def _random_trace(tmp_path: Path, seed: int) -> tuple[Path, list[dict]]:
    """Nested X events on three threads, with zero-length ones, repeated names and an arg that is
    a string, a number, a list, an object or missing. Each event dict gains "_s"/"_e" (ns) and "_id"."""
    rng = np.random.default_rng(seed)
    events: list[dict] = []

    def add(tid: int, a: int, b: int) -> None:
        e = {"ph": "X", "name": str(rng.choice(NAMES)), "cat": str(rng.choice(CATS)), "ts": a, "dur": b - a,
             "pid": 1, "tid": tid}
        kind = int(rng.integers(0, 5))
        if kind < 4:
            e["args"] = {"shape": ["x", 7, [int(rng.integers(1, 3)), 4], {"d": [2, 3]}][kind]}
        events.append(e)

    def fill(tid: int, lo: int, hi: int, depth: int) -> None:
        t = lo
        while t < hi and depth < 3:
            if rng.random() < 0.15:
                add(tid, t, t)
            a = t + int(rng.integers(0, 30))
            b = min(hi, a + int(rng.integers(1, 400)))
            if a >= b:
                break
            add(tid, a, b)
            fill(tid, a, b, depth + 1)
            t = b + int(rng.integers(0, 30))

    for tid in (1, 2, 3):
        fill(tid, 0 if tid == 1 else 7, 2000, 0)
    events = [events[i] for i in rng.permutation(len(events))]
    path = tmp_path / f"a{seed}.json"
    path.write_text(json.dumps({"traceEvents": events}))
    origin = min(e["ts"] for e in events)
    for i, e in enumerate(events):
        e["_s"], e["_e"], e["_id"] = (e["ts"] - origin) * 1000, (e["ts"] + e["dur"] - origin) * 1000, i
    return path, events


def _selected(events: list[dict], t0: int, t1: int) -> dict[int, tuple[int, int, int]]:
    """Event id -> (clipped start, clipped end, self time) for the events the range selects."""
    inside = {e["_id"]: e for e in events
              if ((e["_s"] < t1 and e["_e"] > t0) if e["_e"] > e["_s"] else t0 <= e["_s"] <= t1)}
    cut = {i: (max(e["_s"], t0), max(min(e["_e"], t1), max(e["_s"], t0))) for i, e in inside.items()}
    by_tid = defaultdict(list)
    for e in events:  # (start, longer first, file order); parent: latest earlier one containing it
        by_tid[e["tid"]].append(e)
    kids = defaultdict(list)
    for items in by_tid.values():
        items.sort(key=lambda e: (e["_s"], e["_s"] - e["_e"], e["_id"]))
        for k, e in enumerate(items):
            p = next((q for q in reversed(items[:k]) if q["_e"] >= e["_e"]), None)
            if p is not None and p["_id"] in cut and e["_id"] in cut:
                lo, hi = cut[p["_id"]]
                kids[p["_id"]].append((max(cut[e["_id"]][0], lo), min(cut[e["_id"]][1], hi)))
    return {i: (a, b, b - a - union_length(kids[i])) for i, (a, b) in cut.items()}


def _key(store, e: dict, by: str) -> str:
    if by == "name":
        return e["name"]
    if by == "cat":
        return e["cat"]
    if by == "track":  # the label is the store's; which slices share a track is the file's
        return next(t.label for t in store.tracks if t.kind == "thread" and t.tid == e["tid"])
    value = e.get("args", {}).get(by[4:])
    return "—" if value is None else value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize("seed", [5, 6])
@pytest.mark.parametrize("by", ["name", "cat", "track", "arg:shape"])
def test_every_grouping_equals_the_brute_force(tmp_path: Path, seed: int, by: str):
    path, events = _random_trace(tmp_path, seed)
    store = load_trace(path, cache=False)
    by_id = {e["_id"]: e for e in events}
    span = int(store.span_ns)
    rng = np.random.default_rng(seed)
    edges = sorted({e["_s"] for e in events} | {e["_e"] for e in events})
    ranges = [(0, span), (span // 2, span // 2)] + [tuple(sorted(int(x) for x in rng.choice(edges, 2))) for _ in range(4)]
    for t0, t1 in ranges:
        sel = _selected(events, t0, t1)
        groups: dict[str, list[int]] = defaultdict(list)
        for i in sel:
            groups[_key(store, by_id[i], by)].append(i)
        n_tracks = len({by_id[i]["tid"] for i in sel})
        denom = max(t1 - t0, 1)  # % of the range's wall time
        agg = aggregate(store, time_range(store, t0, t1), by=by)
        assert (agg.slices, agg.tracks) == (len(sel), n_tracks)
        got = {r.key: r for r in agg.rows}
        assert set(got) == set(groups)
        for key, ids in groups.items():
            clips = [sel[i][1] - sel[i][0] for i in ids]
            total = sum(clips)
            row = got[key]
            assert (row.count, row.total_ns, row.self_ns, row.min_ns, row.max_ns) == (
                len(ids), total, sum(sel[i][2] for i in ids), min(clips), max(clips)), (key, t0, t1)
            assert row.avg_ns == pytest.approx(total / len(ids))
            wall = _union([(sel[i][0], sel[i][1]) for i in ids])  # overlaps (nesting, other tracks) once
            assert row.pct == pytest.approx(100.0 * wall / denom)
            assert row.as_dict() == {"name": key, "count": len(ids), "total_ns": total,
                                     "self_ns": sum(sel[i][2] for i in ids), "avg_ns": round(total / len(ids), 1),
                                     "min_ns": min(clips), "max_ns": max(clips), "pct": round(100.0 * wall / denom, 3)}
            members = agg.slices_of(row)  # shortest first, ties in row order
            clipped = [min(int(store.slices.end_ns[r]), t1) - max(int(store.slices.start_ns[r]), t0) for r in members]
            assert sorted(clipped) == sorted(clips)
            assert all((a, ra) < (b, rb) for a, b, ra, rb in zip(clipped, clipped[1:], members, members[1:]))
        assert [r.key for r in agg.rows] == [r.key for r in sorted(agg.rows, key=lambda r: (r.total_ns, r.key),
                                                                   reverse=True)]


def test_only_keeps_the_given_slices_with_their_own_self_time(tmp_path: Path):
    path, events = _random_trace(tmp_path, 8)
    store = load_trace(path, cache=False)
    span = int(store.span_ns)
    t0, t1 = span // 5, span * 4 // 5
    sel = _selected(events, t0, t1)
    by_id = {e["_id"]: e for e in events}
    keep_ids = {i for i in sel if by_id[i]["name"] in ("mm", "relu") or by_id[i]["_s"] % 3 == 0}
    # store rows of the kept events, found by their exact interval and track
    rows = [r for r in range(len(store.slices))
            if any(by_id[i]["_s"] == store.slices.start_ns[r] and by_id[i]["_e"] == store.slices.end_ns[r]
                   and by_id[i]["name"] == store.name(r)
                   and store.tracks[int(store.slices.track[r])].tid == by_id[i]["tid"] for i in keep_ids)]
    agg = aggregate(store, time_range(store, t0, t1), only=np.array(rows, dtype=np.int64))
    want: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for i in sel:
        e = by_id[i]
        if any(e["_s"] == store.slices.start_ns[r] and e["_e"] == store.slices.end_ns[r] and e["name"] == store.name(r)
               and store.tracks[int(store.slices.track[r])].tid == e["tid"] for r in rows):
            w = want[e["name"]]
            w[0], w[1], w[2] = w[0] + 1, w[1] + sel[i][1] - sel[i][0], w[2] + sel[i][2]
    assert {r.key: [r.count, r.total_ns, r.self_ns] for r in agg.rows} == dict(want)
    assert agg.slices == sum(w[0] for w in want.values())


def test_sort_rows_by_every_key_and_direction(tmp_path: Path):
    path, _ = _random_trace(tmp_path, 9)
    store = load_trace(path, cache=False)
    rows = aggregate(store, by="arg:shape").rows
    rows = rows + [r for r in aggregate(store, by="cat").rows]
    attr = {"total": "total_ns", "self": "self_ns", "count": "count", "avg": "avg_ns", "min": "min_ns", "max": "max_ns"}
    for key in SORT_KEYS:
        for descending in (True, False):
            got = [(r.key, r.count) for r in sort_rows(rows, key, descending)]
            if key == "name":
                want = sorted(rows, key=lambda r: r.key, reverse=not descending)
            else:
                want = sorted(rows, key=lambda r: (getattr(r, attr[key]), r.key), reverse=descending)
            assert got == [(r.key, r.count) for r in want], (key, descending)
    assert [r.key for r in sort_rows(rows)] == [r.key for r in sort_rows(rows, "total", True)]
    with pytest.raises(UsageError, match="unknown sort column"):
        sort_rows(rows, "colour")
    with pytest.raises(UsageError, match="use total, self, count, avg, min, max, name"):
        sort_rows(rows, "")


def test_groupings_are_checked_and_an_empty_range_has_no_rows(tmp_path: Path):
    for by in ("name", "cat", "track", "arg:x"):
        assert check_grouping(by) == by
    for by in ("arg:", "colour", "args:x", ""):
        with pytest.raises(UsageError, match="unknown grouping"):
            check_grouping(by)
    path, _ = _random_trace(tmp_path, 10)
    store = load_trace(path, cache=False)
    span = int(store.span_ns)
    empty = aggregate(store, time_range(store, span + 10, span + 20))
    assert (empty.rows, empty.slices, empty.tracks) == ([], 0, 0)
    agg = aggregate(store, time_range(store, 0, span), sort="count")
    assert agg.with_rows(agg.rows[:1]).rows == agg.rows[:1] and agg.with_rows([]).slices == agg.slices
    assert (agg.by, agg.t0, agg.t1) == ("name", 0, span)
    counts = [r.count for r in agg.rows]
    assert counts == sorted(counts, reverse=True)


def _union(spans: list[tuple[int, int]]) -> int:
    """Length covered by the spans, overlaps once (a plain sweep)."""
    total, reach = 0, None
    for a, b in sorted(spans):
        if reach is None or a >= reach:
            total, reach = total + b - a, b
        elif b > reach:
            total, reach = total + b - reach, b
    return total


def test_share_of_a_one_ns_range_on_one_track(tmp_path: Path):
    # % = the range's wall time a slice of the row runs: 1 ns filled is 100 % on one thread or two.
    events = [{"ph": "X", "name": "a", "ts": 0, "dur": 10, "pid": 1, "tid": 1},
              {"ph": "X", "name": "b", "ts": 0, "dur": 10, "pid": 1, "tid": 2}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(path, cache=False)
    one = np.array([t.id for t in store.tracks if t.kind == "thread" and t.tid == 1])
    for t0, t1, tracks, pct in ((5000, 5001, one, 100.0), (5000, 5001, None, 100.0), (0, 10_000, one, 100.0),
                                (2000, 4000, None, 100.0)):
        agg = aggregate(store, time_range(store, t0, t1), tracks)
        assert sum(r.pct for r in agg.rows) == pytest.approx(100.0 if tracks is not None else 200.0)
        assert agg.rows[0].pct == pytest.approx(pct), (t0, t1, tracks)
