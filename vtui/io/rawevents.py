"""Copy chosen events out of a trace file exactly as written (for export)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import numpy as np

from vtui.io.jsonscan import scan_trace
from vtui.io.nsys import is_sqlite, nsys_events
from vtui.io.reader import read_trace_bytes


class _PickSink:
    """Receives every event's raw bytes in file order and keeps those whose ordinal is wanted."""

    def __init__(self, wanted: np.ndarray) -> None:
        self.wanted = wanted  # sorted unique ordinals
        self.rows = 0
        self.picked: list[msgspec.Raw] = []

    def add(self, events: list[msgspec.Raw]) -> None:
        n = len(events)
        lo = int(np.searchsorted(self.wanted, self.rows))
        hi = int(np.searchsorted(self.wanted, self.rows + n))
        for ordinal in self.wanted[lo:hi].tolist():
            self.picked.append(events[ordinal - self.rows])
        self.rows += n


def pick_events(path: str | Path, ordinals: np.ndarray,
                progress: Callable[[float], None] | None = None) -> list[msgspec.Raw]:
    """The source bytes of the events at ``ordinals`` (as the loader numbered them), in file order."""
    if is_sqlite(path):  # an Nsight Systems export: its events written as Chrome-trace JSON
        return nsys_events(path, ordinals)
    data, _warnings = read_trace_bytes(Path(path), None)
    sink = _PickSink(np.unique(np.asarray(ordinals, dtype=np.int64)))
    scan_trace(data, sink, progress, raw=True)  # type: ignore[arg-type]
    return sink.picked
