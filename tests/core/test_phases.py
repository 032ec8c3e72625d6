"""Every phase and the odd inputs real tools write, on small traces built in the test."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from vtui.load.trace import load_trace


def _write(tmp_path: Path, events, wrap: bool = True, **top) -> Path:
    path = tmp_path / "t.json"
    doc = {"traceEvents": events, **top} if wrap else events
    path.write_text(json.dumps(doc))
    return path


def _names(store, kind=None):
    return sorted(store.name(i) for i in range(len(store.slices))
                  if kind is None or store.tracks[store.slices.track[i]].kind == kind)


def test_all_phases(tmp_path):
    ev = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "first"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
        {"ph": "X", "name": "outer", "pid": 1, "tid": 2, "ts": 0, "dur": 100},
        {"ph": "B", "name": "be", "pid": 1, "tid": "2", "ts": 10, "args": {"a": 1}},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 20, "args": {"b": 2}},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 30},  # no open B
        {"ph": "i", "name": "inst", "pid": 1, "tid": 2, "ts": 40, "s": "t"},
        {"ph": "I", "name": "glob", "pid": 1, "tid": 2, "ts": 41, "s": "g"},
        {"ph": "R", "name": "mark", "pid": 1, "tid": 2, "ts": 42, "s": "p"},
        {"ph": "C", "name": "mem", "pid": 1, "ts": 0, "args": {"used": 5, "free": 7}},
        {"ph": "C", "name": "mem", "pid": 1, "ts": 50, "args": {"used": 6, "free": "x"}},
        {"ph": "b", "cat": "c", "id": "0x10", "name": "req", "pid": 1, "tid": 9, "ts": 5},
        {"ph": "n", "cat": "c", "id": "0x10", "name": "tick", "pid": 1, "tid": 9, "ts": 6},
        {"ph": "b", "cat": "c", "id": "0x10", "name": "inner", "pid": 1, "tid": 9, "ts": 7},
        {"ph": "e", "cat": "c", "id": "0x10", "name": "inner", "pid": 1, "tid": 9, "ts": 8},
        {"ph": "b", "cat": "c", "id": 16, "name": "other", "pid": 1, "tid": 9, "ts": 7},
        {"ph": "e", "cat": "c", "id": 16, "name": "other", "pid": 1, "tid": 9, "ts": 9},
        {"ph": "e", "cat": "c", "id": "0x10", "name": "req", "pid": 1, "tid": 9, "ts": 60},
        {"ph": "S", "cat": "l", "id": 3, "name": "legacy", "pid": 1, "tid": 2, "ts": 1},
        {"ph": "T", "cat": "l", "id": 3, "name": "legacy", "pid": 1, "tid": 2, "ts": 2, "args": {"step": "s1"}},
        {"ph": "F", "cat": "l", "id": 3, "name": "legacy", "pid": 1, "tid": 2, "ts": 3},
        {"ph": "X", "name": "launch", "pid": 1, "tid": 2, "ts": 50, "dur": 5},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 2, "ts": 50},
        {"ph": "X", "name": "kernel", "cat": "kernel", "pid": 0, "tid": 7, "ts": 70, "dur": 10},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 0, "tid": 7, "ts": 70, "bp": "e"},
        {"ph": "P", "name": "sample", "pid": 1, "tid": 2, "ts": 44},
        {"ph": "N", "name": "obj", "pid": 1, "tid": 2, "ts": 45, "id": "0x1"},
        {"ph": "O", "name": "obj", "pid": 1, "tid": 2, "ts": 46, "id": "0x1"},
        {"ph": "D", "name": "obj", "pid": 1, "tid": 2, "ts": 47, "id": "0x1"},
        {"ph": "Q", "name": "weird", "pid": 1, "tid": 2, "ts": 48},
        {"ph": "X", "name": "nodur", "pid": 1, "tid": 2, "ts": 90},
        {"ph": "X", "name": "nul\u0000name", "pid": "Spans", "tid": "", "ts": 95, "dur": 0},
        {"ph": "B", "name": "open", "pid": -1, "tid": 0, "ts": 96},
    ]
    store = load_trace(_write(tmp_path, ev))
    assert store.event_count == len(ev)
    assert store.by_phase["Q"] == 1 and store.by_phase["X"] == 5
    # B/E paired across "2"/2 tids (a string pid would be another process); the stray E and the
    # open B are warnings.
    assert "be" in _names(store)
    w = " | ".join(store.warnings)
    assert "1 E events had no open B" in w and "1 B events were never closed" in w
    assert "unknown phases" in w and "'Q'" in w
    row = [i for i in range(len(store.slices)) if store.name(i) == "be"][0]
    assert store.slices.dur_ns[row] == 10_000
    assert store.slice_args(row) == {"a": 1, "b": 2}  # B and E args merged
    # thread_name given twice: the last wins.
    main = [t for t in store.tracks if t.pid == 1 and t.tid == 2][0]
    assert main.name == "main" and main.process_name == "python"
    # Async: the inner b/e nests; n is an instant on that track. The string id "0x10" and the
    # int 16 are two ids (Perfetto hashes the string, Catapult keys by it), so "other" nests in
    # nothing.
    async_names = _names(store, "async")
    assert async_names == ["inner", "legacy", "other", "req"]
    req = [i for i in range(len(store.slices)) if store.name(i) == "req"][0]
    inner = [i for i in range(len(store.slices)) if store.name(i) == "inner"][0]
    other = [i for i in range(len(store.slices)) if store.name(i) == "other"][0]
    assert store.slices.track[req] == store.slices.track[inner]
    assert store.slices.parent[inner] == req and store.slices.parent[other] == -1
    # Counters: one series per key; non-numbers skipped with a warning.
    series = sorted(t.name for t in store.tracks if t.kind == "counter")
    assert series == ["mem free", "mem used"]
    assert len(store.counters) == 3 and "not numbers" in w
    # Instants by scope, and P/N/O/D kept as points.
    kinds = {store.tracks[t].kind for t in store.instants.track.tolist()}
    assert {"thread", "global", "process", "async"} <= kinds
    assert len(store.instants) == 3 + 1 + 1 + 4  # i/I/R, n, T, P/N/O/D
    # Flow binds the launch slice to the kernel on the GPU stream.
    assert len(store.flows) == 1
    assert store.name(int(store.flows.src_slice[0])) == "launch"
    assert store.name(int(store.flows.dst_slice[0])) == "kernel"
    assert store.tracks[int(store.flows.dst_track[0])].kind == "gpu"
    # Missing dur: open when tracing stopped, to the trace end; NUL bytes survive; string pid and
    # empty tid load.
    nodur = [i for i in range(len(store.slices)) if store.name(i) == "nodur"][0]
    assert store.slices.end_ns[nodur] == store.span_ns and "1 X events had no dur" in w
    assert "nul\x00name" in store.strings
    assert any(t.pid == "Spans" and t.tid == "" for t in store.tracks)
    assert any(t.pid == -1 for t in store.tracks)


def test_unsorted_children_before_parents(tmp_path):
    ev = [
        {"ph": "X", "name": "child", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
        {"ph": "X", "name": "parent", "pid": 1, "tid": 1, "ts": 1, "dur": 5},
        {"ph": "X", "name": "same-start-short", "pid": 1, "tid": 1, "ts": 1, "dur": 2},
    ]
    store = load_trace(_write(tmp_path, ev, wrap=False))
    rows = {store.name(i): i for i in range(3)}
    assert store.slices.parent[rows["same-start-short"]] == rows["parent"]
    assert store.slices.parent[rows["child"]] == rows["same-start-short"]
    assert store.slices.depth[rows["child"]] == 2
    assert store.slices.ordinal[rows["parent"]] == 1


def test_partial_overlap_goes_to_extra_lane(tmp_path):
    ev = [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 10},
        {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 6, "dur": 10},
    ]
    store = load_trace(_write(tmp_path, ev))
    t = store.tracks[0]
    assert t.overlapping == 2 and t.nested_lanes == 1 and t.lanes == 3
    assert store.overlapping_slices == 2


def test_object_form_metadata_kept(tmp_path):
    ev = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]
    path = _write(tmp_path, ev, displayTimeUnit="ns", otherData={"v": 1}, baseTimeNanoseconds=17,
                  deviceProperties=[{"id": 0}], distributedInfo={"rank": 3})
    store = load_trace(path)
    meta = store.sources[0].metadata
    assert meta["otherData"] == {"v": 1} and meta["baseTimeNanoseconds"] == 17
    assert meta["deviceProperties"] == [{"id": 0}] and meta["distributedInfo"]["rank"] == 3
    assert store.sources[0].display_time_unit == "ns"


def test_string_ts_and_big_args(tmp_path):
    ev = [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "5.5", "dur": 1, "args": {"Comms Id": 10159970886766084423}},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
    ]
    store = load_trace(_write(tmp_path, ev))
    row = [i for i in range(2) if store.name(i) == "a"][0]
    assert store.slices.start_ns[row] == 4500
    assert store.slice_args(row)["Comms Id"] == 10159970886766084423


def test_chunk_boundaries_inside_strings_are_exact(tmp_path, monkeypatch):
    """Strings full of `},{` and escaped quotes, with tiny chunks, decode exactly."""
    import vtui.io.jsonscan as js

    monkeypatch.setattr(js, "CHUNK", 256)
    monkeypatch.setattr(js, "SMALL", 64)
    evil = ['"},{"ph":"X"', "a},{b", '\\"},{\\"', "}, {", "ü},{€", "\u0000},{"]
    ev = [{"ph": "X", "name": evil[i % len(evil)] + str(i), "pid": 1, "tid": 1, "ts": i, "dur": 1,
           "args": {"s": evil[(i + 1) % len(evil)], "l": [{"x": "},{"}, {"y": 1}]}} for i in range(300)]
    store = load_trace(_write(tmp_path, ev))
    assert store.event_count == 300 and not store.warnings
    by_ordinal = np.argsort(store.slices.ordinal)
    for k in range(300):
        row = int(by_ordinal[k])
        assert store.name(row) == ev[k]["name"]
        assert store.slice_args(row) == ev[k]["args"]


def test_ids_of_every_kind_pair_up(tmp_path):
    """Integer ids are kept as they are and every other id is interned: "0x10" and 16 are one id,
    a negative id, an id past int64 and a string id each keep their own flow; equal ids in
    different categories never mix; a counter's id shows in its track title."""
    events = [{"ph": "X", "name": f"cpu{i}", "pid": 1, "tid": 1, "ts": i * 100, "dur": 50} for i in range(5)]
    events += [{"ph": "X", "name": f"gpu{i}", "pid": 2, "tid": 7, "ts": i * 100 + 20, "dur": 20} for i in range(5)]
    ids = [("0x10", 16), (-5, -5), (2**70, 2**70), ("req-a", "req-a"), (3, 3)]
    for i, (a, b) in enumerate(ids):
        events.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": a, "pid": 1, "tid": 1, "ts": i * 100 + 10})
        events.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "id": b, "pid": 2, "tid": 7, "ts": i * 100 + 25,
                       "bp": "e"})
    # The same id 3 in another category is a different flow: its end has no start.
    events.append({"ph": "f", "cat": "other", "name": "ac2g", "id": 3, "pid": 2, "tid": 7, "ts": 430, "bp": "e"})
    events.append({"ph": "C", "name": "queue", "id": 42, "pid": 1, "tid": 1, "ts": 5, "args": {"depth": 3}})
    events.append({"ph": "C", "name": "mem", "id": "0xb0beed4c8c3041ab", "pid": 1, "tid": 1, "ts": 5,
                   "args": {"value": 1}})  # past int64: interned, shown as written
    store = load_trace(_write(tmp_path, events), cache=False)
    pairs = sorted((store.name(int(a)), store.name(int(b))) for a, b in zip(store.flows.src_slice, store.flows.dst_slice))
    assert pairs == [(f"cpu{i}", f"gpu{i}") for i in range(5)]
    assert any("1 flow ends had no start" in w for w in store.warnings)
    assert {t.name for t in store.tracks} >= {"queue[42] depth", "mem[0xb0beed4c8c3041ab]"}


