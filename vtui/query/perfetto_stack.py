"""Perfetto's ``slice`` rows beyond the store's slices, and their parent and depth by Perfetto's stack.

Perfetto's JSON importer files an instant (``i``/``I``/``R`` at any scope, an async ``n``) as a
slice of dur 0 on its track, args and all: those follow the store's slices in ``slice`` (ids
``len(store.slices)`` on, in the store's instant order). Their parent and depth, and those of
the store's zero-length slices, are the ones trace_processor's ``SliceTracker`` gives
(``src/trace_processor/importers/common/slice_tracker.cc``, ``MaybeCloseStack``):

- its stack is half-open: a slice that ends at t is closed before anything starting at t, so a
  zero-length slice or an instant at a slice's end is that slice's sibling (the store nests
  slices by closed containment, Catapult's rule, which puts it inside);
- zero-length ones at one time stack: each is inside the one before it on the track, in the
  order trace_processor's sorter hands them over (``trace_sorter.h``: at one time, X slices with
  a duration longest first, then the rest in file order).

Slices with a duration keep the store's parents (README, "Importer rules"). An instant on an
async track nests in the track's innermost open slice, whatever its id; a zero-length async
slice stays within its own id's tree (the store's), only leaving a parent that ends at its time.
"""

from __future__ import annotations

import numpy as np

from vtui.io.events import PH_CODE
from vtui.store.store import TraceStore
from vtui.store.tracks import ASYNC

SLICE_PHASES = [PH_CODE[p] for p in "iIRn"]  # the point events Perfetto files as slices


def instant_rows(store: TraceStore) -> np.ndarray:
    """Rows of ``store.instants`` that are slices in Perfetto (``slice`` ids ``len(store.slices)`` on)."""
    return store.memo(("query", "instant_rows"),
                      lambda: np.flatnonzero(np.isin(store.instants.ph, SLICE_PHASES)).astype(np.int64))


def perfetto_tree(store: TraceStore) -> tuple[np.ndarray, np.ndarray]:
    """Parent (-1 at the top) and depth of every ``slice`` row: the store's slices, then ``instant_rows``."""
    return store.memo(("query", "perfetto_tree"), lambda: _tree(store))


def _tree(store: TraceStore) -> tuple[np.ndarray, np.ndarray]:
    s, inst = store.slices, store.instants
    rows = instant_rows(store)
    n = len(s)
    zero = np.concatenate([s.end_ns == s.start_ns, np.ones(len(rows), dtype=bool)])
    if not zero.any():
        return s.parent, s.depth
    ts = np.concatenate([s.start_ns, inst.ts_ns[rows]])
    end = np.concatenate([s.end_ns, inst.ts_ns[rows]])
    track = np.concatenate([s.track, inst.track[rows]]).astype(np.int64)
    parent = np.concatenate([s.parent, np.full(len(rows), -1)]).astype(np.int64)
    # Only the tracks that hold a zero-length row are sorted again.
    mine = np.flatnonzero(np.isin(track, np.unique(track[zero])))
    ordinal = np.concatenate([s.ordinal, inst.ordinal[rows]]).astype(np.int64)[mine]
    # The sorter's order at one time: X slices with a duration (no end event) longest first, the
    # rest (B/b begins, zero-length slices, instants) after them in file order.
    is_x = np.concatenate([s.end_ordinal < 0, np.zeros(len(rows), dtype=bool)])[mine]
    key = np.where(is_x & ~zero[mine], ts[mine] - end[mine], 0)
    order = mine[np.lexsort((ordinal, key, ts[mine], track[mine]))]
    t, at = track[order], ts[order]
    same_time = np.zeros(len(order), dtype=bool)
    same_time[1:] = (t[1:] == t[:-1]) & (at[1:] == at[:-1])
    # The last slice with a duration before each position on its track (started before its time,
    # where nothing at its time came before it).
    last = np.maximum.accumulate(np.where(zero[order], -1, np.arange(len(order))))
    before = np.concatenate([[-1], last[:-1]])
    before = np.where((before >= 0) & (t[np.maximum(before, 0)] == t), before, -1)
    start_from = np.where(before >= 0, order[np.maximum(before, 0)], -1)
    async_track = store.tracks.kind_is(ASYNC)[t] & (order < n)  # zero-length async slices: their own id's tree
    start_from = np.where(async_track, parent[order], start_from)
    stack_top = same_time & ~async_track
    previous = np.concatenate([[-1], order[:-1]])
    is_zero = zero[order]
    parent[order[is_zero & stack_top]] = previous[is_zero & stack_top]
    walk = is_zero & ~stack_top
    who, cand = order[walk], start_from[walk]
    parent[who] = _leave_ended(cand, ts[who], ts, end, parent)
    return parent, _depths(parent, np.concatenate([s.depth, np.zeros(len(rows), dtype=s.depth.dtype)]), zero)


def _depths(parent: np.ndarray, depth: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """``depth`` (the store's) with the zero-length rows' set from their new parents: the other rows
    and all their ancestors keep theirs. A zero-length row's parent may be one too (a stack of
    them at one time): those are settled a level of the stack per pass."""
    pending = np.flatnonzero(zero)
    settled = ~zero
    while len(pending):
        up = parent[pending]
        ready = (up < 0) | settled[np.maximum(up, 0)]
        if not ready.any():  # (cannot happen: a parent comes before its child in the stack's order)
            break
        now = pending[ready]
        depth[now] = np.where(parent[now] < 0, 0, depth[np.maximum(parent[now], 0)] + 1)
        settled[now] = True
        pending = pending[~ready]
    return depth


def _leave_ended(cand: np.ndarray, at: np.ndarray, ts: np.ndarray, end: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """From each candidate, up its parents past the slices with a duration that end at or before
    ``at`` (closed on Perfetto's stack by then): the innermost one still open."""
    cand = cand.copy()
    live = np.flatnonzero(cand >= 0)
    while len(live):
        c = cand[live]
        closed = (end[c] <= at[live]) & (end[c] > ts[c])
        live = live[closed]
        cand[live] = parent[cand[live]]
        live = live[cand[live] >= 0]
    return cand
