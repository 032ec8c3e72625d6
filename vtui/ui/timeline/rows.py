"""The timeline's rows as arrays: a trace of a million tracks has a million rows or more, and the
screen shows a few dozen. ``build_rows`` lays them out with whole-array passes (a header per
group, then each track's lanes, its instants / counter row and its memory series), and a
``RowList`` reads as the list of ``Row`` it replaces, making a Row only for the index asked.
Plain Python over the store, no Textual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import overload

import numpy as np

from vtui.store.store import TraceStore
from vtui.store.tracks import COUNTER
from vtui.store.tracktable import KIND_CODE

HEADER = -2  # Row.lane of a group's header row (a process, or the pinned tracks)
SERIES = -3  # Row.lane of a derived counter row (memory from [memory] instants): Row.series says which
PENDING = -2  # Row.series of a memory row whose series are still being built (drawn "computing…")
POINTS = -1  # Row.lane of a track's instants / counter row
_BLOCK = 4096  # rows made at a time when iterating


@dataclass(frozen=True)
class Row:
    track: int
    lane: int  # -1: the track's instants / counter row
    first: bool  # first row of its track (where the label goes)
    more: int = 0  # on a collapsed track's last row: how many lanes are folded away
    group: tuple = ()  # a header row: the key of the group it heads (what folding keys on)
    series: int = -1  # a SERIES row: its index into ``memory_series(store)`` (PENDING: not built yet)


class RowList(Sequence[Row]):
    """Rows as columns; ``find`` answers "which row shows this lane" without a scan."""

    def __init__(self, cols: dict[str, np.ndarray], keys: list[tuple], track_start: np.ndarray,
                 track_shown: np.ndarray, track_points: np.ndarray) -> None:
        self.cols = cols  # track, lane, first, more, group (index into keys, -1: none), series
        self.keys = keys
        self._start = track_start  # per track id: its first row after the header, -1: no rows
        self._shown = track_shown  # per track id: lane rows shown
        self._points = track_points  # per track id: has an instants / counter row

    def __len__(self) -> int:
        return len(self.cols["track"])

    @overload
    def __getitem__(self, i: int) -> Row: ...

    @overload
    def __getitem__(self, i: slice) -> list[Row]: ...

    def __getitem__(self, i: int | slice) -> Row | list[Row]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        k = int(i)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(f"row {i} out of range")
        c = self.cols
        g = int(c["group"][k])
        return Row(int(c["track"][k]), int(c["lane"][k]), bool(c["first"][k]), int(c["more"][k]),
                   self.keys[g] if g >= 0 else (), int(c["series"][k]))

    def __iter__(self) -> Iterator[Row]:
        keys = self.keys
        for at in range(0, len(self), _BLOCK):  # in blocks: a loop that stops early makes few Rows
            c = {name: arr[at : at + _BLOCK].tolist() for name, arr in self.cols.items()}
            for track, lane, first, more, g, series in zip(c["track"], c["lane"], c["first"], c["more"], c["group"],
                                                           c["series"]):
                yield Row(track, lane, first, more, keys[g] if g >= 0 else (), series)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RowList, list)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def empty(cls) -> RowList:
        none = np.zeros(0, dtype=np.int64)
        return cls({k: none for k in ("track", "lane", "first", "more", "group", "series")}, [], none, none, none)

    def stop_lines(self) -> np.ndarray:
        """The rows the track list's cursor stops on: headers and each track's first row."""
        return np.flatnonzero((self.cols["lane"] == HEADER) | self.cols["first"])

    def header_line(self, key: tuple) -> int:
        """The header row of the group ``key``, -1 if none."""
        g = next((i for i, k in enumerate(self.keys) if k == key), -1)
        if g < 0:
            return -1
        hits = np.flatnonzero((self.cols["group"] == g) & (self.cols["lane"] == HEADER))
        return int(hits[0]) if len(hits) else -1

    def first_line(self, track: int) -> int:
        """The first row of ``track`` (where its label goes), -1 if it has none shown."""
        return int(self._start[track]) if 0 <= track < len(self._start) else -1

    def find(self, track: int, lane: int) -> int:
        """The row of ``track``'s ``lane`` (a lane >= 0, or POINTS), -1 where it is not shown."""
        if not 0 <= track < len(self._start) or self._start[track] < 0:
            return -1
        start, shown = int(self._start[track]), int(self._shown[track])
        if 0 <= lane < shown:
            return start + lane
        if lane == POINTS and self._points[track]:
            return start + shown
        return -1


