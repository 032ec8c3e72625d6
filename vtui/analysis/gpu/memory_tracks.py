"""The profiler's ``[memory]`` instants as counter series for the timeline, as Perfetto draws them:
memory allocated (and reserved, where the trace has the allocator's totals) per process and device.

One series per (source, pid, device, total). The level is ``Total Allocated`` / ``Total Reserved``
where every event of the series has it, else the running sum of ``Bytes`` (relative to whatever
was allocated before the profile started, as in ``vtui.analysis.gpu.memory``). Computed once per store.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtui.analysis.gpu.memory import MEMORY_EVENT, _by_device, _by_device_columns, _int_columns, _memory_args
from vtui.store.store import TraceStore

_KEY, _BY_TRACK = ("memory_series",), ("memory_series", "by track")
_ROWS, _TRACKS = ("memory_series", "event rows"), ("memory_series", "tracks")


@dataclass(frozen=True)
class MemorySeries:
    """One counter line: a memory level (bytes) over time."""

    track: int  # the track that holds most of the series' events: its rows come after this track's
    title: str  # "cuda:0 allocated": the device first, so a cut keeps it
    times_ns: np.ndarray  # sorted
    values: np.ndarray  # bytes (int64)
    absolute: bool  # from the allocator's totals (else a running sum of Bytes)


def memory_series(store: TraceStore) -> list[MemorySeries]:
    """Every memory series of the trace (cached on the store: the store never changes)."""
    return store.memo(_KEY, lambda: _build(store))


def series_of_track(store: TraceStore, track: int) -> list[int]:
    """Indices (into ``memory_series``) of the series drawn below ``track``."""
    def build() -> dict[int, list[int]]:
        by_track: dict[int, list[int]] = {}
        for k, s in enumerate(memory_series(store)):
            by_track.setdefault(s.track, []).append(k)
        return by_track

    return store.memo(_BY_TRACK, build).get(track, [])


def memory_event_rows(store: TraceStore) -> np.ndarray:
    """The ``[memory]`` instants (rows of ``store.instants``) in time order, found by name id
    without reading their args (cached on the store)."""
    def build() -> np.ndarray:
        inst = store.instants
        ids = store.string_ids(MEMORY_EVENT) if len(inst) else []  # found once per store
        if not ids:
            return np.zeros(0, dtype=np.int64)
        rows = np.flatnonzero(np.isin(inst.name_id, ids))
        return rows[np.argsort(inst.ts_ns[rows], kind="stable")]

    return store.memo(_ROWS, build)


def memory_series_tracks(store: TraceStore) -> frozenset[int]:
    """The tracks the memory series will be drawn below, known before their args are read (the
    app holds their rows' places in its first frame)."""
    def build() -> frozenset[int]:
        rows = memory_event_rows(store)
        return frozenset(_series_track(store, rows[sel]) for sel in _by_process(store, rows))

    return store.memo(_TRACKS, build)


def _by_process(store: TraceStore, rows: np.ndarray) -> list[np.ndarray]:
    """Indices into ``rows`` (time-ordered [memory] instants), one array per process, each in time order."""
    if not len(rows):
        return []
    # The process of each event: (source, pid) through its track.
    # Numbered in order of each process's first track, from the columns (no Track per row).
    _, first, inverse = np.unique(store.tracks.process_ids(), return_index=True, return_inverse=True)
    procs = np.argsort(np.argsort(first, kind="stable"), kind="stable")[inverse.reshape(-1)]
    proc = procs[store.instants.track[rows]]
    by_proc = np.argsort(proc, kind="stable")  # each process's events together, still in time order
    return np.split(by_proc, np.flatnonzero(np.diff(proc[by_proc])) + 1)


def _series_track(store: TraceStore, rows: np.ndarray) -> int:
    """The track most of one process's memory events sit on (the allocating thread)."""
    on, count = np.unique(store.instants.track[rows], return_counts=True)
    return int(on[count.argmax()])


def _build(store: TraceStore) -> list[MemorySeries]:
    inst = store.instants
    rows = memory_event_rows(store)
    if not len(rows):
        return []
    out: list[MemorySeries] = []
    cols = _int_columns(store, rows)
    args = None if cols is not None else _memory_args(store, rows)
    for sel in _by_process(store, rows):
        times = inst.ts_ns[rows[sel]]
        if cols is not None:
            per, _ = _by_device_columns(times, [(v[sel], has[sel]) for v, has in cols])
        else:  # some value is not a plain integer: the event-by-event path
            assert args is not None
            per, _ = _by_device(times, [args[i] for i in sel.tolist()])
        track = _series_track(store, rows[sel])
        for dev, (ts, nbytes, allocated, reserved) in sorted(per.items(), key=lambda kv: (kv[0] == "cpu", kv[0])):
            absolute = allocated is not None
            level = allocated if allocated is not None else np.cumsum(nbytes)
            out.append(MemorySeries(track, f"{dev} allocated", ts, level, absolute))
            if reserved is not None and reserved.max(initial=0) > 0:  # (the CPU allocator reserves nothing)
                out.append(MemorySeries(track, f"{dev} reserved", ts, reserved, True))
    return out
