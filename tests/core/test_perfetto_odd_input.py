"""Importer rules on odd input that real tools write, each on a minimal JSON case, with the result
Perfetto's JSON importer gives (json_trace_tokenizer.cc, json_trace_parser_impl.cc, slice_tracker.cc,
flow_tracker.cc, track_compressor.cc): vtui does the same unless the README's importer rules say
why not."""

from __future__ import annotations

import json

from tests.helpers import load_events
from vtui.load.trace import load_trace


def _rows(store, name: str) -> list[int]:
    return [r for r in range(len(store.slices)) if store.name(r) == name]


def _span(store, name: str) -> tuple[int, int]:
    (row,) = _rows(store, name)
    return int(store.slices.start_ns[row]), int(store.slices.end_ns[row])


def _edges(store) -> set[tuple[str, str]]:
    f = store.flows
    return {(store.name(int(a)) if a >= 0 else "-", store.name(int(b)) if b >= 0 else "-")
            for a, b in zip(f.src_slice, f.dst_slice)}


def test_an_x_with_a_negative_dur_is_skipped_and_one_without_a_dur_runs_to_the_end(tmp_path):
    # Perfetto drops a negative dur (slice_negative_duration) and vtui now does too (it drew a
    # zero-length slice), so it sets no origin either. An X with no dur is what Chrome writes for a
    # call still open when tracing stopped (catapult__lthi_cats: 13, each its thread's last
    # event): it runs to the trace end, as a B never closed (Catapult's didNotFinish; Perfetto
    # drops it, json_parser_failure). vtui drew it zero-length.
    x = {"ph": "X", "pid": 1, "tid": 1}
    events = [{**x, "name": "negative", "ts": 0, "dur": -1}, {**x, "name": "huge", "ts": 1, "dur": 1e300},
              {**x, "name": "ok", "ts": 3, "dur": 1}, {**x, "name": "open", "ts": 5}, {**x, "name": "end", "tid": 2, "ts": 7, "dur": 2}]
    store = load_events(tmp_path, events)
    assert sorted(store.name(r) for r in range(len(store.slices))) == ["end", "ok", "open"]
    assert store.origin_us == 3.0 and _span(store, "ok") == (0, 1_000)
    assert _span(store, "open") == (2_000, 6_000)  # to the end of "end", 9 µs
    assert any(w.startswith("2 X events had a negative or huge dur (skipped") for w in store.warnings)
    assert any(w.startswith("1 X events had no dur (still open when tracing stopped?)") for w in store.warnings)


def test_async_events_without_an_id_or_a_pid_are_skipped(tmp_path):
    # Perfetto: b/e/n need a pid and an id (json_parser_failure); Catapult needs the id too.
    a = {"cat": "c", "tid": 1}
    events = [{**a, "ph": "b", "name": "no pid", "id": 5, "ts": 0}, {**a, "ph": "e", "name": "no pid", "id": 5, "ts": 3},
              {**a, "ph": "b", "name": "no id", "pid": 1, "ts": 0}, {**a, "ph": "e", "name": "no id", "pid": 1, "ts": 3},
              {**a, "ph": "b", "name": "kept", "pid": 1, "id": 5, "ts": 1}, {**a, "ph": "e", "name": "kept", "pid": 1, "id": 5, "ts": 2}]
    store = load_events(tmp_path, events)
    assert [store.name(r) for r in range(len(store.slices))] == ["kept"]
    assert any(w.startswith("4 async events without an id or a pid were skipped") for w in store.warnings)


def test_flow_events_without_an_id_are_skipped(tmp_path):
    # Perfetto: flow_invalid_id. (vtui chained every id-less flow of a name: A→D.)
    x = {"ph": "X", "pid": 1, "dur": 1}
    fl = {"cat": "f", "name": "f", "pid": 1}
    events = [{**x, "name": "A", "tid": 1, "ts": 0}, {**x, "name": "D", "tid": 2, "ts": 5},
              {**fl, "ph": "s", "tid": 1, "ts": 0}, {**fl, "ph": "f", "bp": "e", "tid": 2, "ts": 5}]
    store = load_events(tmp_path, events)
    assert _edges(store) == set()
    assert any(w.startswith("2 flow events without an id were skipped") for w in store.warnings)


def test_a_string_flow_id_is_hex_as_perfetto_reads_it(tmp_path):
    # MaybeExtractFlowIdentifier: CStringToUInt64(id, 16), so "10" is 16 and meets the int 16
    # (vtui read only "0x" strings as hex). A text that is no hex stays a text id of its own.
    x = {"ph": "X", "pid": 1, "dur": 1}
    fl = {"cat": "f", "name": "f", "pid": 1}
    events = [{**x, "name": n, "tid": i, "ts": 2 * i} for i, n in enumerate("ABCDEF")]
    events += [{**fl, "id": "10", "ph": "s", "tid": 0, "ts": 0}, {**fl, "id": 16, "ph": "f", "bp": "e", "tid": 1, "ts": 2},
               {**fl, "id": 255, "ph": "s", "tid": 2, "ts": 4}, {**fl, "id": " 0XfF", "ph": "f", "bp": "e", "tid": 3, "ts": 6},
               {**fl, "id": "zz", "ph": "s", "tid": 4, "ts": 8}, {**fl, "id": "zz", "ph": "f", "bp": "e", "tid": 5, "ts": 10}]
    x2 = {**x, "tid": 9, "bind_id": "ffffffffffffffff"}
    events += [{**x2, "name": "P", "ts": 20, "flow_out": True}, {**x2, "name": "Q", "ts": 22, "bind_id": -1, "flow_in": True}]
    assert _edges(load_events(tmp_path, events)) == {("A", "B"), ("C", "D"), ("E", "F"), ("P", "Q")}


