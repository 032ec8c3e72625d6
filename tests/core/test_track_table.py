"""Tracks as columns: a trace of many threads reopens from the cache
without one Python object per track; a Track is made only for a row someone asks for, and it
reads as the Track the build made. Numbers checked against plain Python over the raw JSON."""

from __future__ import annotations

import json
import pickle

from tests.helpers import MI250
from vtui.load.trace import load_trace
from vtui.store import tracktable
from vtui.store.tracks import GPU, THREAD
from vtui.store.tracktable import TrackTable

THREADS = 3_000


def _many_threads(path):
    """One slice on each of THREADS threads; every eighth thread named (both kinds of title)."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "wide"}}]
    for tid in range(THREADS):
        events.append({"ph": "X", "name": f"op{tid % 7}", "pid": 1, "tid": tid, "ts": tid, "dur": 1})
        if tid % 8 == 0:
            events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": f"w{tid}"}})
    path.write_text(json.dumps({"traceEvents": events}))
    return events


def test_many_tracks_reopen_as_columns_and_make_rows_only_when_asked(tmp_path, monkeypatch):
    path = tmp_path / "wide.json"
    events = _many_threads(path)
    cold = load_trace(path)  # writes the cache entry
    # Plain Python over the raw JSON: one track per thread, named by its thread_name or its tid.
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    want = sorted((tid, names.get(tid, f"thread {tid}")) for tid in {e["tid"] for e in events if e["ph"] == "X"})
    assert [(t.tid, t.name) for t in cold.tracks] == want
    assert all(t.slice_count == 1 and t.process_name == "wide" and t.kind == THREAD for t in cold.tracks)

    made = []
    real = TrackTable._make
    monkeypatch.setattr(TrackTable, "_make", lambda self, k: made.append(k) or real(self, k))
    warm = load_trace(path)
    assert isinstance(warm.tracks, TrackTable) and not warm.tracks.columns["kind"].flags.owndata  # mapped
    assert len(warm.tracks) == THREADS and made == []  # the reopen made no Track
    assert warm.overlapping_slices == 0 and made == []
    row = warm.tracks[THREADS - 8]
    assert (row.tid, row.name, row.id) == (THREADS - 8, f"w{THREADS - 8}", THREADS - 8) and made == [THREADS - 8]
    assert warm.tracks[THREADS - 8] is row and warm.tracks[-8] is row and made == [THREADS - 8]  # made once
    monkeypatch.undo()
    assert warm.tracks == cold.tracks


def test_the_table_answers_as_its_rows_do():
    store = load_trace(MI250, cache=False)
    tracks = store.tracks
    one_by_one = [tracks._make(k) for k in range(len(tracks))]
    rows = list(tracks)  # all at once, from whole columns
    assert rows == one_by_one
    assert any(t.kind == GPU for t in rows) and any(t.kind == THREAD for t in rows)
    assert tracks.kind_is(GPU).tolist() == [t.kind == GPU for t in rows]
    assert tracks.kind_is(GPU, THREAD).tolist() == [t.kind in (GPU, THREAD) for t in rows]
    ids = tracks.process_ids()
    for a in range(len(rows)):
        for b in range(len(rows)):
            assert (ids[a] == ids[b]) == ((rows[a].source, rows[a].pid) == (rows[b].source, rows[b].pid))
    assert tracks.overlapping == sum(t.overlapping for t in rows)
    assert tracks[1:3] == rows[1:3] and tracks[-1] is rows[-1]
    back = pickle.loads(pickle.dumps(tracks))  # as the loader process sends a store
    assert back == tracks and back[0] is not tracks[0]
    assert tracks.check() is None
    assert {n: a.dtype.str for n, a in tracks.columns.items()} == tracktable.COLUMN_DTYPES


def test_pid_and_tid_of_other_types_stay_apart_and_round_trip(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps([
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
        {"ph": "X", "name": "a", "pid": "one", "tid": "main", "ts": 0, "dur": 1},
        {"ph": "X", "name": "a", "pid": 2, "tid": 1, "ts": 0, "dur": 1}]))
    cold = load_trace(path)
    assert sorted((str(t.pid), str(t.tid)) for t in cold.tracks) == [("1", "1"), ("2", "1"), ("one", "main")]
    warm = load_trace(path)
    assert [(t.pid, t.tid) for t in warm.tracks] == [(t.pid, t.tid) for t in cold.tracks]
    assert len(set(warm.tracks.process_ids().tolist())) == 3
