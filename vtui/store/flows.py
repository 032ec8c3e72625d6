"""Bind flow events (s/t/f and bind_id/flow_in/flow_out) to the slices they connect."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtui.store.index import IntervalIndex
from vtui.store.tables import FlowTable, SliceTable


@dataclass
class FlowEvents:
    """The v1 flow events, one entry per event (parallel arrays)."""

    group: np.ndarray  # int64: one value per (source, cat, name, id)
    kind: np.ndarray  # int8: 0 = s, 1 = t, 2 = f
    ts_ns: np.ndarray  # int64
    track: np.ndarray  # int32 thread track
    enclosing: np.ndarray  # bool: bind to the enclosing slice (s, t, and f with bp "e")
    order: np.ndarray  # int64 merged row (file position), for ties and to find the event again
    source: np.ndarray  # int16 source file
    name_id: np.ndarray  # int32
    cat_id: np.ndarray  # int32


def enclosing_slices(
    slices: SliceTable, index: IntervalIndex, nested_lanes: list[int], track: np.ndarray, ts: np.ndarray
) -> np.ndarray:
    """Deepest slice on ``track`` with start <= ts <= end, per point; -1 where none."""
    out = np.full(len(ts), -1, dtype=np.int64)
    for t in np.unique(track).tolist():
        if t < 0:
            continue
        sel = np.flatnonzero(track == t)
        pts = ts[sel]
        found = np.full(len(sel), -1, dtype=np.int64)
        for lane in range(index.lane_count(t)):
            a, b = index.lane_rows(t, lane)
            if b <= a:
                continue
            k = np.searchsorted(slices.start_ns[a:b], pts, side="right") - 1
            rows = a + np.maximum(k, 0)
            ok = (k >= 0) & (slices.end_ns[rows] >= pts)
            if lane >= nested_lanes[t]:  # overlap lanes only fill gaps
                ok &= found < 0
            found = np.where(ok, rows, found)  # nesting lanes go deeper: later wins
        out[sel] = found
    return out


def next_slices(slices: SliceTable, index: IntervalIndex, track: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """First slice on ``track`` starting at or after ts (outermost on ties); -1 where none."""
    out = np.full(len(ts), -1, dtype=np.int64)
    for t in np.unique(track).tolist():
        if t < 0:
            continue
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


def build_flows(
    slices: SliceTable,
    index: IntervalIndex,
    nested_lanes: list[int],
    events: FlowEvents,
    v2: list[tuple[int, int, int, bool, bool]],
) -> tuple[FlowTable, dict[str, int]]:
    """Edges from v1 chains (s → t… → f) and from v2 bindings.

    ``v2`` holds (slice row, group, ts_ns, flow_in, flow_out) for slices with a bind_id.
    Returns the table and counts of one-sided flows for the warnings.
    """
    stats = {"flow_starts_without_end": 0, "flow_ends_without_start": 0, "flow_ends_unbound": 0}
    src_rows: list[int] = []
    dst_rows: list[int] = []
    names: list[int] = []
    cats: list[int] = []
    src_events: list[int] = []  # merged rows of the s/t and t/f events of each edge (-1 for v2)
    dst_events: list[int] = []
    sources: list[int] = []
    if len(events.ts_ns):
        bound = enclosing_slices(slices, index, nested_lanes, events.track, events.ts_ns)
        nxt_mask = ~events.enclosing
        if nxt_mask.any():
            bound[nxt_mask] = next_slices(slices, index, events.track[nxt_mask], events.ts_ns[nxt_mask])
        stats["flow_ends_unbound"] = int((bound < 0).sum())
        order = np.lexsort((events.order, events.ts_ns, events.group))
        g_l = events.group[order].tolist()
        k_l = events.kind[order].tolist()
        b_l = bound[order].tolist()
        n_l = events.name_id[order].tolist()
        c_l = events.cat_id[order].tolist()
        o_l = events.order[order].tolist()
        s_l = events.source[order].tolist()
        current_group = None
        current = None  # slice row where the open chain stands, or None
        current_event = -1
        for g, kind, row, nm, ct, ev, src in zip(g_l, k_l, b_l, n_l, c_l, o_l, s_l):
            if g != current_group:
                if current is not None:
                    stats["flow_starts_without_end"] += 1
                current_group, current = g, None
            if kind == 0:
                if current is not None:
                    stats["flow_starts_without_end"] += 1
                current, current_event = row, ev
                continue
            if current is None:
                if kind == 2:
                    stats["flow_ends_without_start"] += 1
                continue
            src_rows.append(current)
            dst_rows.append(row)
            names.append(nm)
            cats.append(ct)
            src_events.append(current_event)
            dst_events.append(ev)
            sources.append(src)
            current = row if kind == 1 else None
            current_event = ev
        if current is not None:
            stats["flow_starts_without_end"] += 1
    # v2: a slice with flow_out starts a flow; the next one of the same id with flow_in ends it.
    v2_sorted = sorted(v2, key=lambda item: (item[1], item[2]))
    current_group = None
    current = None
    for row, group, _ts, flow_in, flow_out in v2_sorted:
        if group != current_group:
            current_group, current = group, None
        if flow_in and current is not None:
            src_rows.append(current)
            dst_rows.append(row)
            names.append(int(slices.name_id[row]))
            cats.append(int(slices.cat_id[row]))
            src_events.append(-1)
            dst_events.append(-1)
            sources.append(int(slices.source[row]))
            current = None
        if flow_out:
            current = row
    src = np.array(src_rows, dtype=np.int64)
    dst = np.array(dst_rows, dtype=np.int64)
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
        name_id=np.array(names, dtype=np.int32)[keep],
        cat_id=np.array(cats, dtype=np.int32)[keep],
        src_event=np.array(src_events, dtype=np.int64)[keep],
        dst_event=np.array(dst_events, dtype=np.int64)[keep],
        source=np.array(sources, dtype=np.int16)[keep],
    )
    return table, stats
