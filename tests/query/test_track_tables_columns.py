"""The SQL tables of processes, threads and tracks (``thread``, ``process``, ``track``,
``thread_track``, ``counter_track``) and the ranks' device numbering come from the track columns in
whole-array passes. They must equal what the per-``Track`` code gave (kept here as the reference)
on every fixture, on traces of odd thread ids and on a generated many-tracks trace, and they must
make no ``Track`` object at all."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from benchmarks.many_tracks_synth import write_many_tracks
from tests.core.test_track_texts import _rows_made
from tests.core.test_trackset_columns import _odd_threads
from tests.helpers import FIXTURES
from vtui.analysis.ranks import tables as rank_tables_module
from vtui.analysis.ranks.tables import device_of_track, rank_tables
from vtui.load.trace import load_trace
from vtui.query import tables
from vtui.query.engine import run_query
from vtui.store.tracks import ASYNC, COUNTER, GLOBAL, GPU, THREAD, Track
from vtui.store.tracktable import TrackTable

pa = pytest.importorskip("pyarrow")
NAMES = ("thread", "process", "track", "thread_track", "counter_track")


# ---- the reference: the per-Track code these tables were built with before ---------------------
def _int_or_null(values: list[Any]) -> Any:
    return pa.array([v if isinstance(v, int) and -(2**63) <= v < 2**63 else None for v in values], type=pa.int64())


def _texts(values: list[str | None]) -> Any:
    try:
        return pa.array(values, type=pa.string())
    except (UnicodeEncodeError, pa.ArrowException):
        return pa.array([None if v is None else v.encode("utf-8", "replace").decode() for v in values], type=pa.string())


def _simple(store) -> dict[str, Any]:
    tracks = [store.tracks._make(k) for k in range(len(store.tracks))]
    upid_of: dict[tuple[int, Any], int] = {}
    utid_key: dict[tuple[int, Any, Any], int] = {}
    utid_of_track: dict[int, int] = {}
    procs: list[Track] = []
    threads: list[Track] = []
    for t in tracks:
        if t.kind != GLOBAL and (t.source, t.pid) not in upid_of:
            upid_of[(t.source, t.pid)] = len(procs)
            procs.append(t)
        if t.kind in tables.THREAD_KINDS:
            key = (t.source, t.pid, t.tid)
            if key not in utid_key:
                utid_key[key] = len(threads)
                threads.append(t)
            utid_of_track[t.id] = utid_key[key]

    def upid(t: Track) -> int | None:
        return None if t.kind == GLOBAL else upid_of[(t.source, t.pid)]

    def table(rows: list[Track], cols: dict[str, Any]) -> Any:
        if len(store.sources) > 1:
            cols["rank"] = pa.array(tables.rank_per_source(store)[np.array([t.source for t in rows], dtype=np.int64)])
        return pa.table(cols)

    i64, texts, ints = pa.int64(), _texts, _int_or_null
    thread_tracks = [t for t in tracks if t.kind in tables.THREAD_KINDS]
    counters = [t for t in tracks if t.kind == COUNTER]
    memory = tables.memory_counters(store)
    return {
        "process": table(procs, {
            "upid": pa.array(range(len(procs)), type=i64), "pid": ints([p.pid for p in procs]),
            # Perfetto's importer: a string pid names its process on every event; else the process_name
            "name": texts([p.pid if isinstance(p.pid, str) and p.pid else p.process_name or None for p in procs]),
            "label": texts([p.process_title for p in procs]),
            "start_ts": pa.nulls(len(procs), i64), "end_ts": pa.nulls(len(procs), i64)}),
        "thread": table(threads, {
            "utid": pa.array(range(len(threads)), type=i64), "tid": ints([t.tid for t in threads]),
            "name": texts([t.exact_name or None for t in threads]), "upid": pa.array([upid(t) for t in threads], type=i64),
            "is_main_thread": pa.array([None if tid is None or pid is None else tid == pid for tid, pid in
                                        zip(tables._int_or_null([t.tid for t in threads]).to_pylist(),
                                            tables._int_or_null([t.pid for t in threads]).to_pylist())],
                                       type=pa.bool_()),
            "start_ts": pa.nulls(len(threads), i64), "end_ts": pa.nulls(len(threads), i64)}),
        "thread_track": table(thread_tracks, {
            "id": pa.array([t.id for t in thread_tracks], type=i64),
            "utid": pa.array([utid_of_track[t.id] for t in thread_tracks], type=i64),
            "name": texts([t.title for t in thread_tracks]), "type": texts([t.kind for t in thread_tracks])}),
        "track": table(tracks, {
            "id": pa.array([t.id for t in tracks], type=i64),
            "name": texts([(t.exact_name or None) if t.kind == COUNTER else t.title for t in tracks]),
            "type": texts([t.kind for t in tracks]), "upid": pa.array([upid(t) for t in tracks], type=i64),
            "utid": pa.array([utid_of_track.get(t.id) for t in tracks], type=i64),
            "label": texts([t.label for t in tracks])}),
        "counter_track": table(counters + [tracks[m.track] for m in memory], {
            "id": pa.array([t.id for t in counters] + [len(tracks) + k for k in range(len(memory))], type=i64),
            "name": texts([t.exact_name or None for t in counters] + [f"[memory] {m.title}" for m in memory]),
            "upid": pa.array([upid(t) for t in counters] + [upid(tracks[m.track]) for m in memory], type=i64)}),
    }


def _simple_devices(store) -> np.ndarray:
    devices: dict[tuple[int, str], int] = {}
    return np.array([devices.setdefault((t.source, str(t.pid)), len(devices))
                     for t in (store.tracks._make(k) for k in range(len(store.tracks)))] or [0], dtype=np.int64)


# ---- stores -----------------------------------------------------------------------------------
_HOSTILE_PIDS = [1, "1", 1.0, True, None, "", " 7 ", -5, 2**63, 2**64, "gpu\x1b[31m", "\ud800", [1], {"a": 1}]


def _hostile_ids_trace(tmp_path):
    """pid/tid values of every JSON shape (digit strings, bools, floats, huge, lone surrogates,
    arrays) with process and thread names, counters and instants of each scope."""
    events: list[dict] = []
    for k, pid in enumerate(_HOSTILE_PIDS):
        for tid in (0, "0", k, None, "w\u202e", 2**70):
            ev = {"ph": "X", "name": f"op{k}", "pid": pid, "ts": k, "dur": 2}
            if tid is not None:
                ev["tid"] = tid
            events.append(ev)
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": k, "args": {"name": f"t\x07{k}" if k % 2 else ""}})
        if k % 3 == 0:
            events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"p{k}"}})
        events.append({"ph": "C", "name": "mem", "pid": pid, "ts": k, "args": {"v": k}})
        events.append({"ph": "i", "name": "mark", "pid": pid, "tid": 0, "ts": k, "s": "gpt"[k % 3]})
    path = tmp_path / "hostile_ids.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _paths(tmp_path):
    fixtures = [p for p in sorted(FIXTURES.iterdir()) if p.name != "ATTRIBUTION.md"]
    odd = []
    for seed, n in ((0, 3_000), (1, 600)):
        path = tmp_path / f"odd{seed}.json"
        path.write_text(json.dumps({"traceEvents": _odd_threads(random.Random(seed), n)}))
        odd.append(path)
    many = write_many_tracks(tmp_path / "many.json", 20_000)
    return [*fixtures, *odd, _hostile_ids_trace(tmp_path), many]


def _fresh(store):
    """The store with a track table that has made no Track yet."""
    store.tracks = TrackTable(store.tracks.columns, store.tracks.ids, store.tracks.text)
    return store


def test_track_tables_from_columns_equal_the_per_track_code(tmp_path, monkeypatch):
    for path in _paths(tmp_path):
        store = _fresh(load_trace(path, cache=False))
        with monkeypatch.context() as m:
            made = _rows_made(m)
            got = {name: tables.BUILDERS[name](store) for name in NAMES}
            ranks = rank_tables(store)
            assert made == [], path.name  # no Track object: the columns only
        want = _simple(store)
        for name in NAMES:
            assert got[name].schema == want[name].schema, (path.name, name)
            assert got[name].equals(want[name]), (path.name, name, got[name].to_pylist()[:5], want[name].to_pylist()[:5])
        devices = _simple_devices(store)
        assert np.array_equal(device_of_track(store), devices), path.name
        with monkeypatch.context() as m:  # the ranks' tables with the reference numbering: the same
            m.setattr(rank_tables_module, "device_of_track", _simple_devices)
            for mine, ref in zip(ranks, rank_tables(store), strict=True):
                assert mine.coll_device.tolist() == ref.coll_device.tolist(), path.name
                assert mine.comp_device.tolist() == ref.comp_device.tolist(), path.name
        if path.name == "many.json":
            assert len(got["thread"]) == len(got["track"]) == 20_000 and len(got["process"]) == 1


def test_the_sql_over_the_tables_is_the_per_track_codes(tmp_path):
    """What a query reads: the same rows through DuckDB as from the reference tables."""
    store = _fresh(load_trace(_hostile_ids_trace(tmp_path), cache=False))
    want = _simple(store)
    for name in NAMES:
        res = run_query(store, f"SELECT * FROM {name}", max_rows=100_000)
        assert res.columns == want[name].column_names
        assert res.rows == [list(r.values()) for r in want[name].to_pylist()], name


def test_pid_values_that_python_calls_equal_stay_apart():
    """1, True and "1" are other pids: a process each, as the track table keeps their values apart
    (a dict keyed by the values would make 1 and True one). A global track first in the order and
    tracks of every kind between: the tables number the processes and threads in track order."""
    def store_of(tracks: list[Track]):
        store = load_trace(FIXTURES / "hf_llama_stack.json.gz", cache=False)  # a new store: its own memo
        store.tracks = TrackTable.from_tracks(tracks)
        return store

    base = load_trace(FIXTURES / "hf_llama_stack.json.gz", cache=False).tracks[0]
    kinds = [GLOBAL, THREAD, COUNTER, THREAD, THREAD, GPU, THREAD, GLOBAL, ASYNC, THREAD]
    pids = [9, 1, 5, True, "1", 5, 1, None, True, None]
    rows = [replace(base, id=k, kind=kind, pid=pid, tid=k % 3, name=f"n{k}" if k % 2 else "")
            for k, (kind, pid) in enumerate(zip(kinds, pids))]
    store = store_of(rows)
    process = tables.process_table(store).to_pylist()
    assert [p["pid"] for p in process] == [1, 5, None, None, None]  # only ints are numbers
    assert [p["upid"] for p in process] == [0, 1, 2, 3, 4]
    assert tables.thread_table(store).column("upid").to_pylist() == [0, 2, 3, 1, 0, 4]
    assert tables.track_table(store).column("upid").to_pylist() == [None, 0, 1, 2, 3, 1, 0, None, 2, 4]
    bools_apart = _simple(store)  # the reference, where True and 1 are one process: the same but for those
    assert len(bools_apart["process"]) == 4
    store = store_of([replace(t, pid=2 if t.pid is True else t.pid) for t in rows])
    want = _simple(store)
    for name in NAMES:
        assert tables.BUILDERS[name](store).equals(want[name]), name