def build_rows(store: TraceStore, order: np.ndarray, group: np.ndarray, keys: list[tuple], folded: AbstractSet,
               expanded: AbstractSet, lane_cap: int, series_of: Callable[[int], list[int]]) -> RowList:
    """The rows of the tracks ``order`` (ids, grouped: ``group`` ascending, an index into ``keys``):
    each group's header, then unless it is folded each track's rows. A track deeper than
    ``lane_cap + 1`` lanes shows ``lane_cap`` unless expanded; ``series_of(track)`` gives the
    memory series drawn below a track with instants."""
    c = store.tracks.columns
    n_tracks = len(store.tracks)
    order = np.asarray(order, dtype=np.int64)
    group = np.asarray(group, dtype=np.int64)
    lanes = c["lanes"][order].astype(np.int64)
    wide = np.isin(order, np.fromiter(expanded, dtype=np.int64, count=len(expanded)))
    shown = np.where(wide | (lanes <= lane_cap + 1), lanes, lane_cap)
    with_instants = c["instant_count"][order] > 0
    points = with_instants | (c["kind"][order] == KIND_CODE[COUNTER])
    series_lists = [series_of(int(t)) for t in order[with_instants]]
    n_series = np.zeros(len(order), dtype=np.int64)
    n_series[with_instants] = [len(s) for s in series_lists]
    series_flat = np.array([k for s in series_lists for k in s], dtype=np.int64)
    series_start = np.concatenate(([0], np.cumsum(n_series)[:-1])) if len(order) else n_series
    open_group = np.array([k not in folded for k in keys], dtype=bool)
    per_track = np.where(open_group[group], shown + points + n_series, 0) if len(order) else n_series

    # Items: group j's header, then its tracks; track i is item i + group[i] + 1.
    n_groups = len(keys)
    group_start = np.searchsorted(group, np.arange(n_groups))
    header_item = group_start + np.arange(n_groups)
    track_item = np.arange(len(order)) + group + 1
    n_items = len(order) + n_groups
    is_header = np.zeros(n_items, dtype=bool)
    is_header[header_item] = True
    item_pos = np.empty(n_items, dtype=np.int64)  # into order: a header stands for its group's first track
    item_pos[track_item] = np.arange(len(order))
    item_pos[header_item] = group_start
    item_group = np.full(n_items, -1, dtype=np.int64)
    item_group[header_item] = np.arange(n_groups)
    item_rows = np.ones(n_items, dtype=np.int64)
    item_rows[track_item] = per_track
    item_first_row = np.concatenate(([0], np.cumsum(item_rows)[:-1])) if n_items else item_rows

    row_item = np.repeat(np.arange(n_items), item_rows)
    off = np.arange(len(row_item)) - item_first_row[row_item]  # row within its item
    pos = item_pos[row_item]
    header = is_header[row_item]
    sh, pt = shown[pos], points[pos]
    in_lanes = ~header & (off < sh)
    at_points = ~header & ~in_lanes & (off == sh) & pt
    lane = np.where(header, HEADER, np.where(in_lanes, off, np.where(at_points, POINTS, SERIES)))
    series = np.full(len(row_item), -1, dtype=np.int64)
    on_series = lane == SERIES
    series[on_series] = series_flat[(series_start[pos] + off - sh - pt)[on_series]]
    cols = {
        "track": order[pos], "lane": lane, "first": (in_lanes & (off == 0)) | (at_points & (sh == 0)),
        "more": np.where(in_lanes & (off == sh - 1), lanes[pos] - sh, 0), "group": item_group[row_item],
        "series": series,
    }
    track_start = np.full(n_tracks, -1, dtype=np.int64)
    has_rows = per_track > 0
    track_start[order[has_rows]] = item_first_row[track_item[has_rows]]
    track_shown = np.zeros(n_tracks, dtype=np.int64)
    track_shown[order] = shown
    track_points = np.zeros(n_tracks, dtype=bool)
    track_points[order] = points
    return RowList(cols, keys, track_start, track_shown, track_points)
