"""Copy chosen events out of a trace file exactly as written (for export)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from vtui.io.jsonscan import scan_events_from, scan_trace
from vtui.io.nsys import is_sqlite, nsys_events
from vtui.io.reader import open_trace_data


class _AllCopied(Exception):
    """Raised by the sink once the last wanted event is written: a partial scan stops there."""


class _CopySink:
    """Receives every event's raw bytes in file order and hands on those whose ordinal is wanted."""

    def __init__(self, wanted: np.ndarray, write: Callable[[msgspec.Raw], object], first: int = 0,
                 stop_when_done: bool = False) -> None:
        self.wanted = wanted  # sorted unique ordinals
        self.write = write
        self.rows = first  # the ordinal of the next event the scan hands over
        self.copied = 0
        self.stop_when_done = stop_when_done

    def add(self, events: list[msgspec.Raw]) -> None:
        n = len(events)
        lo = int(np.searchsorted(self.wanted, self.rows))
        hi = int(np.searchsorted(self.wanted, self.rows + n))
        for ordinal in self.wanted[lo:hi].tolist():
            self.write(events[ordinal - self.rows])
        self.copied += hi - lo
        self.rows += n
        if self.stop_when_done and self.copied == len(self.wanted):
            raise _AllCopied


def copy_events(path: str | Path, ordinals: np.ndarray, write: Callable[[msgspec.Raw], object],
                progress: Callable[[float], None] | None = None,
                checkpoints: Sequence[Sequence[int]] = (), rewind: Callable[[], object] | None = None) -> int:
    """Hand the source bytes of the events at ``ordinals`` (as the loader numbered them) to
    ``write``, in file order, as the scan meets them; returns how many.

    Streams: a plain file is memory-mapped and a big gzip inflated to a temp file, as for a load,
    and no event is kept after it is written (exporting 10 % of 1 GB held 2 GB before).

    ``checkpoints`` (the load's ``[byte offset, ordinal]`` marks, see ``SourceInfo``): the scan
    starts at the last mark at or before the first wanted event and stops after the last one, so
    a narrow range costs what it copies, not the whole file. (A gzip is still inflated whole;
    only the decode is saved.) Should that partial scan find fewer events than wanted (a mark
    that does not fit the file), ``rewind()`` undoes what was written and the whole file is
    scanned as without marks: that full scan is the reference.
    """
    if is_sqlite(path):  # an Nsight Systems export: its events written as Chrome-trace JSON
        picked = nsys_events(path, ordinals)
        for raw in picked:
            write(raw)
        return len(picked)
    wanted = np.unique(np.asarray(ordinals, dtype=np.int64))
    data, _warnings, data_path, spilled = open_trace_data(Path(path), None)
    try:
        if len(wanted) and rewind is not None:
            got = _copy_from_mark(data, wanted, write, progress, checkpoints)
            if got == len(wanted):
                return got
            if got >= 0:
                rewind()
        sink = _CopySink(wanted, write)
        scan_trace(data, sink, progress, raw=True)  # type: ignore[arg-type]
        return sink.copied
    finally:
        if not isinstance(data, bytes):
            data.close()
        if spilled and data_path:
            os.unlink(data_path)


def _copy_from_mark(data, wanted: np.ndarray, write: Callable[[msgspec.Raw], object],
                    progress: Callable[[float], None] | None, checkpoints: Sequence[Sequence[int]]) -> int:
    """Copy ``wanted`` scanning from the mark before the first of them; how many were copied
    (-1: no usable mark, nothing written)."""
    marks = usable_marks(checkpoints, len(data))
    if marks is None:
        return -1
    positions, firsts = marks
    k = int(np.searchsorted(firsts, wanted[0], side="right")) - 1
    after = int(np.searchsorted(firsts, wanted[-1], side="right"))  # the first mark past the last wanted
    if k < 0 or data[int(positions[k]) : int(positions[k]) + 1] != b"{":
        return -1
    start = int(positions[k])
    stop = int(positions[after]) if after < len(positions) else len(data)  # about where the copy ends
    n = max(len(data), 1)

    def report(frac: float) -> None:  # the scan reports its position in the whole file
        if progress:
            progress(min(1.0, max(0.0, (frac * n - start) / max(stop - start, 1))))

    sink = _CopySink(wanted, write, first=int(firsts[k]), stop_when_done=True)
    try:
        scan_events_from(data, start, sink, report)
    except _AllCopied:
        pass
    return sink.copied


def usable_marks(checkpoints: Sequence[Sequence[int]], size: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The marks as (byte offsets, ordinals) when they can be trusted to describe a file of
    ``size`` bytes: pairs, both strictly ascending, inside the file; else None."""
    try:
        arr = np.asarray(checkpoints, dtype=np.int64)
    except (ValueError, TypeError, OverflowError):
        return None
    if arr.ndim != 2 or arr.shape[1] != 2 or not len(arr):
        return None
    positions, firsts = arr[:, 0], arr[:, 1]
    if positions[0] < 0 or firsts[0] < 0 or positions[-1] >= size or \
            (np.diff(positions) <= 0).any() or (np.diff(firsts) <= 0).any():
        return None
    return positions, firsts


def pick_events(path: str | Path, ordinals: np.ndarray,
                progress: Callable[[float], None] | None = None) -> list[bytes]:
    """The source bytes of the events at ``ordinals``, in file order (small selections only:
    they are all held in memory; `copy_events` streams)."""
    out: list[bytes] = []
    copy_events(path, ordinals, lambda raw: out.append(bytes(raw)), progress)
    return out
