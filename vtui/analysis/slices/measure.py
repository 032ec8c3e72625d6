"""The measure tool: what lies between two marked events."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtui.analysis.base.selection import slice_rows
from vtui.store.slicetime import clipped_bounds
from vtui.store.store import TraceStore


@dataclass(frozen=True)
class TrackActivity:
    track: int
    label: str
    events: int  # slices overlapping the interval
    busy_ns: int  # union of those slices, clipped to the interval


@dataclass(frozen=True)
class Measurement:
    a: tuple[int, int]  # (start, end) ns of mark A
    b: tuple[int, int]
    start_to_start: int  # b.start - a.start
    gap: int  # b.start - a.end: positive = idle gap between them, negative = they overlap
    end_to_end: int  # b.end - a.end
    overlap: int  # length of the intersection of A and B
    union: int  # length covered by A ∪ B
    interval: tuple[int, int]  # what the per-track activity covers: the gap, or A ∪ B's span when they touch
    activity: list[TrackActivity]


def measure(store: TraceStore, a: tuple[int, int], b: tuple[int, int],
            tracks: np.ndarray | None = None) -> Measurement:
    """Compare two events given as (start, end) ns; A is the earlier one (swapped if needed)."""
    if (b[0], b[1]) < (a[0], a[1]):
        a, b = b, a
    overlap = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = (a[1] - a[0]) + (b[1] - b[0]) - overlap
    gap = b[0] - a[1]
    interval = (a[1], b[0]) if gap > 0 else (min(a[0], b[0]), max(a[1], b[1]))
    return Measurement(a=a, b=b, start_to_start=b[0] - a[0], gap=gap, end_to_end=b[1] - a[1], overlap=overlap,
                       union=union, interval=interval, activity=activity(store, *interval, tracks))


def activity(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> list[TrackActivity]:
    """Per track with slices in [t0, t1]: how many, and how much of [t0, t1] they cover."""
    rows = slice_rows(store, t0, t1, tracks)
    out = []
    track_of = store.slices.track[rows]
    for track in np.unique(track_of).tolist():
        mine = rows[track_of == track]
        out.append(TrackActivity(track=track, label=store.tracks[track].label, events=len(mine),
                                 busy_ns=union_length(store, mine, t0, t1)))
    return out


def union_length(store: TraceStore, rows: np.ndarray, t0: int, t1: int) -> int:
    """Length of the union of the slices' intervals clipped to [t0, t1]."""
    if not len(rows):
        return 0
    start, end = clipped_bounds(store, rows, t0, t1)
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    reach = np.maximum.accumulate(end)
    # A new covered run starts where a slice begins after everything before it ended.
    new_run = np.empty(len(start), dtype=bool)
    new_run[0] = True
    new_run[1:] = start[1:] > reach[:-1]
    firsts = np.flatnonzero(new_run)
    lasts = np.append(firsts[1:] - 1, len(start) - 1)
    return int((reach[lasts] - start[firsts]).sum())
