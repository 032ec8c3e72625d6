"""Aggregation, search and measure checked against plain Python over the raw JSON."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from tests.helpers import QWEN, STACK, norm, raw_events, raw_origin, union_length
from vtui.analysis.slices.aggregate import aggregate
from vtui.analysis.slices.measure import measure
from vtui.analysis.slices.measure import union_length as measured_union
from vtui.analysis.slices.search import search, step
from vtui.errors import UsageError
from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range


def _raw_slices(path):
    """X events as (name, thread, start_ns, end_ns), ns relative to the smallest ts (the store's rule)."""
    events = raw_events(path)
    origin = raw_origin(events)
    out = []
    for e in events:
        if e.get("ph") == "X":
            start = (round(e["ts"] * 1000) - round(origin * 1000))
            out.append((e["name"], (norm(e.get("pid")), norm(e.get("tid"))), start, start + round(e.get("dur", 0) * 1000)))
    return out


def _independent(slices, t0, t1):
    """Per name: count, clipped total, clipped self (minus direct children, nested by a stack per thread)."""
    by_thread = defaultdict(list)
    for s in slices:
        by_thread[s[1]].append(s)
    count, total, self_t = defaultdict(int), defaultdict(int), defaultdict(int)

    def clip(s):
        return max(0, min(s[3], t1) - max(s[2], t0))

    def inside(s):
        return (s[2] < t1 and s[3] > t0) if s[3] > s[2] else t0 <= s[2] <= t1

    for items in by_thread.values():
        items.sort(key=lambda s: (s[2], -(s[3] - s[2])))
        stack = []
        for s in items:
            while stack and stack[-1][3] <= s[2] and not (stack[-1][3] == s[2] == s[3]):
                stack.pop()
            if inside(s):
                count[s[0]] += 1
                total[s[0]] += clip(s)
                self_t[s[0]] += clip(s)
                if stack and inside(stack[-1]):
                    self_t[stack[-1][0]] -= clip(s)
            stack.append(s)
    return count, total, self_t


@pytest.mark.parametrize("path", [QWEN, STACK], ids=["qwen", "stack"])
@pytest.mark.parametrize("cut", [(0.0, 1.0), (0.31, 0.57)], ids=["whole", "cut"])
def test_aggregation_matches_raw_json(path, cut):
    store = load_trace(path)
    t0, t1 = int(store.span_ns * cut[0]), int(store.span_ns * cut[1])
    # CPU threads only: GPU streams overlap partially and nest differently by design.
    cpu = np.array([t.id for t in store.tracks if t.kind == "thread" and t.overlapping == 0])
    agg = aggregate(store, time_range(store, t0, t1), cpu)
    cpu_keys = {(store.tracks[t].pid, store.tracks[t].tid) for t in cpu.tolist()}
    raw = [s for s in _raw_slices(path) if s[1] in cpu_keys]
    count, total, self_t = _independent(raw, t0, t1)
    got = {r.key: r for r in agg.rows}
    assert set(got) == {k for k, v in count.items() if v}
    assert sum(r.count for r in agg.rows) == agg.slices == sum(count.values())
    for name, row in got.items():
        assert row.count == count[name], name
        assert row.total_ns == total[name], name
        assert abs(row.self_ns - self_t[name]) <= 2 * row.count, name
        assert row.min_ns <= row.avg_ns <= row.max_ns
    if cut != (0.0, 1.0):  # the cut really cuts slices in half
        assert any(s[2] < t0 < s[3] for s in raw) and any(s[2] < t1 < s[3] for s in raw)


def test_aggregation_pct_and_groupings():
    store = load_trace(QWEN)
    whole = aggregate(store)
    assert whole.rows[0].total_ns >= whole.rows[-1].total_ns  # sorted by total
    top = whole.rows[0]
    assert 0 < top.pct <= 100.0  # a share of the range's wall time (tests/cli/test_range_share.py: the union)
    by_cat = aggregate(store, by="cat")
    assert sum(r.total_ns for r in by_cat.rows) == sum(r.total_ns for r in whole.rows)
    by_track = aggregate(store, by="track")
    assert sum(r.count for r in by_track.rows) == len(store.slices)
    dims = aggregate(store, by="arg:Input Dims")
    raw_dims = [e for e in raw_events(QWEN) if e.get("ph") == "X" and "Input Dims" in e.get("args", {})]
    assert sum(r.count for r in dims.rows if r.key != "—") == len(raw_dims)
    with pytest.raises(UsageError):
        aggregate(store, time_range(store, 0, 10), by="colour")


def test_search_names_and_args_against_raw():
    store = load_trace(QWEN)
    raw = [e for e in raw_events(QWEN) if e.get("ph") == "X"]
    result = search(store, r"aten::(add)?mm$")
    expected = [e for e in raw if e["name"] in ("aten::mm", "aten::addmm")]
    assert result.count == len(expected) > 0
    assert abs(result.total_ns - round(sum(e["dur"] for e in expected) * 1000)) <= result.count
    starts = store.slices.start_ns[result.rows]
    assert (np.diff(starts) >= 0).all()  # time order
    in_args = search(store, "args:External id")
    assert in_args.count == sum(1 for e in raw if "External id" in e.get("args", {}))
    with pytest.raises(UsageError):
        search(store, "(")


def test_measure_between_two_slices():
    store = load_trace(QWEN)
    result = search(store, "aten::addmm")
    a, b = (int(r) for r in result.rows[:2])
    span = lambda r: (int(store.slices.start_ns[r]), int(store.slices.end_ns[r]))  # noqa: E731
    m = measure(store, span(b), span(a))  # given in the wrong order: swapped
    assert m.a == span(a) and m.b == span(b)
    assert m.start_to_start == span(b)[0] - span(a)[0]
    assert m.gap == span(b)[0] - span(a)[1]
    assert m.union == (span(a)[1] - span(a)[0]) + (span(b)[1] - span(b)[0]) - m.overlap
    assert m.activity  # two addmm slices on a CPU thread: something runs between or across them
    for act in m.activity:  # busy time never exceeds the interval, events are really there
        assert 0 <= act.busy_ns <= m.interval[1] - m.interval[0] and act.events > 0


def test_union_length_independent():
    store = load_trace(QWEN)
    gpu = [t.id for t in store.tracks if t.kind == "gpu"]
    rows = np.flatnonzero(np.isin(store.slices.track, gpu))
    intervals = sorted(zip(store.slices.start_ns[rows].tolist(), store.slices.end_ns[rows].tolist()))
    assert measured_union(store, rows, 0, store.span_ns) == union_length(intervals) > 0


def test_search_steps_forward_and_back_from_a_time_wrapping_at_the_ends(tmp_path):
    """Matches start at 10, 20, 20, 40 µs (two at the same time): from a time between or on them, n goes to
    the first match after it, N to the last one before it, each wrapping round at the ends."""
    events = [{"ph": "X", "name": n, "ts": ts, "dur": 1.0, "pid": 1, "tid": tid}
              for n, ts, tid in [("hit", 10.0, 1), ("hit", 20.0, 1), ("hit", 20.0, 2), ("miss", 30.0, 1), ("hit", 40.0, 1),
                                 ("miss", 0.0, 1)]]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(events))
    store = load_trace(path, cache=False)
    result = search(store, "^hit$")
    starts = store.slices.start_ns[result.rows].tolist()
    assert starts == [10_000, 20_000, 20_000, 40_000]

    assert step(result, store, 15_000, forward=True) == 1
    assert step(result, store, 20_000, forward=True) == 3  # past both at 20 µs
    assert step(result, store, 40_000, forward=True) == 0  # wraps to the first
    assert step(result, store, 35_000, forward=False) == 2  # the later of the two at 20 µs
    assert step(result, store, 20_000, forward=False) == 0  # strictly before 20 µs
    assert step(result, store, 10_000, forward=False) == 3  # wraps to the last
    assert step(result, store, 50_000, forward=False) == 3
    assert step(search(store, "^none$"), store, 0, forward=False) is None
