"""Perfetto's tables over a store, as Arrow tables that share the store's columns.

Names and columns follow Perfetto's trace processor (``slice``, ``thread_track``, ``thread``,
``process``, ``track``, ``counter``, ``counter_track``, ``flow``), so its everyday queries run
unchanged; times are int64 ns from the trace start. ``instant`` is vtui's own (Perfetto files
instants as zero-length slices; here ``slice`` is exactly what ``vtui stats`` counts). A store
of several files (a folder of ranks) gives every table a ``rank`` column. Each table is built
once per store, when a query first names it (``store.memo`` keeps it: the store never changes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vtui.query import arrowcols as ac
from vtui.store.store import TraceStore
from vtui.store.tracks import COUNTER, GLOBAL, GPU, THREAD, Track

THREAD_KINDS = (THREAD, GPU)  # a GPU stream is a thread (pid = device, tid = stream), as in Perfetto's JSON import


def memo(store: TraceStore, name: str, build: Callable[[], Any]) -> Any:
    return store.memo(("query", name), build)


def words(store: TraceStore) -> Any:
    """The store's interned strings as one Arrow array (the dictionary of every name column)."""
    return memo(store, "strings", lambda: ac.strings(store.strings))


def slice_ids(store: TraceStore) -> np.ndarray:
    return memo(store, "slice_ids", lambda: np.arange(len(store.slices), dtype=np.int64))


def many_ranks(store: TraceStore) -> bool:
    return len(store.sources) > 1


def rank_per_source(store: TraceStore) -> np.ndarray:
    from vtui.export.parquet import rank_of  # the same rank rule as the Parquet export

    return np.array([rank_of(store, i) for i in range(len(store.sources))], dtype=np.int32)


def _with_rank(store: TraceStore, cols: dict[str, Any], source: np.ndarray) -> dict[str, Any]:
    if many_ranks(store):
        cols["rank"] = ac.column(rank_per_source(store)[source])
    return cols


def _int_or_null(values: list[Any]) -> Any:
    """pids/tids: ints, NULL where the trace named them with a string (kept in ``name``)."""
    pa = ac.pyarrow()
    return pa.array([v if isinstance(v, int) and -(2**63) <= v < 2**63 else None for v in values], type=pa.int64())


def _texts(values: list[str | None]) -> Any:
    pa = ac.pyarrow()
    try:
        return pa.array(values, type=pa.string())
    except (UnicodeEncodeError, pa.ArrowException):
        return pa.array([None if v is None else v.encode("utf-8", "replace").decode() for v in values], type=pa.string())


# ---- processes and threads: small (one row per track), plain Python ----------------------------
class Ids:
    """upid per (source, pid) and utid per thread track, in track order."""

    def __init__(self, store: TraceStore) -> None:
        self.upid_of: dict[tuple[int, Any], int] = {}
        self.utid_of_track: dict[int, int] = {}
        self.utid_key: dict[tuple[int, Any, Any], int] = {}
        self.processes: list[Track] = []  # first track of each process
        self.threads: list[Track] = []  # first track of each thread
        for t in store.tracks:
            if t.kind != GLOBAL and (t.source, t.pid) not in self.upid_of:
                self.upid_of[(t.source, t.pid)] = len(self.processes)
                self.processes.append(t)
            if t.kind in THREAD_KINDS:
                key = (t.source, t.pid, t.tid)
                if key not in self.utid_key:
                    self.utid_key[key] = len(self.threads)
                    self.threads.append(t)
                self.utid_of_track[t.id] = self.utid_key[key]

    def upid(self, t: Track) -> int | None:
        return None if t.kind == GLOBAL else self.upid_of[(t.source, t.pid)]


def ids(store: TraceStore) -> Ids:
    return memo(store, "ids", lambda: Ids(store))


def _rank_list(store: TraceStore, tracks: list[Track], cols: dict[str, Any]) -> dict[str, Any]:
    return _with_rank(store, cols, np.array([t.source for t in tracks], dtype=np.int64))


def process_table(store: TraceStore) -> Any:
    got = ids(store)
    procs = got.processes
    pa = ac.pyarrow()
    return ac.table(_rank_list(store, procs, {
        "upid": pa.array(range(len(procs)), type=pa.int64()),
        "pid": _int_or_null([p.pid for p in procs]),
        "name": _texts([p.process_name or (p.pid if isinstance(p.pid, str) else None) for p in procs]),
        "label": _texts([p.process_title for p in procs]),  # vtui's title (GPU labels, rank prefix)
    }))


