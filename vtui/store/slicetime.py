"""The range rule, in one place: which slices a time range selects, their durations clipped to
it, and their self time.

- A slice with a duration is in [t0, t1] when it overlaps it by more than a point
  (``start < t1`` and ``end > t0``); a zero-length slice is in when ``t0 <= start <= t1``.
  Zero-length slices are slices: they are counted, with a clipped duration of 0.
- Clipped duration: the slice's interval cut to [t0, t1] (Perfetto's interval intersection).
- Self time: the clipped duration minus the length of the *union* of its direct children's
  clipped intervals (each cut to the parent too), so it is never negative and never above the
  duration, even where children overlap each other.

Every analysis (stats, insights, diff), the app and the Parquet export use these functions.
Analyses take a range as one ``TimeRange`` value (built by ``time_range`` where the user gives it,
checked by ``over``), never as loose ``t0, t1`` with a side selection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from vtui.store.containment import self_time

if TYPE_CHECKING:
    from vtui.store.store import TraceStore

WIDE = 0.05  # ranges wider than this share of the trace use a vectorised scan instead of the index


def in_range(start: np.ndarray, end: np.ndarray, t0: int, t1: int) -> np.ndarray:
    """Per slice: does [t0, t1] select it (the rule above)."""
    return np.where(end > start, (start < t1) & (end > t0), (start >= t0) & (start <= t1))


def track_mask(store: TraceStore, tracks: np.ndarray | None) -> np.ndarray:
    """Boolean mask over track ids (all True when ``tracks`` is None)."""
    mask = np.zeros(len(store.tracks), dtype=bool)
    if tracks is None:
        mask[:] = True
    else:
        mask[np.asarray(tracks, dtype=np.int64)] = True
    return mask


def rows_by_index(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> np.ndarray:
    """Sorted rows in [t0, t1] on ``tracks``, lane by lane through the interval index:
    O(lanes · log n + k), the fast way for a narrow range."""
    index = store.index
    ids = np.arange(len(store.tracks), dtype=np.int64) if tracks is None else np.asarray(tracks, dtype=np.int64)
    parts = []
    for track in ids.tolist():
        for lane in range(index.lane_count(track)):
            lo, hi = index.lane_window(track, lane, t0, t1)
            if hi > lo:
                parts.append(np.arange(lo, hi, dtype=np.int64))
    if not parts:
        return np.zeros(0, dtype=np.int64)
    rows = np.concatenate(parts)
    return np.sort(rows[in_range(store.slices.start_ns[rows], store.slices.end_ns[rows], t0, t1)])


def rows_by_scan(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> np.ndarray:
    """The same rows by one vectorised pass over every slice: faster for wide ranges."""
    s = store.slices
    if t0 <= 0 and t1 >= store.span_ns:
        if tracks is None:
            return np.arange(len(s), dtype=np.int64)
        keep = np.ones(len(s), dtype=bool)
    else:
        keep = in_range(s.start_ns, s.end_ns, t0, t1)
    if tracks is not None:
        keep &= track_mask(store, tracks)[s.track]
    return np.flatnonzero(keep)


def range_rows(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> np.ndarray:
    """Sorted slice rows in [t0, t1] on ``tracks`` (all when None), by whichever way is faster."""
    wide = (t1 - t0) >= WIDE * max(int(store.span_ns), 1)
    return rows_by_scan(store, t0, t1, tracks) if wide else rows_by_index(store, t0, t1, tracks)


def every_row(store: TraceStore, rows: np.ndarray) -> bool:
    """``rows`` is every slice, in order (the whole trace selected): no gather or mapping needed."""
    n, rows = len(store.slices), np.asarray(rows)
    return bool(len(rows) == n and n and rows[0] == 0 and rows[-1] == n - 1 and (rows[1:] > rows[:-1]).all())


def clipped_bounds(store: TraceStore, rows: np.ndarray, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of ``rows`` cut to [t0, t1]; end >= start."""
    s = store.slices
    every = every_row(store, rows)
    start = np.maximum(s.start_ns if every else s.start_ns[rows], t0)
    end = np.minimum(s.end_ns if every else s.end_ns[rows], t1)
    np.maximum(end, start, out=end)
    return np.asarray(start), np.asarray(end)


