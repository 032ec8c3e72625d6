"""Columnar tables of the store: one numpy array per column, one row per event."""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np


class _Table:
    def __len__(self) -> int:
        return len(getattr(self, fields(self)[0].name))  # type: ignore[arg-type]

    def take(self, rows: np.ndarray):
        """A new table of the given rows (all columns)."""
        return type(self)(**{f.name: getattr(self, f.name)[rows] for f in fields(self)})  # type: ignore[arg-type]

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f.name).nbytes for f in fields(self))  # type: ignore[arg-type]


@dataclass
class SliceTable(_Table):
    """Slices (X, paired B/E, async b/e and S/F), sorted by (track, lane, start)."""

    start_ns: np.ndarray  # int64, relative to the trace origin
    end_ns: np.ndarray  # int64
    track: np.ndarray  # int32
    depth: np.ndarray  # int32 nesting depth
    lane: np.ndarray  # int32 display lane in the track
    parent: np.ndarray  # int32 row of the enclosing slice, -1 at the top
    name_id: np.ndarray  # int32 into strings
    cat_id: np.ndarray  # int32 into strings
    ordinal: np.ndarray  # int32 position of the (begin) event in its source file
    end_ordinal: np.ndarray  # int32 position of the matching end event (B/E, b/e, S/F), -1 for X
    source: np.ndarray  # int16 source file
    args_off: np.ndarray  # int64 into the args blob
    args_len: np.ndarray  # int32

    @cached_property
    def dur_ns(self) -> np.ndarray:
        """``end_ns - start_ns`` of every slice: computed once, then kept (read-only), so
        ``s.dur_ns[r]`` in a loop costs one lookup. (A plain property recomputed the whole
        column on every access: a whole-trace ``vtui search`` took ~55 min.)"""
        dur = self.end_ns - self.start_ns
        dur.flags.writeable = False
        return dur

    def durations(self, rows: np.ndarray | int | slice) -> np.ndarray:
        """``end_ns - start_ns`` of ``rows`` only (no whole column for a few rows)."""
        return self.end_ns[rows] - self.start_ns[rows]


@dataclass
class InstantTable(_Table):
    """Instants (i/I/R, async n and steps) and other point events kept as they are
    (P samples, N/O/D objects, clock sync...): ``ph`` tells which."""

    ts_ns: np.ndarray  # int64
    track: np.ndarray  # int32
    ph: np.ndarray  # int8 phase code (vtui.io.events.PHASES)
    name_id: np.ndarray  # int32
    cat_id: np.ndarray  # int32
    ordinal: np.ndarray  # int32
    source: np.ndarray  # int16
    args_off: np.ndarray  # int64
    args_len: np.ndarray  # int32


@dataclass
class CounterTable(_Table):
    """Counter samples (C): one series (track) per process, name, id and args key."""

    ts_ns: np.ndarray  # int64, sorted within each track
    track: np.ndarray  # int32
    value: np.ndarray  # float64
    ordinal: np.ndarray  # int32 position of the C event in its source file (one event, several series)
    source: np.ndarray  # int16


@dataclass
class FlowTable(_Table):
    """Flow arrows between slices (s/t/f and bind_id v2). -1 where an end is unbound."""

    src_slice: np.ndarray  # int32 slice row
    dst_slice: np.ndarray  # int32 slice row
    src_ts_ns: np.ndarray  # int64
    dst_ts_ns: np.ndarray  # int64
    src_track: np.ndarray  # int32
    dst_track: np.ndarray  # int32
    name_id: np.ndarray  # int32
    cat_id: np.ndarray  # int32
    src_event: np.ndarray  # int64 ordinal of the s/t event in its source file, -1 for bind_id flows
    dst_event: np.ndarray  # int64 ordinal of the t/f event, -1 for bind_id flows
    source: np.ndarray  # int16

