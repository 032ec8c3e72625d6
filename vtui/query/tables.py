"""Perfetto's tables over a store, as Arrow tables that share the store's columns.

Names and columns follow Perfetto's trace processor (``slice``, ``thread_track``, ``thread``,
``process``, ``track``, ``counter``, ``counter_track``, ``flow``), so its everyday queries run
unchanged; times are int64 ns from the trace start. ``slice`` holds the instants too, as
Perfetto's JSON importer files them (dur 0, after the store's slices: ``perfetto_stack``);
``instant`` is vtui's own (every point event). Names are the trace's exact text (a thread it did
not name has NULL; a counter series is Perfetto's ``name[ id: ID] key``). A store of several
files (a folder of ranks) gives every table a ``rank`` column. Each table is built once per
store, when a query first names it (``store.memo`` keeps it: the store never changes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vtui.query import arrowcols as ac
from vtui.store.grouping import group_key
from vtui.store.store import TraceStore
from vtui.store.tracks import COUNTER, GLOBAL, GPU, THREAD
from vtui.store.tracktable import KIND_CODE, KINDS

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
    """pids/tids: ints, NULL where the trace named them with a string (kept in ``name``) or with
    something else that is not a number in int64."""
    pa = ac.pyarrow()
    return pa.array([v if isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 else None
                     for v in values], type=pa.int64())


def _texts(values: list[str | None]) -> Any:
    pa = ac.pyarrow()
    try:
        return pa.array(values, type=pa.string())
    except (UnicodeEncodeError, pa.ArrowException):
        return pa.array([None if v is None else v.encode("utf-8", "replace").decode() for v in values], type=pa.string())


# ---- processes and threads: from the track columns, whole-array passes -----------------------------
# A million tracks (one per thread) would be a million ``Track`` objects walked in Python: seconds.
# Texts and pid/tid values are made once per distinct value (``TrackTable``'s lists) and taken per row.
def _first_seen(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: 0, 1, ... in the order its key first appears; and the first row of each, in that order."""
    if not len(key):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse.reshape(-1)], first[order].astype(np.int64)


class Ids:
    """upid per (source, pid) and utid per (source, pid, tid) of a thread track, numbered in track
    order; pid/tid values compare by their ``TrackTable`` ids (1, True and "1" stay apart)."""

    def __init__(self, store: TraceStore) -> None:
        c = store.tracks.columns
        n = len(store.tracks)
        kind = c["kind"]
        self.upid = np.full(n, -1, dtype=np.int64)  # per track; -1: a global track
        self.utid = np.full(n, -1, dtype=np.int64)  # per track; -1: not a thread track
        scoped = np.flatnonzero(kind != KIND_CODE[GLOBAL])
        self.upid[scoped], first = _first_seen(group_key(c["source"][scoped], c["pid"][scoped]))
        self.process_rows = scoped[first]  # the first track of each process
        self.thread_tracks = t = np.flatnonzero(np.isin(kind, [KIND_CODE[k] for k in THREAD_KINDS]))
        self.utid[t], first = _first_seen(group_key(c["source"][t], c["pid"][t], c["tid"][t]))
        self.thread_rows = t[first]  # the first track of each thread


def ids(store: TraceStore) -> Ids:
    return memo(store, "ids", lambda: Ids(store))


def _taken(values: Any, codes: np.ndarray, null_where: np.ndarray | None = None) -> Any:
    """``values[codes]`` as an Arrow string (or int) array; NULL where ``null_where``."""
    pa = ac.pyarrow()
    index = pa.array(np.asarray(codes, dtype=np.int64), mask=null_where)
    return values.take(index)


def _coded(store: TraceStore, method: str, rows: np.ndarray) -> Any:
    """A per-track text of ``rows``: ``TrackTable.titles`` / ``process_titles`` (each distinct text
    made once), or ``label``: the two joined as ``Track.label`` joins them, by Arrow, not per track."""
    if method == "label":
        pc = ac.pyarrow_compute()
        return pc.binary_join_element_wise(_coded(store, "process_titles", rows), _coded(store, "titles", rows), " / ")

    def build() -> tuple[np.ndarray, Any]:
        code, texts = getattr(store.tracks, method)()
        return code, _texts(texts)

    code, texts = memo(store, f"track_{method}", build)
    return _taken(texts, code[rows])


def _kinds(store: TraceStore, rows: np.ndarray) -> Any:
    return _taken(_texts(list(KINDS)), store.tracks.columns["kind"][rows])


