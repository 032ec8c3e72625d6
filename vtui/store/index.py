"""IntervalIndex: per track, lanes of non-overlapping slices, each a contiguous row range.

Slices are stored sorted by (track, lane, start). Within a lane no two slices overlap,
so starts and ends are both sorted and "which slices overlap [t0, t1]" is two binary
searches per lane: O(log n + k), returned as row ranges (no copying).
"""

from __future__ import annotations

import numpy as np

from vtui.store.tables import SliceTable


class IntervalIndex:
    def __init__(self, slices: SliceTable, n_tracks: int) -> None:
        self._start = slices.start_ns
        self._end = slices.end_ns
        n = len(slices)
        track, lane = slices.track, slices.lane
        # Row offsets where a new (track, lane) run begins.
        if n:
            change = np.flatnonzero((track[1:] != track[:-1]) | (lane[1:] != lane[:-1])) + 1
            run_starts = np.concatenate(([0], change))
        else:
            run_starts = np.zeros(0, dtype=np.int64)
        run_ends = np.append(run_starts[1:], n).astype(np.int64)
        run_track = track[run_starts] if n else np.zeros(0, dtype=np.int64)
        run_lane = lane[run_starts] if n else np.zeros(0, dtype=np.int64)
        self._lanes: list[list[tuple[int, int]]] = [[] for _ in range(n_tracks)]
        for t, ln, a, b in zip(run_track.tolist(), run_lane.tolist(), run_starts.tolist(), run_ends.tolist()):
            lanes = self._lanes[t]
            while len(lanes) < ln:  # a lane with no slices (cannot happen for nesting, kept safe)
                lanes.append((a, a))
            lanes.append((a, b))

    def track_rows(self, track: int) -> tuple[int, int]:
        """Row range [a, b) of all the track's slices (lanes are stored one after another)."""
        lanes = self._lanes[track]
        return (lanes[0][0], lanes[-1][1]) if lanes else (0, 0)

    def lane_count(self, track: int) -> int:
        return len(self._lanes[track])

    def lane_rows(self, track: int, lane: int) -> tuple[int, int]:
        """Row range [a, b) of one lane."""
        return self._lanes[track][lane]

    def lane_window(self, track: int, lane: int, t0: int, t1: int) -> tuple[int, int]:
        """Rows [lo, hi) of ``lane`` whose slice overlaps [t0, t1] (ends inclusive)."""
        a, b = self._lanes[track][lane]
        lo = a + int(np.searchsorted(self._end[a:b], t0, side="left"))
        hi = a + int(np.searchsorted(self._start[a:b], t1, side="right"))
        return lo, max(lo, hi)

    def query(self, track: int, t0: int, t1: int) -> np.ndarray:
        """All slice rows of ``track`` overlapping [t0, t1], lane by lane."""
        parts = [np.arange(*self.lane_window(track, ln, t0, t1)) for ln in range(len(self._lanes[track]))]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