def thread_table(store: TraceStore) -> Any:
    got = ids(store)
    threads = got.threads
    pa = ac.pyarrow()
    return ac.table(_rank_list(store, threads, {
        "utid": pa.array(range(len(threads)), type=pa.int64()),
        "tid": _int_or_null([t.tid for t in threads]),
        "name": _texts([t.name or None for t in threads]),
        "upid": pa.array([got.upid(t) for t in threads], type=pa.int64()),
    }))


def thread_track_table(store: TraceStore) -> Any:
    got = ids(store)
    mine = [t for t in store.tracks if t.kind in THREAD_KINDS]
    pa = ac.pyarrow()
    return ac.table(_rank_list(store, mine, {
        "id": pa.array([t.id for t in mine], type=pa.int64()),
        "utid": pa.array([got.utid_of_track[t.id] for t in mine], type=pa.int64()),
        "name": _texts([t.title for t in mine]),
        "type": _texts([t.kind for t in mine]),
    }))


def track_table(store: TraceStore) -> Any:
    got = ids(store)
    tracks = store.tracks
    pa = ac.pyarrow()
    return ac.table(_rank_list(store, tracks, {
        "id": pa.array([t.id for t in tracks], type=pa.int64()),
        "name": _texts([t.title for t in tracks]),
        "type": _texts([t.kind for t in tracks]),  # thread, gpu, async, counter, process, global
        "upid": pa.array([got.upid(t) for t in tracks], type=pa.int64()),
        "utid": pa.array([got.utid_of_track.get(t.id) for t in tracks], type=pa.int64()),
        "label": _texts([t.label for t in tracks]),  # what --track REGEX matches
    }))


def counter_track_table(store: TraceStore) -> Any:
    got = ids(store)
    mine = [t for t in store.tracks if t.kind == COUNTER]
    pa = ac.pyarrow()
    return ac.table(_rank_list(store, mine, {
        "id": pa.array([t.id for t in mine], type=pa.int64()),
        "name": _texts([t.title for t in mine]),
        "upid": pa.array([got.upid(t) for t in mine], type=pa.int64()),
    }))


# ---- events: numpy columns handed over as they are -------------------------------------------------
def has_args(store: TraceStore) -> np.ndarray:
    def build() -> np.ndarray:
        has = store.slices.args_len > 0
        if store.extra_end_args:
            has[np.fromiter(store.extra_end_args, dtype=np.int64, count=len(store.extra_end_args))] = True
        return has

    return memo(store, "has_args", build)


def slice_table(store: TraceStore) -> Any:
    s = store.slices
    ids_ = slice_ids(store)
    return ac.table(_with_rank(store, {
        "id": ac.column(ids_),
        "ts": ac.column(s.start_ns),
        "dur": ac.column(s.dur_ns),
        "name": ac.dictionary(s.name_id, words(store)),
        "category": ac.dictionary(s.cat_id, words(store)),
        "depth": ac.column(s.depth),
        "parent_id": ac.column(s.parent, null_where=s.parent < 0),
        "track_id": ac.column(s.track),
        "arg_set_id": ac.column(ids_, null_where=~has_args(store)),  # a slice's arg set is its id
    }, s.source))


def instant_table(store: TraceStore) -> Any:
    i = store.instants
    return ac.table(_with_rank(store, {
        "id": ac.column(np.arange(len(i), dtype=np.int64)),
        "ts": ac.column(i.ts_ns),
        "name": ac.dictionary(i.name_id, words(store)),
        "category": ac.dictionary(i.cat_id, words(store)),
        "track_id": ac.column(i.track),
    }, i.source))


def counter_table(store: TraceStore) -> Any:
    c = store.counters
    return ac.table(_with_rank(store, {
        "id": ac.column(np.arange(len(c), dtype=np.int64)),
        "ts": ac.column(c.ts_ns),
        "track_id": ac.column(c.track),
        "value": ac.column(c.value),
    }, c.source))


def flow_table(store: TraceStore) -> Any:
    f = store.flows
    return ac.table(_with_rank(store, {
        "id": ac.column(np.arange(len(f), dtype=np.int64)),
        "slice_out": ac.column(f.src_slice, null_where=f.src_slice < 0),
        "slice_in": ac.column(f.dst_slice, null_where=f.dst_slice < 0),
        "name": ac.dictionary(f.name_id, words(store)),
        "category": ac.dictionary(f.cat_id, words(store)),
    }, f.source))


BUILDERS: dict[str, Callable[[TraceStore], Any]] = {
    "slice": slice_table,
    "thread_track": thread_track_table,
    "thread": thread_table,
    "process": process_table,
    "track": track_table,
    "counter": counter_table,
    "counter_track": counter_track_table,
    "flow": flow_table,
    "instant": instant_table,
}
