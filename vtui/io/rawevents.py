"""Copy chosen events out of a trace file exactly as written (for export)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np

from vtui.io.jsonscan import scan_trace
from vtui.io.nsys import is_sqlite, nsys_events
from vtui.io.reader import open_trace_data


class _CopySink:
    """Receives every event's raw bytes in file order and hands on those whose ordinal is wanted."""

    def __init__(self, wanted: np.ndarray, write: Callable[[msgspec.Raw], object]) -> None:
        self.wanted = wanted  # sorted unique ordinals
        self.write = write
        self.rows = 0
        self.copied = 0

    def add(self, events: list[msgspec.Raw]) -> None:
        n = len(events)
        lo = int(np.searchsorted(self.wanted, self.rows))
        hi = int(np.searchsorted(self.wanted, self.rows + n))
        for ordinal in self.wanted[lo:hi].tolist():
            self.write(events[ordinal - self.rows])
        self.copied += hi - lo
        self.rows += n


def copy_events(path: str | Path, ordinals: np.ndarray, write: Callable[[msgspec.Raw], object],
                progress: Callable[[float], None] | None = None) -> int:
    """Hand the source bytes of the events at ``ordinals`` (as the loader numbered them) to
    ``write``, in file order, as the scan meets them; returns how many.

    Streams: a plain file is memory-mapped and a big gzip inflated to a temp file, as for a load,
    and no event is kept after it is written (exporting 10 % of 1 GB held 2 GB before).
    """
    if is_sqlite(path):  # an Nsight Systems export: its events written as Chrome-trace JSON
        picked = nsys_events(path, ordinals)
        for raw in picked:
            write(raw)
        return len(picked)
    data, _warnings, data_path, spilled = open_trace_data(Path(path), None)
    try:
        sink = _CopySink(np.unique(np.asarray(ordinals, dtype=np.int64)), write)
        scan_trace(data, sink, progress, raw=True)  # type: ignore[arg-type]
        return sink.copied
    finally:
        if not isinstance(data, bytes):
            data.close()
        if spilled and data_path:
            os.unlink(data_path)


def pick_events(path: str | Path, ordinals: np.ndarray,
                progress: Callable[[float], None] | None = None) -> list[bytes]:
    """The source bytes of the events at ``ordinals``, in file order (small selections only:
    they are all held in memory; `copy_events` streams)."""
    out: list[bytes] = []
    copy_events(path, ordinals, lambda raw: out.append(bytes(raw)), progress)
    return out