def test_async_ids_are_per_process_except_id2_global(tmp_path):
    """A plain id and an id2.local are keyed per process: a begin and an end written by two
    processes never pair (Perfetto before 2023, InternProcessTrackSet; README's importer rules say
    why plain ids stay so). An id2.global is global, as current Perfetto and Catapult read it."""
    events = [
        {"ph": "b", "cat": "net", "name": "request", "id": 7, "pid": 1, "tid": 1, "ts": 10},
        {"ph": "e", "cat": "net", "name": "request", "id": 7, "pid": 2, "tid": 5, "ts": 30},
        {"ph": "b", "cat": "net", "name": "global", "id2": {"global": "0x8"}, "pid": 1, "tid": 1, "ts": 40},
        {"ph": "e", "cat": "net", "name": "global", "id2": {"global": "0x8"}, "pid": 2, "tid": 5, "ts": 45},
        {"ph": "b", "cat": "net", "name": "local", "id2": {"local": 9}, "pid": 1, "tid": 1, "ts": 50},
        {"ph": "e", "cat": "net", "name": "local", "id2": {"local": 9}, "pid": 2, "tid": 5, "ts": 60},
        {"ph": "b", "cat": "net", "name": "same", "id": 7, "pid": 1, "tid": 2, "ts": 70},
        {"ph": "e", "cat": "net", "name": "same", "id": 7, "pid": 1, "tid": 3, "ts": 75},  # another thread, one process
        {"ph": "X", "name": "tail", "pid": 1, "tid": 1, "ts": 90, "dur": 10},
    ]
    store = load_trace(_write(tmp_path, events), cache=False)
    spans = {store.name(r): (int(store.slices.start_ns[r]), int(store.slices.end_ns[r]))
             for r in range(len(store.slices)) if store.name(r) != "tail"}
    # never ended in their process: they run to the trace end; the global one pairs across them
    assert spans == {"request": (0, 90_000), "global": (30_000, 35_000), "local": (40_000, 90_000),
                     "same": (60_000, 65_000)}
    assert any("2 async b/e ends had no open begin" in w for w in store.warnings)
