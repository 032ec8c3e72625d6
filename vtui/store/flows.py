"""Bind flow events (s/t/f and bind_id/flow_in/flow_out) to the slices they connect."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from vtui.store.build_thread import in_threads
from vtui.store.correlate import reconcile
from vtui.store.grouping import distinct_ids
from vtui.store.index import IntervalIndex
from vtui.store.tables import FlowTable, SliceTable


@dataclass
class FlowEvents:
    """The v1 flow events, one entry per event (parallel arrays)."""

    group: np.ndarray  # int64: one value per (source, cat, name, kind of id)
    id_val: np.ndarray  # int64: the id (see Merged.id_val); a chain is one group and one id
    kind: np.ndarray  # int8: 0 = s, 1 = t, 2 = f
    ts_ns: np.ndarray  # int64
    track: np.ndarray  # int32 thread track
    enclosing: np.ndarray  # bool: bind to the enclosing slice (s, t, and f with bp "e")
    order: np.ndarray  # int64 merged row (file position), for ties and to find the event again
    source: np.ndarray  # int16 source file
    name_id: np.ndarray  # int32
    cat_id: np.ndarray  # int32


@dataclass
class FlowChains:
    """The edges of the v1 flow chains (see ``chain_edges``), as positions in the events. They
    depend on the events only, so a big build finds them while it nests the slices."""

    at: np.ndarray  # int64 event at each edge's end
    before: np.ndarray  # int64 event at its start
    starts_without_end: int
    ends_without_start: int
    ends_after_end: int = 0  # f events whose id's chain an earlier f already closed (see chain_edges)


def flow_chains(events: FlowEvents) -> FlowChains:
    """Sort the events by (group, id, ts, file order) and find the chains' edges."""
    order = np.lexsort((events.order, events.ts_ns, events.id_val, events.group))
    edge, prev, counts = chain_edges(events.group[order], events.id_val[order], events.kind[order])
    return FlowChains(at=order[edge], before=order[prev], starts_without_end=counts[0], ends_without_start=counts[1],
                      ends_after_end=counts[2])