def _distinct(values: list[Any], refs: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """The values ``refs`` point at, each once, and per ref its index among them (a table of one
    process need not read a million tids)."""
    used, code = np.unique(refs, return_inverse=True)
    return [values[i] for i in used.tolist()], code.reshape(-1)


def _id_ints(store: TraceStore, column: str, rows: np.ndarray) -> Any:
    """pid / tid of ``rows`` as ints, NULL where the value is not one (``_int_or_null``)."""
    values, code = _distinct(store.tracks.ids, store.tracks.columns[column][rows])
    return _taken(_int_or_null(values), code)


def _text_or(store: TraceStore, column: str, rows: np.ndarray, pid_text: bool = False) -> Any:
    """A text column of ``rows`` (thread or process name, exact), NULL where empty; ``pid_text``: the
    pid where it is text (Perfetto's importer names a process by its string pid on every event, so
    that name outlasts a process_name)."""
    t = store.tracks
    names, code = _distinct(t.text, t.columns[column][rows])
    texts: list[str | None] = [v or None for v in names]
    if pid_text:
        pids, pid_code = _distinct(t.ids, t.columns["pid"][rows])
        is_text = np.array([isinstance(v, str) and v != "" for v in pids], dtype=bool)
        code = np.where(is_text[pid_code], len(names) + pid_code, code)
        texts += [v if isinstance(v, str) else None for v in pids]
    return _taken(_texts(texts), code)


def _int64(values: np.ndarray) -> Any:
    """int64 ids, NULL where -1."""
    return ac.column(np.ascontiguousarray(values, dtype=np.int64), null_where=values < 0)


def _rank_rows(store: TraceStore, rows: np.ndarray, cols: dict[str, Any]) -> dict[str, Any]:
    return _with_rank(store, cols, store.tracks.columns["source"][rows].astype(np.int64))


def process_table(store: TraceStore) -> Any:
    got = ids(store)
    rows = got.process_rows
    return ac.table(_rank_rows(store, rows, {
        "upid": ac.column(np.arange(len(rows), dtype=np.int64)),
        "pid": _id_ints(store, "pid", rows),
        "name": _text_or(store, "process_name", rows, pid_text=True),
        "label": _coded(store, "process_titles", rows),  # vtui's title (GPU labels, rank prefix)
        "start_ts": _no_times(len(rows)),
        "end_ts": _no_times(len(rows)),
    }))


def _no_times(n: int) -> Any:
    """Perfetto's start_ts / end_ts of a thread or process: known from scheduling data, which a JSON
    trace has not (trace_processor leaves them NULL too)."""
    pa = ac.pyarrow()
    return pa.nulls(n, type=pa.int64())


def thread_table(store: TraceStore) -> Any:
    got = ids(store)
    rows = got.thread_rows
    tid = _id_ints(store, "tid", rows)
    return ac.table(_rank_rows(store, rows, {
        "utid": ac.column(np.arange(len(rows), dtype=np.int64)),
        "tid": tid,
        "name": _text_or(store, "exact_name", rows),  # NULL for a thread the trace did not name
        "upid": _int64(got.upid[rows]),
        "is_main_thread": ac.pyarrow_compute().equal(tid, _id_ints(store, "pid", rows)),  # tid == pid
        "start_ts": _no_times(len(rows)),
        "end_ts": _no_times(len(rows)),
    }))


def thread_track_table(store: TraceStore) -> Any:
    got = ids(store)
    mine = got.thread_tracks
    return ac.table(_rank_rows(store, mine, {
        "id": ac.column(mine.astype(np.int64)),
        "utid": _int64(got.utid[mine]),
        "name": _coded(store, "titles", mine),
        "type": _kinds(store, mine),
    }))


def _track_names(store: TraceStore, rows: np.ndarray) -> Any:
    """Track names: a counter series' as Perfetto's JSON importer names it (``name[ id: ID] key``),
    the others' titles."""
    pc = ac.pyarrow_compute()
    counter = ac.column(store.tracks.kind_is(COUNTER)[rows])
    return pc.if_else(counter, _text_or(store, "exact_name", rows), _coded(store, "titles", rows))


def track_table(store: TraceStore) -> Any:
    got = ids(store)
    rows = np.arange(len(store.tracks), dtype=np.int64)
    return ac.table(_rank_rows(store, rows, {
        "id": ac.column(rows),
        "name": _track_names(store, rows),
        "type": _kinds(store, rows),  # thread, gpu, async, counter, process, global
        "upid": _int64(got.upid),
        "utid": _int64(got.utid),
        "label": _coded(store, "label", rows),  # what --track REGEX matches
    }))


def memory_counters(store: TraceStore) -> list[Any]:
    """The profiler's ``[memory]`` series (``vtui.analysis.gpu.memory_tracks``) as counter tracks after
    the store's tracks (ids ``len(store.tracks)`` on): vtui's own, trace_processor makes none."""
    from vtui.analysis.gpu.memory_tracks import memory_series

    return memory_series(store) if len(store.instants) else []


def counter_track_table(store: TraceStore) -> Any:
    got = ids(store)
    pa = ac.pyarrow()
    mine = np.flatnonzero(store.tracks.kind_is(COUNTER)).astype(np.int64)
    memory = memory_counters(store)
    on = np.array([m.track for m in memory], dtype=np.int64)  # the track each series is drawn under
    return ac.table(_rank_rows(store, np.concatenate([mine, on]), {
        "id": ac.column(np.concatenate([mine, len(store.tracks) + np.arange(len(memory), dtype=np.int64)])),
        "name": pa.concat_arrays([_text_or(store, "exact_name", mine),  # Perfetto's JSON importer's name
                                  _texts([f"[memory] {m.title}" for m in memory])]),
        "upid": _int64(got.upid[np.concatenate([mine, on])]),
    }))


# ---- events: numpy columns handed over as they are -------------------------------------------------
def has_args(store: TraceStore) -> np.ndarray:
    """Per ``slice`` row (the store's slices, then the instants Perfetto files as slices): has it args."""
    from vtui.query.perfetto_stack import instant_rows

    def build() -> np.ndarray:
        has = store.slices.args_len > 0
        if store.extra_end_args:
            has[np.fromiter(store.extra_end_args, dtype=np.int64, count=len(store.extra_end_args))] = True
        return np.concatenate([has, store.instants.args_len[instant_rows(store)] > 0])

    return memo(store, "has_args", build)


def _two(head: Any, tail: Any) -> Any:
    """The store's slices' column and the instants' as one column of two chunks (nothing copied)."""
    return ac.pyarrow().chunked_array([head, tail])


def slice_table(store: TraceStore) -> Any:
    """Perfetto's ``slice``: the store's slices (id = row), then the instants as slices of dur 0
    (``vtui.query.perfetto_stack``), parent and depth by Perfetto's stack."""
    from vtui.query.perfetto_stack import instant_rows, perfetto_tree

    s, i = store.slices, store.instants
    rows = instant_rows(store)
    n, ids_ = len(s), slice_ids(store)
    parent, depth = perfetto_tree(store)
    every = np.arange(n + len(rows), dtype=np.int64) if len(rows) else ids_
    return ac.table(_with_rank(store, {
        "id": ac.column(every),
        "ts": _two(ac.column(s.start_ns), ac.column(i.ts_ns[rows])),
        "dur": _two(ac.column(s.dur_ns), ac.column(np.zeros(len(rows), dtype=np.int64))),
        "name": _two(ac.dictionary(s.name_id, words(store)), ac.dictionary(i.name_id[rows], words(store))),
        "category": _two(ac.dictionary(s.cat_id, words(store)), ac.dictionary(i.cat_id[rows], words(store))),
        "depth": ac.column(depth),
        "parent_id": ac.column(parent, null_where=parent < 0),
        "track_id": _two(ac.column(s.track), ac.column(i.track[rows])),
        "arg_set_id": ac.column(every, null_where=~has_args(store)),  # a slice's arg set is its id
    }, np.concatenate([s.source, i.source[rows]]) if len(rows) else s.source))


def instant_table(store: TraceStore) -> Any:
    """Every point event (instants, async steps, samples, objects …) with ids of its own."""
    i = store.instants
    return ac.table(_with_rank(store, {
        "id": ac.column(np.arange(len(i), dtype=np.int64)),
        "ts": ac.column(i.ts_ns),
        "name": ac.dictionary(i.name_id, words(store)),
        "category": ac.dictionary(i.cat_id, words(store)),
        "track_id": ac.column(i.track),
    }, i.source))


def counter_table(store: TraceStore) -> Any:
    """The counter samples, then the ``[memory]`` series' levels (bytes) on their tracks."""
    c = store.counters
    memory = memory_counters(store)
    sizes = [len(m.times_ns) for m in memory]
    on = np.repeat(np.arange(len(memory), dtype=np.int32) + len(store.tracks), sizes)
    source = store.tracks.columns["source"][np.repeat([m.track for m in memory], sizes).astype(np.int64)]
    times = [m.times_ns.astype(np.int64) for m in memory]
    values = [m.values.astype(np.float64) for m in memory]
    return ac.table(_with_rank(store, {
        "id": ac.column(np.arange(len(c) + len(on), dtype=np.int64)),
        "ts": _two(ac.column(c.ts_ns), ac.column(np.concatenate([np.zeros(0, np.int64), *times]))),
        "track_id": _two(ac.column(c.track.astype(np.int32, copy=False)), ac.column(on)),
        "value": _two(ac.column(c.value), ac.column(np.concatenate([np.zeros(0, np.float64), *values]))),
    }, np.concatenate([c.source, source.astype(c.source.dtype)])))


def flow_table(store: TraceStore) -> Any:
    f = store.flows
    return ac.table(_with_rank(store, {
        "id": ac.column(np.arange(len(f), dtype=np.int64)),
        "slice_out": ac.column(f.src_slice, null_where=f.src_slice < 0),
        "slice_in": ac.column(f.dst_slice, null_where=f.dst_slice < 0),
        "name": ac.dictionary(f.name_id, words(store)),
        "category": ac.dictionary(f.cat_id, words(store)),
    }, f.source))


def trace_bounds_table(store: TraceStore) -> Any:
    """Perfetto's ``trace_bounds``: one row, the trace's first and last time (ns from its start)."""
    pa = ac.pyarrow()
    return pa.table({"start_ts": pa.array([0], type=pa.int64()),
                     "end_ts": pa.array([int(store.span_ns)], type=pa.int64())})


BUILDERS: dict[str, Callable[[TraceStore], Any]] = {
    "trace_bounds": trace_bounds_table,
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