def test_a_string_async_id_never_meets_an_int(tmp_path):
    # Perfetto hashes the string for an async cookie and Catapult keys by the text: "0x5" and 5
    # are two ids, so the e with id 5 is stray and "0x5" ends at 3 (vtui read "0x5" as 5: [0, 2]).
    a = {"cat": "c", "pid": 1, "tid": 1, "name": "A"}
    events = [{**a, "ph": "b", "id": "0x5", "ts": 0}, {**a, "ph": "e", "id": 5, "ts": 2}, {**a, "ph": "e", "id": "0x5", "ts": 3}]
    store = load_events(tmp_path, events)
    assert _span(store, "A") == (0, 3_000)
    assert any(w.startswith("1 async b/e ends had no open begin") for w in store.warnings)


def test_a_second_v2_flow_out_takes_over_and_a_flow_in_with_none_open_is_counted(tmp_path):
    # A deliberate difference: Perfetto ignores p2's flow_out while 7's flow is open
    # (flow_duplicate_id) and joins c2 to p1. Chrome reuses a pointer as bind_id (catapult__webview:
    # 10 ids, BackgroundHTMLParser -> HTMLDocumentParser twice each), so vtui lets p2 take over.
    # A flow_in with no open flow joins nothing (flow_end_without_start): counted now.
    x = {"ph": "X", "pid": 1, "tid": 1, "dur": 1}
    events = [{**x, "name": "c0", "ts": 0, "bind_id": 7, "flow_in": True},
              {**x, "name": "p1", "ts": 2, "bind_id": 7, "flow_out": True}, {**x, "name": "c1", "ts": 4, "bind_id": 7, "flow_in": True},
              {**x, "name": "p2", "ts": 6, "bind_id": 7, "flow_out": True}, {**x, "name": "c2", "ts": 8, "bind_id": 7, "flow_in": True}]
    store = load_events(tmp_path, events)
    assert _edges(store) == {("p1", "c1"), ("p2", "c2")}
    assert any(w.startswith("1 flow ends had no start") for w in store.warnings)


def test_an_id2_global_pairs_across_processes_and_beats_id2_local(tmp_path):
    # Perfetto: id2.global is a global track (legacy_async_global_slice), as in Catapult; when
    # id2 holds both, global wins. (vtui kept it per process: an unclosed b and a stray e.)
    a = {"cat": "c", "tid": 1, "name": "g"}
    events = [{**a, "ph": "b", "pid": 1, "id2": {"local": 1, "global": 5}, "ts": 0},
              {**a, "ph": "e", "pid": 2, "id2": {"global": 5}, "ts": 3}]
    store = load_events(tmp_path, events)
    assert _span(store, "g") == (0, 3_000)
    (row,) = _rows(store, "g")
    assert store.tracks[int(store.slices.track[row])].pid == 1  # drawn in its begin's process
    assert not [w for w in store.warnings if "async" in w]


def test_a_counter_value_past_the_float_range_costs_only_itself(tmp_path):
    # Perfetto reads each series on its own; vtui lost every series of the event when one value
    # (1e400) was past msgspec's range.
    path = tmp_path / "t.json"
    path.write_text('[{"ph":"C","name":"ctr","pid":1,"ts":0,"args":{"a":1,"big":1e400,"b":"2.5"}},'
                    '{"ph":"C","name":"ctr","pid":1,"ts":1,"args":{"a":3}}]')
    store = load_trace(path, cache=False)
    got = sorted((store.tracks[int(t)].name, int(ts), float(v))
                 for t, ts, v in zip(store.counters.track, store.counters.ts_ns, store.counters.value))
    assert got == [("ctr a", 0, 1.0), ("ctr a", 1_000, 3.0), ("ctr b", 0, 2.5)]
    assert any(w.startswith("1 counter values were not numbers") for w in store.warnings)


def test_a_process_or_thread_name_is_a_non_empty_string(tmp_path):
    # Perfetto: an empty or non-string name is json_parser_failure and changes nothing (vtui let
    # "" blank the name given before, and named a thread "5").
    m = {"ph": "M", "pid": 1}
    events = [{"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
              {"ph": "X", "name": "y", "pid": 1, "tid": 2, "ts": 0, "dur": 1},
              {**m, "name": "process_name", "args": {"name": "engine"}}, {**m, "name": "process_name", "args": {"name": ""}},
              {**m, "name": "thread_name", "tid": 1, "args": {"name": "worker"}},
              {**m, "name": "thread_name", "tid": 1, "args": {"name": None}},
              {**m, "name": "thread_name", "tid": 2, "args": {"name": 5}}]
    store = load_events(tmp_path, events)
    names = {t.tid: (t.process_name, t.name) for t in store.tracks}
    assert names == {1: ("engine", "worker"), 2: ("engine", "thread 2")}
    assert not any("given again" in w for w in store.warnings)


def test_system_trace_events_text_is_named_in_the_warnings(tmp_path):
    # Perfetto reads the systemTraceEvents string as systrace lines; vtui does not read it, and
    # said nothing (a trace with its ftrace half silently missing).
    line = "  foo-5 (5) [000] ...1  1.000000: tracing_mark_write: B|5|work"
    doc = {"traceEvents": [{"ph": "X", "name": "x", "pid": 1, "tid": 1, "ts": 0, "dur": 1}],
           "systemTraceEvents": "# tracer: nop\n" + "\n".join([line] * 3) + "\n"}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    store = load_trace(path, cache=False)
    assert any(w.startswith("systemTraceEvents holds 3 lines of systrace text: not read") for w in store.warnings)