def enclosing_slices(slices: SliceTable, index: IntervalIndex, track: np.ndarray, ts: np.ndarray, threads: int = 1
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The slice a point binds to on ``track``: of the slices with start <= ts <= end, the one that
    started last (a slice starting exactly at ts beats one still running from before it — a kernel
    that overlaps its predecessor on a stream, a call that starts at its parent's start); then the
    shortest (the inner of two that start together); then the later in the file. That is the
    deepest open slice for properly nested ones, whatever lane drawing put them on. -1 where none.

    Also returns, per point, how many lanes hold a slice starting exactly there (1: a sure bind).
    ``threads``: the points are split over that many threads (each point's answer is its own)."""
    out = np.full(len(ts), -1, dtype=np.int64)
    exact = np.zeros(len(ts), dtype=np.int64)
    work = [(t, np.flatnonzero(track == t)) for t in distinct_ids(track)]
    if threads > 1 and len(ts) >= SPLIT_MIN:  # a track's points cut so that each thread gets ~as many
        step = -(-len(ts) // threads)
        work = [(t, sel[i : i + step]) for t, sel in work for i in range(0, len(sel), step)]
    batches: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(max(1, min(threads, len(work))))]
    load = [0] * len(batches)
    for t, sel in work:  # the biggest to the least loaded thread (a million tiny tracks: a few batches)
        k = load.index(min(load))
        batches[k].append((t, sel))
        load[k] += len(sel)
    in_threads([partial(_enclose, slices, index, ts, batch, out, exact) for batch in batches], threads)
    return out, exact


SPLIT_MIN = 100_000  # flow points: below this the split costs more than it saves


def _enclose(slices: SliceTable, index: IntervalIndex, ts: np.ndarray, work: list[tuple[int, np.ndarray]],
             out: np.ndarray, exact: np.ndarray) -> None:
    """``enclosing_slices`` for the points ``sel`` of each (track, sel); writes their rows only."""
    for t, sel in work:
        pts = ts[sel]
        found = np.full(len(sel), -1, dtype=np.int64)
        f_start = np.zeros(len(sel), dtype=np.int64)
        f_end = np.zeros(len(sel), dtype=np.int64)
        f_ord = np.zeros(len(sel), dtype=np.int64)
        hits = np.zeros(len(sel), dtype=np.int64)
        for lane in range(index.lane_count(t)):
            a, b = index.lane_rows(t, lane)
            if b <= a:
                continue
            # In a lane slices do not overlap: the last one starting at or before ts is the only
            # candidate (of two touching at ts, the one starting there).
            k = np.searchsorted(slices.start_ns[a:b], pts, side="right") - 1
            rows = a + np.maximum(k, 0)
            st, en = slices.start_ns[rows], slices.end_ns[rows]
            od = slices.ordinal[rows].astype(np.int64)
            ok = (k >= 0) & (en >= pts)
            hits += ok & (st == pts)
            better = ok & ((found < 0) | (st > f_start) | ((st == f_start) & ((en < f_end) | ((en == f_end) & (od > f_ord)))))
            found = np.where(better, rows, found)
            f_start = np.where(better, st, f_start)
            f_end = np.where(better, en, f_end)
            f_ord = np.where(better, od, f_ord)
        out[sel] = found
        exact[sel] = hits


def next_slices(slices: SliceTable, index: IntervalIndex, track: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """First slice on ``track`` starting at or after ts (outermost on ties); -1 where none."""
    out = np.full(len(ts), -1, dtype=np.int64)
    for t in distinct_ids(track):
        sel = np.flatnonzero(track == t)
        pts = ts[sel]
        best = np.full(len(sel), -1, dtype=np.int64)
        best_start = np.full(len(sel), np.iinfo(np.int64).max, dtype=np.int64)
        for lane in range(index.lane_count(t)):
            a, b = index.lane_rows(t, lane)
            if b <= a:
                continue
            k = a + np.searchsorted(slices.start_ns[a:b], pts, side="left")
            ok = k < b
            rows = np.where(ok, k, a)
            st = slices.start_ns[rows]
            better = ok & (st < best_start)
            best = np.where(better, rows, best)
            best_start = np.where(better, st, best_start)
        out[sel] = best
    return out


def chain_edges(group: np.ndarray, id_val: np.ndarray, kind: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int]]:
    """The edges of v1 flow chains, events sorted by (group, id, ts, file order).

    A chain is an ``s`` followed by ``t`` steps and closed by an ``f``, within one group and id: each
    ``t`` or ``f`` reached from an open chain is an edge from the chain's previous event (its
    ``s`` or last ``t``). A ``t`` or ``f`` with no open chain is dropped; an ``s`` while a chain
    is open is ignored (Perfetto and Catapult: ``s A, s C, f D`` is A→D) and counted as a start
    without end. Returns (edge positions, their predecessors' positions, (starts without end,
    ends without start, ends after end)): an ``f`` dropped after an earlier ``f`` closed its id's
    chain is counted apart from one whose id never started (Kineto writes a graph replay so: one
    ``s`` at the cudaGraphLaunch, an ``f`` at each of its kernels). Vectorised: a chain is open after an event iff the last non-``t`` up
    to it, within its group, is an ``s`` (an ``s`` opens or leaves open, an ``f`` closes).
    """
    n = len(kind)
    pos = np.arange(n)
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = (group[1:] != group[:-1]) | (id_val[1:] != id_val[:-1])
    group_start = np.maximum.accumulate(np.where(new_group, pos, 0))
    last_non_t = np.maximum.accumulate(np.where(kind != 1, pos, -1))
    before = np.full(n, -1)
    before[1:] = last_non_t[:-1]  # the last non-t strictly before each event
    open_before = (before >= group_start) & (kind[np.maximum(before, 0)] == 0)
    reached = (kind != 0) & open_before
    # The events a chain really passes through: an s that opened it, a t that it reached.
    opening = (kind == 0) & ~open_before
    ignored_starts = int(((kind == 0) & open_before).sum())
    active = opening | ((kind == 1) & reached)
    last_active = np.maximum.accumulate(np.where(active, pos, -1))
    prev = np.full(n, -1)
    prev[1:] = last_active[:-1]
    # A chain still open at its group's end had no f.
    last_in_group = np.ones(n, dtype=bool)
    last_in_group[:-1] = new_group[1:]
    open_after = (kind == 0) | ((kind == 1) & open_before)
    starts_without_end = int((last_in_group & open_after).sum())
    dropped = (kind == 2) & ~reached
    started = np.maximum.accumulate(np.where(kind == 0, pos, -1)) >= group_start  # an s of this chain came before
    ends_after_end = int((dropped & started).sum())
    ends_without_start = int(dropped.sum()) - ends_after_end
    edge = np.flatnonzero(reached)
    return edge, prev[edge], (starts_without_end + ignored_starts, ends_without_start, ends_after_end)


def build_flows(
    slices: SliceTable,
    index: IntervalIndex,
    events: FlowEvents,
    v2: list[tuple[int, int, int, bool, bool, int]],
    args_blob=b"",
    chains: FlowChains | None = None,
    threads: int = 1,
) -> tuple[FlowTable, dict[str, int]]:
    """Edges from v1 chains (s → t… → f) and from v2 bindings.

    ``v2`` holds (slice row, group, ts_ns, flow_in, flow_out, file order) for slices with a bind_id.
    v1 edges with an end not surely bound (not exactly at the start of the one slice starting
    there) whose slices both carry a ``correlation`` arg are checked against it (see
    ``correlate``; ``args_blob`` holds the slices' args). Returns the table and counts for the
    warnings (one-sided flows, ends moved or kept by correlation). ``chains``: ``flow_chains(events)``
    if already found; ``threads``: over how many threads the binding of the events may split.
    """
    stats = {"flow_starts_without_end": 0, "flow_ends_without_start": 0, "flow_ends_after_end": 0, "flow_ends_unbound": 0,
             "flows_rebound_by_correlation": 0, "flows_correlation_disagree": 0}
    parts: list[dict[str, np.ndarray]] = []  # edges from v1 chains, then from v2 bindings
    if len(events.ts_ns):
        bound, exact = enclosing_slices(slices, index, events.track, events.ts_ns, threads)
        nxt_mask = ~events.enclosing
        if nxt_mask.any():
            bound[nxt_mask] = next_slices(slices, index, events.track[nxt_mask], events.ts_ns[nxt_mask])
        # Sure: the event sits exactly at the start of the one slice that starts there (Kineto
        # writes both ends so). Only edges with an end that is not sure pay for decoding args.
        sure = (bound >= 0) & events.enclosing & (exact == 1)
        sure &= slices.start_ns[np.maximum(bound, 0)] == events.ts_ns if len(slices) else False
        stats["flow_ends_unbound"] = int((bound < 0).sum())
        chains = chains or flow_chains(events)
        stats["flow_starts_without_end"] += chains.starts_without_end
        stats["flow_ends_without_start"] += chains.ends_without_start
        stats["flow_ends_after_end"] += chains.ends_after_end
        at, before = chains.at, chains.before
        src, dst, checked = reconcile(slices, index, args_blob, bound[before], bound[at],
                                      (events.track[before], events.ts_ns[before]), (events.track[at], events.ts_ns[at]),
                                      ~(sure[before] & sure[at]))
        stats.update(checked)
        # src/dst events: merged rows of the s/t and t/f events of each edge (-1 for v2)
        parts.append({"src": src, "dst": dst, "name": events.name_id[at], "cat": events.cat_id[at],
                      "src_event": events.order[before], "dst_event": events.order[at], "source": events.source[at]})
    # v2: a slice with flow_out opens the flow of its bind_id; every later one with flow_in ends
    # one (one producer, several consumers: an edge each, the flow stays open, as Perfetto's
    # FlowTracker), until another flow_out takes over. (Perfetto ignores that second flow_out,
    # flow_duplicate_id: Chrome reuses a pointer as bind_id, and Perfetto then joins every later
    # consumer to the first producer; README, importer rules.) A flow_in with no open flow joins
    # nothing and is counted. Ties in time keep file order.
    v2_sorted = sorted(v2, key=lambda item: (item[1], item[2], item[5]))
    current_group = None
    current = None
    v2_src: list[int] = []
    v2_dst: list[int] = []
    for row, group, _ts, flow_in, flow_out, _order in v2_sorted:
        if group != current_group:
            current_group, current = group, None
        if flow_in and current is None and not flow_out:
            stats["flow_ends_without_start"] += 1
        elif flow_in and current is not None and current != row:
            v2_src.append(current)
            v2_dst.append(row)
        if flow_out:
            current = row
    if v2_src:
        dst_rows = np.array(v2_dst, dtype=np.int64)
        none = np.full(len(dst_rows), -1, dtype=np.int64)
        parts.append({"src": np.array(v2_src, dtype=np.int64), "dst": dst_rows, "name": slices.name_id[dst_rows],
                      "cat": slices.cat_id[dst_rows], "src_event": none, "dst_event": none,
                      "source": slices.source[dst_rows]})

    def joined(key: str, dtype) -> np.ndarray:
        return np.concatenate([p[key] for p in parts]).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)

    src, dst = joined("src", np.int64), joined("dst", np.int64)
    keep = (src >= 0) | (dst >= 0)
    src, dst = src[keep], dst[keep]

    def col(values: np.ndarray, rows: np.ndarray, fill) -> np.ndarray:
        return np.where(rows >= 0, values[np.maximum(rows, 0)], fill) if len(values) else np.full(len(rows), fill)

    table = FlowTable(
        src_slice=src.astype(np.int32),
        dst_slice=dst.astype(np.int32),
        src_ts_ns=col(slices.start_ns, src, -1).astype(np.int64),
        dst_ts_ns=col(slices.start_ns, dst, -1).astype(np.int64),
        src_track=col(slices.track, src, -1).astype(np.int32),
        dst_track=col(slices.track, dst, -1).astype(np.int32),
        name_id=joined("name", np.int32)[keep],
        cat_id=joined("cat", np.int32)[keep],
        src_event=joined("src_event", np.int64)[keep],
        dst_event=joined("dst_event", np.int64)[keep],
        source=joined("source", np.int16)[keep],
    )
    return table, stats
