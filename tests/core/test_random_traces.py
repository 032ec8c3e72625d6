"""Property tests: random valid traces, checked against what the generator knows it wrote.

The generator builds X slices, properly nested B/E stacks, instants, counters, async b/e pairs
with string ids, s/f flows bound to slice starts and M names over several pids/tids (numbers
and names), interleaves the threads' events in random file order, and records the intervals
it meant. The store must keep every event (no warnings but partial overlaps), give exactly
those slices, keep each lane free of overlaps and each child inside its parent.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range

PIDS = [1, 2, "proc"]
TIDS = [1, 7, "worker"]
NAMES = ["a", "b", "matmul", "🦙 step", "[/] odd"]
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

times = st.integers(0, 4000).map(lambda q: q / 4)  # quarter µs: exact in ns
durations = st.just(0.0) | st.integers(0, 1200).map(lambda q: q / 4)  # zero-length slices often: the range rule's case


@dataclass
class Generated:
    events: list[dict] = field(default_factory=list)
    thread_slices: list[tuple] = field(default_factory=list)  # (pid, tid, name, start_us, end_us)
    async_slices: list[tuple] = field(default_factory=list)  # (pid, name, start_us, end_us)
    flows: list[tuple] = field(default_factory=list)  # ((pid, tid, ts_us), (pid, tid, ts_us))
    instants: int = 0
    counter_samples: int = 0


@st.composite
def traces(draw) -> Generated:
    g = Generated()
    threads = draw(st.lists(st.tuples(st.sampled_from(PIDS), st.sampled_from(TIDS)), min_size=1, max_size=4, unique=True))
    streams: list[list[dict]] = []
    x_starts: list[tuple] = []
    for pid, tid in threads:
        stream: list[dict] = []
        for _ in range(draw(st.integers(0, 8))):
            ts, dur, name = draw(times), draw(durations), draw(st.sampled_from(NAMES))
            stream.append({"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": {"k": 1}})
            g.thread_slices.append((pid, tid, name, ts, ts + dur))
            x_starts.append((pid, tid, ts))
        t = draw(times)
        stack: list[tuple[str, float]] = []
        for _ in range(draw(st.integers(0, 12))):
            if stack and draw(st.booleans()):
                stream.append(_end(stack, g, pid, tid, t, named=draw(st.booleans())))
            else:
                name = draw(st.sampled_from(NAMES))
                stack.append((name, t))
                stream.append({"ph": "B", "name": name, "pid": pid, "tid": tid, "ts": t})
            t += draw(st.integers(0, 200)) / 4
        while stack:
            stream.append(_end(stack, g, pid, tid, t, named=draw(st.booleans())))
            t += draw(st.integers(0, 20)) / 4
        for _ in range(draw(st.integers(0, 3))):
            stream.append({"ph": "i", "name": "mark", "pid": pid, "tid": tid, "ts": draw(times), "s": "t"})
            g.instants += 1
        streams.append(stream)
    other: list[dict] = []
    for pid in {p for p, _ in threads}:
        other.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"process {pid}"}})
        for _ in range(draw(st.integers(0, 3))):
            other.append({"ph": "C", "name": "mem", "pid": pid, "ts": draw(times),
                          "args": {"used": draw(st.integers(0, 10**9)), "free": draw(st.floats(0, 1e6))}})
            g.counter_samples += 2
        for k in range(draw(st.integers(0, 3))):  # async pairs, each with its own string id
            start, dur, name = draw(times), draw(durations), draw(st.sampled_from(NAMES))
            ident = f"req-{pid}-{k}"
            other.append({"ph": "b", "cat": "async", "id": ident, "name": name, "pid": pid, "tid": 0, "ts": start})
            other.append({"ph": "e", "cat": "async", "id": ident, "name": name, "pid": pid, "tid": 0, "ts": start + dur})
            g.async_slices.append((pid, name, start, start + dur))
    for pid, tid in threads:
        other.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"thread {tid}"}})
    if len(x_starts) >= 2:  # flows from one slice start to another
        for k in range(draw(st.integers(0, 3))):
            a, b = draw(st.sampled_from(x_starts)), draw(st.sampled_from(x_starts))
            if b[2] < a[2]:
                a, b = b, a
            other.append({"ph": "s", "cat": "flow", "name": "f", "id": k, "pid": a[0], "tid": a[1], "ts": a[2]})
            other.append({"ph": "f", "cat": "flow", "name": "f", "id": k, "pid": b[0], "tid": b[1], "ts": b[2], "bp": "e"})
            g.flows.append((a, b))
    streams.append(other)
    # Random file order that keeps each stream's own order (B/E order at equal ts matters).
    total = sum(map(len, streams))
    picks = draw(st.lists(st.integers(0, len(streams) - 1), min_size=total, max_size=total))
    queues = [list(reversed(s)) for s in streams]
    for p in picks:
        q = queues[p] if queues[p] else next(q for q in queues if q)
        g.events.append(q.pop())
    return g


def _end(stack: list[tuple[str, float]], g: Generated, pid, tid, t: float, named: bool) -> dict:
    name, start = stack.pop()
    g.thread_slices.append((pid, tid, name, start, t))
    event = {"ph": "E", "pid": pid, "tid": tid, "ts": t}
    if named:
        event["name"] = name
    return event


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("props")


def _load(trace_dir, g: Generated):
    path = trace_dir / "t.json"
    path.write_text(json.dumps(g.events, ensure_ascii=False), encoding="utf-8")
    return load_trace(path, cache=False)


def _origin(g: Generated) -> float:
    return min((e["ts"] for e in g.events if e["ph"] != "M"), default=0.0)


@SETTINGS
@given(traces())
def test_every_event_is_kept_and_the_slices_are_the_ones_written(trace_dir, g: Generated):
    store = _load(trace_dir, g)
    assert store.event_count == len(g.events)
    assert store.by_phase == dict(Counter(e["ph"] for e in g.events))
    assert all("partly overlap" in w for w in store.warnings), store.warnings  # nothing skipped
    n_x = sum(e["ph"] == "X" for e in g.events)
    n_b = sum(e["ph"] == "B" for e in g.events)
    assert len(store.slices) == n_x + n_b + len(g.async_slices)
    assert len(store.instants) == g.instants
    assert len(store.counters) == g.counter_samples
    assert len(store.flows) == len(g.flows)

    origin = _origin(g)

    def ns(us: float) -> int:
        return (round(us * 1000) - round(origin * 1000))

    s = store.slices
    got_threads, got_async = Counter(), Counter()
    for r in range(len(s)):
        t = store.tracks[int(s.track[r])]
        if t.kind == "async":
            got_async[(t.pid, store.name(r), int(s.start_ns[r]), int(s.end_ns[r]))] += 1
        else:
            got_threads[(t.pid, t.tid, store.name(r), int(s.start_ns[r]), int(s.end_ns[r]))] += 1
    assert got_threads == Counter((p, t, n, ns(a), ns(b)) for p, t, n, a, b in g.thread_slices)
    assert got_async == Counter((p, n, ns(a), ns(b)) for p, n, a, b in g.async_slices)


@SETTINGS
@given(traces())
def test_lanes_never_overlap_and_children_lie_within_parents(trace_dir, g: Generated):
    store = _load(trace_dir, g)
    s = store.slices
    if not len(s):
        return
    # Stored sorted by (track, lane, start); within a lane each slice ends before the next starts.
    key = s.track.astype(np.int64) * (1 << 32) + s.lane
    assert (np.diff(key) >= 0).all()
    same = key[1:] == key[:-1]
    assert (s.start_ns[1:][same] >= s.start_ns[:-1][same]).all()
    assert (s.end_ns[:-1][same] <= s.start_ns[1:][same]).all()
    assert (s.end_ns >= s.start_ns).all() and (s.dur_ns == s.end_ns - s.start_ns).all()
    child = np.flatnonzero(s.parent >= 0)
    par = s.parent[child]
    assert (s.track[par] == s.track[child]).all()
    assert (s.start_ns[par] <= s.start_ns[child]).all() and (s.end_ns[child] <= s.end_ns[par]).all()
    assert (s.depth[child] == s.depth[par] + 1).all()
    assert (store.self_ns >= 0).all()
    for t in store.tracks:  # lane counts agree with the index, and depth-0 slices have no parent
        assert store.index.lane_count(t.id) == t.lanes
    nested_lanes = np.array([t.nested_lanes for t in store.tracks])[s.track]
    top = np.flatnonzero((s.depth == 0) & (s.lane < nested_lanes))
    assert (s.parent[top] == -1).all()
    # Only a real partial overlap sends a slice to an extra lane: some slice of the track starts
    # no later, ends strictly inside it, and is not merely touching it.
    for r in np.flatnonzero(s.lane >= nested_lanes).tolist():
        same = s.track == s.track[r]
        assert ((s.start_ns <= s.start_ns[r]) & (s.start_ns[r] < s.end_ns) & (s.end_ns < s.end_ns[r]) & same).any()


@SETTINGS
@given(traces(), st.integers(0, 1200), st.integers(0, 1200))
def test_window_queries_match_brute_force(trace_dir, g: Generated, a: int, b: int):
    store = _load(trace_dir, g)
    s = store.slices
    t0, t1 = sorted((a * 1000, b * 1000))
    for t in store.tracks:
        got = sorted(store.index.query(t.id, t0, t1).tolist())
        want = np.flatnonzero((s.track == t.id) & (s.end_ns >= t0) & (s.start_ns <= t1)).tolist()
        assert got == want


def _enclosing(store, pid, tid, ts_ns: int) -> int:
    """Spec, by brute force: of the thread's slices containing ts, the one that started last, then
    the shortest, then the later in the file; -1 when none."""
    s = store.slices
    track = next(t for t in store.tracks if t.kind in ("thread", "gpu") and (t.pid, t.tid) == (pid, tid))
    rows = np.flatnonzero((s.track == track.id) & (s.start_ns <= ts_ns) & (s.end_ns >= ts_ns))
    if not len(rows):
        return -1
    return int(min(rows.tolist(), key=lambda r: (-int(s.start_ns[r]), int(s.end_ns[r]), -int(s.ordinal[r]))))


@SETTINGS
@given(traces())
def test_flows_join_the_slices_their_ends_lie_in(trace_dir, g: Generated):
    store = _load(trace_dir, g)
    f = store.flows
    origin = _origin(g)
    want = Counter()
    for (pa, ta, a), (pb, tb, b) in g.flows:
        src = _enclosing(store, pa, ta, (round(a * 1000) - round(origin * 1000)))
        dst = _enclosing(store, pb, tb, (round(b * 1000) - round(origin * 1000)))
        assert src >= 0 and dst >= 0  # each end sits at the start of an X slice
        want[(src, dst)] += 1
    assert Counter(zip(f.src_slice.tolist(), f.dst_slice.tolist())) == want
    assert (f.src_ts_ns == store.slices.start_ns[f.src_slice]).all()


# ---- aggregation and export over a random range ---------------------------------------------------
ranges = st.tuples(st.integers(0, 1300), st.integers(0, 1300)).map(lambda ab: (min(ab) * 1000, max(ab) * 1000))


def _selected(intervals, t0: int, t1: int):
    """The selection rule, by hand: a slice with a length overlaps (t0, t1) by more than a point;
    a zero-length one lies in [t0, t1]."""
    for name, a, b in intervals:
        if (a < t1 and b > t0) if b > a else (t0 <= a <= t1):
            yield name, a, b


@SETTINGS
@given(traces(), ranges)
def test_aggregation_totals_equal_the_sum_over_slices(trace_dir, g: Generated, window):
    from vtui.analysis.slices.aggregate import aggregate

    store = _load(trace_dir, g)
    t0, t1 = window
    origin = _origin(g)

    def ns(us: float) -> int:
        return (round(us * 1000) - round(origin * 1000))

    intervals = [(n, ns(a), ns(b)) for _, _, n, a, b in g.thread_slices] + [(n, ns(a), ns(b)) for _, n, a, b in g.async_slices]
    want_count, want_total = Counter(), Counter()
    for name, a, b in _selected(intervals, t0, t1):
        want_count[name] += 1
        want_total[name] += max(0, min(b, t1) - max(a, t0))
    agg = aggregate(store, time_range(store, t0, t1), by="name")
    assert {r.key: r.count for r in agg.rows} == dict(want_count)
    assert {r.key: r.total_ns for r in agg.rows} == {k: want_total[k] for k in want_count}
    assert agg.slices == sum(want_count.values())
    for r in agg.rows:
        assert 0 <= r.self_ns <= r.total_ns and r.min_ns <= r.avg_ns <= r.max_ns
    for by in ("track", "cat"):  # any grouping splits the same total
        other = aggregate(store, time_range(store, t0, t1), by=by)
        assert sum(r.total_ns for r in other.rows) == sum(want_total.values())
        assert sum(r.count for r in other.rows) == agg.slices


@SETTINGS
@given(traces(), ranges, st.data())
def test_export_then_load_round_trips_the_selected_events(trace_dir, g: Generated, window, data):
    from vtui.analysis.base.selection import counter_rows, instant_rows
    from vtui.errors import UsageError
    from vtui.export.trace import export_range

    store = _load(trace_dir, g)
    out = trace_dir / "export.json"
    origin = _origin(g)

    def ns(us: float) -> int:
        return (round(us * 1000) - round(origin * 1000))

    # Range ends often on slice ends: the rule's edges (touching, zero-length at t0 or t1).
    ends = sorted({ns(a) for *_, a, _ in g.thread_slices + g.async_slices}
                  | {ns(b) for *_, b in g.thread_slices + g.async_slices} | set(window))
    t0, t1 = sorted(data.draw(st.tuples(st.sampled_from(ends), st.sampled_from(ends))))

    # What should come out, from the generator's own intervals and the rule by hand (absolute ns:
    # quarter-µs times are exact, so the file's clock needs no origin).
    written = [(n, "thread", a, b) for _, _, n, a, b in g.thread_slices] + [(n, "async", a, b) for _, n, a, b in g.async_slices]
    want = Counter((n, kind, round(a * 1000), round(b * 1000)) for n, kind, a, b in written
                   if next(_selected([(n, ns(a), ns(b))], t0, t1), None))
    irows, crows = instant_rows(store, t0, t1), counter_rows(store, t0, t1)
    try:
        plan = export_range(store, out, t0, t1, overwrite=True)
    except UsageError:  # nothing to export is refused, not written
        assert not want and len(irows) == len(crows) == 0
        return
    assert plan.counts["slices"] == sum(want.values())
    again = load_trace(out, cache=False)

    def absolute(st_, r: int) -> tuple:  # ns on the file's own clock (origins are exact quarter µs)
        base = round(st_.origin_us * 1000)
        s = st_.slices
        kind = st_.tracks[int(s.track[r])].kind
        return (st_.name(r), "async" if kind == "async" else "thread", base + int(s.start_ns[r]), base + int(s.end_ns[r]))

    assert Counter(absolute(again, r) for r in range(len(again.slices))) == want
    assert len(again.instants) == len(irows)
    assert len(again.counters) == len(crows)
    assert len(again.flows) == plan.counts["flows"]
    assert all("partly overlap" in w for w in again.warnings), again.warnings  # whole pairs, nothing broken
    names = {(t.pid, t.tid): (t.process_name, t.name) for t in store.tracks if t.kind in ("thread", "gpu")}
    for t in again.tracks:  # the exported M events name the same processes and threads
        if t.kind in ("thread", "gpu"):
            assert (t.process_name, t.name) == names[(t.pid, t.tid)]