def clipped_durations(store: TraceStore, rows: np.ndarray, t0: int, t1: int) -> np.ndarray:
    """Durations of ``rows`` cut to [t0, t1] (0 for a zero-length slice or one outside)."""
    start, end = clipped_bounds(store, rows, t0, t1)
    return end - start


def self_times(store: TraceStore, rows: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Self time of each of ``rows`` given their (clipped) intervals: duration minus the union of
    the intervals of its direct children among ``rows``, each cut to the parent's interval.

    ``rows`` must hold every child that overlaps the range (a range selection on whole tracks does).
    """
    rows = np.asarray(rows, dtype=np.int64)
    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    if every_row(store, rows):  # positions are the rows: no mapping needed
        return self_time(store.slices.parent, np.asarray(start, dtype=np.int64), np.asarray(end, dtype=np.int64))
    position = np.full(len(store.slices), -1, dtype=np.int64)  # slice row -> index in rows
    position[rows] = np.arange(len(rows))
    parent = store.slices.parent[rows].astype(np.int64)
    ppos = np.where(parent >= 0, position[np.maximum(parent, 0)], -1)
    return self_time(ppos, np.asarray(start, dtype=np.int64), np.asarray(end, dtype=np.int64))


@dataclass
class RangeSlices:
    """The slices one range selects: rows (sorted), clipped bounds, clipped and self time."""

    t0: int
    t1: int
    rows: np.ndarray
    start: np.ndarray  # clipped to the range
    end: np.ndarray
    _store: TraceStore = field(repr=False)

    @property
    def clip(self) -> np.ndarray:
        return self.end - self.start

    @cached_property
    def self_ns(self) -> np.ndarray:
        return self_times(self._store, self.rows, self.start, self.end)

    def mask(self, per_slice: np.ndarray) -> np.ndarray:
        """Positions (into ``rows``) where a per-slice boolean mask is true."""
        return np.flatnonzero(per_slice[self.rows])


def range_slices(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> RangeSlices:
    """Everything a range selects, with clipped durations; self time on first use."""
    rows = range_rows(store, t0, t1, tracks)
    start, end = clipped_bounds(store, rows, t0, t1)
    return RangeSlices(t0, t1, rows, start, end, store)


@dataclass(frozen=True, eq=False)
class TimeRange:
    """One time range of one store, resolved once where the user gives it (a CLI option, the app's
    range) and handed as it is to every analysis: [t0, t1] in store ns inside the trace, and the
    slices it selects on every track, computed once on first use and shared by the analyses.

    Build it with ``time_range``; an analysis given one checks it with ``over`` (cheap: identity)."""

    store: TraceStore = field(repr=False)
    t0: int
    t1: int

    def __post_init__(self) -> None:
        if not 0 <= self.t0 <= self.t1 <= int(self.store.span_ns):
            raise ValueError(f"range {self.t0}–{self.t1} ns is not inside the trace (0–{int(self.store.span_ns)})")

    @cached_property
    def slices(self) -> RangeSlices:
        """The slices the range selects on every track, computed once on first use."""
        return range_slices(self.store, self.t0, self.t1)

    @property
    def span_ns(self) -> int:
        return self.t1 - self.t0

    @property
    def whole(self) -> bool:
        """Is this the whole trace."""
        return self.t0 == 0 and self.t1 == int(self.store.span_ns)


def time_range(store: TraceStore, t0: int | None = None, t1: int | None = None) -> TimeRange:
    """The one rule for a range: no start is the trace's start (0), no end its end (``span_ns``);
    both clamped into the trace (a range past its end selects nothing but zero-length slices at
    the very end)."""
    span = int(store.span_ns)
    a = 0 if t0 is None else min(max(int(t0), 0), span)
    b = span if t1 is None else min(max(int(t1), a), span)
    return TimeRange(store, a, b)


def over(store: TraceStore, rng: TimeRange | None) -> TimeRange:
    """The range an analysis of ``store`` works on: ``rng`` (refused when it is another store's),
    or the whole trace when None."""
    if rng is None:
        return time_range(store)
    if rng.store is not store:
        raise ValueError("this range belongs to another trace's store")
    return rng
