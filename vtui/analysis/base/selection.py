"""Which slices / instants / counter samples a time range and a set of tracks select.

Slices follow the one range rule of `vtui.store.slicetime` (re-exported here for the analyses);
an instant is in when ``t0 <= ts <= t1``.
"""

from __future__ import annotations

import numpy as np

from vtui.store.slicetime import clipped_durations, range_rows, rows_by_index, rows_by_scan, track_mask
from vtui.store.store import TraceStore

__all__ = ["all_tracks", "clipped_durations", "counter_rows", "instant_rows", "range_rows", "selected_rows",
           "slice_rows", "track_mask"]

slice_rows = rows_by_index  # narrow ranges: through the interval index
selected_rows = rows_by_scan  # the same rows by one vectorised pass (wide ranges)


def all_tracks(store: TraceStore) -> np.ndarray:
    return np.arange(len(store.tracks), dtype=np.int64)


def instant_rows(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> np.ndarray:
    ts = store.instants.ts_ns
    keep = (ts >= t0) & (ts <= t1) & track_mask(store, tracks)[store.instants.track]
    return np.flatnonzero(keep)


def counter_rows(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> np.ndarray:
    """Counter samples in [t0, t1], plus each series' last sample before t0 (its value holds into the range)."""
    c = store.counters
    on_track = track_mask(store, tracks)[c.track] if len(c) else np.zeros(0, dtype=bool)
    inside = on_track & (c.ts_ns >= t0) & (c.ts_ns <= t1)
    before = np.flatnonzero(on_track & (c.ts_ns < t0))
    if len(before):  # rows are sorted by (track, ts): the last row of each track's run
        last = before[np.append(c.track[before][1:] != c.track[before][:-1], True)]
        inside[last] = True
    return np.flatnonzero(inside)
