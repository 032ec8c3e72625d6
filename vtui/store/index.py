"""IntervalIndex: per track, lanes of non-overlapping slices, each a contiguous row range.

Slices are stored sorted by (track, lane, start). Within a lane no two slices overlap,
so starts and ends are both sorted and "which slices overlap [t0, t1]" is two binary
searches per lane: O(log n + k), returned as row ranges (no copying).
"""

from __future__ import annotations

import bisect

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
        # Flat lists, not a list per track: a million tracks cost ~1 s in Python objects on every
        # reopen. Track t's runs are first[t]:first[t + 1], one per lane in lane order.
        self._first: list[int] = np.searchsorted(run_track, np.arange(n_tracks + 1)).tolist()
        self._run_start: list[int] = run_starts.tolist()
        self._run_end: list[int] = run_ends.tolist()
        self._run_lane: list[int] = run_lane.tolist()

    def track_rows(self, track: int) -> tuple[int, int]:
        """Row range [a, b) of all the track's slices (lanes are stored one after another)."""
        a, b = self._first[track], self._first[track + 1]
        return (self._run_start[a], self._run_end[b - 1]) if b > a else (0, 0)

    def lane_count(self, track: int) -> int:
        a, b = self._first[track], self._first[track + 1]
        return self._run_lane[b - 1] + 1 if b > a else 0

    def lane_rows(self, track: int, lane: int) -> tuple[int, int]:
        """Row range [a, b) of one lane."""
        a, b = self._first[track], self._first[track + 1]
        k = a + lane
        if not (k < b and self._run_lane[k] == lane):  # a lane with no slices (cannot happen for nesting, kept safe)
            k = bisect.bisect_left(self._run_lane, lane, a, b)
            if not (0 <= lane and k < b and self._run_lane[k] == lane):
                if not 0 <= lane < self.lane_count(track):
                    raise IndexError(f"lane {lane} of track {track}")
                return self._run_start[k], self._run_start[k]
        return self._run_start[k], self._run_end[k]

    def lane_window(self, track: int, lane: int, t0: int, t1: int) -> tuple[int, int]:
        """Rows [lo, hi) of ``lane`` whose slice overlaps [t0, t1] (ends inclusive)."""
        a, b = self.lane_rows(track, lane)
        lo = a + int(np.searchsorted(self._end[a:b], t0, side="left"))
        hi = a + int(np.searchsorted(self._start[a:b], t1, side="right"))
        return lo, max(lo, hi)

    def query(self, track: int, t0: int, t1: int) -> np.ndarray:
        """All slice rows of ``track`` overlapping [t0, t1], lane by lane."""
        parts = [np.arange(*self.lane_window(track, ln, t0, t1)) for ln in range(self.lane_count(track))]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

