"""Importer rules on which Perfetto and Catapult agree, each on a minimal trace."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import load_events
from vtui.export.trace import export_range
from vtui.load.trace import load_trace


def _load_text(tmp_path: Path, text: str, name: str = "t.json"):
    path = tmp_path / name
    path.write_text(text)
    return load_trace(path, cache=False)


def _slice(store, name: str) -> int:
    rows = [r for r in range(len(store.slices)) if store.name(r) == name]
    assert len(rows) == 1, (name, rows)
    return rows[0]


def _edges(store) -> set[tuple[str, str]]:
    f = store.flows
    return {(store.name(int(a)), store.name(int(b))) for a, b in zip(f.src_slice, f.dst_slice)}


def test_v2_flow_with_one_producer_and_several_consumers_gives_a_flow_each(tmp_path):
    x = {"ph": "X", "pid": 1, "tid": 1, "dur": 1, "cat": "c"}
    events = [{**x, "name": "producer", "ts": 0, "bind_id": "0x1", "flow_out": True},
              {**x, "name": "consumer1", "ts": 2, "bind_id": "0x1", "flow_in": True},
              {**x, "name": "consumer2", "ts": 4, "bind_id": "0x1", "flow_in": True, "tid": 2},
              {**x, "name": "consumer3", "ts": 6, "bind_id": "0x1", "flow_in": True}]
    assert _edges(load_events(tmp_path, events)) == {("producer", "consumer1"), ("producer", "consumer2"),
                                                     ("producer", "consumer3")}


def test_a_new_flow_out_takes_over_from_the_old_producer(tmp_path):
    x = {"ph": "X", "pid": 1, "tid": 1, "dur": 1, "cat": "c", "bind_id": 7}
    events = [{**x, "name": "p1", "ts": 0, "flow_out": True}, {**x, "name": "c1", "ts": 2, "flow_in": True},
              {**x, "name": "step", "ts": 4, "flow_in": True, "flow_out": True}, {**x, "name": "c2", "ts": 6, "flow_in": True}]
    assert _edges(load_events(tmp_path, events)) == {("p1", "c1"), ("p1", "step"), ("step", "c2")}


def test_async_end_closes_the_begin_with_its_id_and_name_and_a_stray_end_ends_nothing(tmp_path):
    a = {"cat": "c", "id": 1, "pid": 1, "tid": 1}
    events = [{**a, "ph": "b", "name": "a", "ts": 0}, {**a, "ph": "e", "name": "b", "ts": 1},
              {**a, "ph": "e", "name": "a", "ts": 5}]
    store = load_events(tmp_path, events)
    assert store.slices.dur_ns[_slice(store, "a")] == 5000
    assert any(w.startswith("1 async b/e ends had no open begin") for w in store.warnings)


def test_async_end_closes_the_innermost_begin_of_its_name(tmp_path):
    a = {"cat": "c", "id": 1, "pid": 1, "tid": 1}
    events = [{**a, "ph": "b", "name": "outer", "ts": 0}, {**a, "ph": "b", "name": "inner", "ts": 1},
              {**a, "ph": "e", "name": "inner", "ts": 3}, {**a, "ph": "e", "name": "outer", "ts": 9}]
    store = load_events(tmp_path, events)
    assert store.slices.dur_ns[_slice(store, "inner")] == 2000
    assert store.slices.dur_ns[_slice(store, "outer")] == 9000


def test_args_of_begin_and_end_merge_deeply(tmp_path):
    t = {"pid": 1, "tid": 1, "name": "s", "cat": "c"}
    events = [{**t, "ph": "B", "ts": 0, "args": {"params": {"p1": 1}, "x": 1}},
              {**t, "ph": "E", "ts": 2, "args": {"params": {"p2": 2}, "y": 2}},
              {**t, "ph": "b", "id": 3, "ts": 0, "name": "as", "args": {"params": {"p1": 1}}},
              {**t, "ph": "e", "id": 3, "ts": 2, "name": "as", "args": {"params": {"p2": 2, "p1": 9}}}]
    store = load_events(tmp_path, events)
    assert store.slice_args(_slice(store, "s")) == {"params": {"p1": 1, "p2": 2}, "x": 1, "y": 2}
    assert store.slice_args(_slice(store, "as")) == {"params": {"p1": 9, "p2": 2}}


def test_a_second_s_for_an_open_flow_id_is_ignored(tmp_path):
    x = {"ph": "X", "pid": 1, "dur": 1, "cat": "c"}
    fl = {"cat": "f", "name": "f", "id": 1, "pid": 1}
    events = [{**x, "name": "A", "tid": 1, "ts": 0}, {**x, "name": "C", "tid": 2, "ts": 2},
              {**x, "name": "D", "tid": 3, "ts": 4},
              {**fl, "ph": "s", "tid": 1, "ts": 0}, {**fl, "ph": "s", "tid": 2, "ts": 2},
              {**fl, "ph": "f", "tid": 3, "ts": 4, "bp": "e"}]
    store = load_events(tmp_path, events)
    assert _edges(store) == {("A", "D")}
    assert any(w == "1 flow starts had no end" for w in store.warnings)


def test_a_flow_chain_runs_from_its_first_s_through_its_steps(tmp_path):
    x = {"ph": "X", "pid": 1, "dur": 1, "cat": "c"}
    fl = {"cat": "f", "name": "f", "id": 1, "pid": 1}
    events = [{**x, "name": n, "tid": i, "ts": 2 * i} for i, n in enumerate("ABCD")]
    events += [{**fl, "ph": "s", "tid": 0, "ts": 0}, {**fl, "ph": "t", "tid": 1, "ts": 2},
               {**fl, "ph": "s", "tid": 2, "ts": 4}, {**fl, "ph": "f", "tid": 3, "ts": 6, "bp": "e"}]
    assert _edges(load_events(tmp_path, events)) == {("A", "B"), ("B", "D")}


def test_a_missing_sort_index_sorts_as_zero(tmp_path):
    x = {"ph": "X", "tid": 1, "ts": 0, "dur": 1, "name": "x"}
    events = [{**x, "pid": 1}, {**x, "pid": 2}, {**x, "pid": 3},
              {"ph": "M", "pid": 1, "name": "process_sort_index", "args": {"sort_index": 5}},
              {"ph": "M", "pid": 3, "name": "process_sort_index", "args": {"sort_index": -1}}]
    store = load_events(tmp_path, events)
    assert [t.pid for t in store.tracks if t.kind == "thread"] == [3, 2, 1]


def test_thread_without_a_sort_index_sorts_as_zero(tmp_path):
    x = {"ph": "X", "pid": 1, "ts": 0, "dur": 1, "name": "x"}
    events = [{**x, "tid": 1}, {**x, "tid": 2},
              {"ph": "M", "pid": 1, "tid": 1, "name": "thread_sort_index", "args": {"sort_index": 1}}]
    assert [t.tid for t in load_events(tmp_path, events).tracks if t.kind == "thread"] == [2, 1]


def _fourteen_events() -> list[str]:
    return [json.dumps({"ph": "X", "name": f"e{i}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5, "args": {"i": i}})
            for i in range(14)]


def test_raw_control_characters_and_trailing_commas_are_read_with_a_warning(tmp_path):
    lines = _fourteen_events()
    lines[3] = '{"ph": "X", "name": "two\nlines\tand a tab", "pid": 1, "tid": 1, "ts": 30, "dur": 5}'
    lines[7] = '{"ph": "X", "name": "e7", "pid": 1, "tid": 1, "ts": 70, "dur": 5, "args": {"l": [1, 2,], "i": 7,},}'
    store = _load_text(tmp_path, "[\n" + ",\n".join(lines) + "\n]\n")
    names = sorted(store.name(r) for r in range(len(store.slices)))
    assert len(names) == 14 and "two\nlines\tand a tab" in names
    assert store.slice_args(_slice(store, "e7")) == {"l": [1, 2], "i": 7}
    assert store.slice_args(_slice(store, "e8")) == {"i": 8}
    assert any(w.startswith("2 events had raw control characters") for w in store.warnings)
    assert not any("invalid" in w for w in store.warnings)


def test_a_trailing_comma_inside_a_string_is_kept(tmp_path):
    lines = _fourteen_events()
    lines[2] = '{"ph": "X", "name": "a,}", "pid": 1, "tid": 1, "ts": 20, "dur": 5, "args": {"s": ",]", "t": 1,}}'
    store = _load_text(tmp_path, "[" + ",".join(lines) + "]")
    assert store.slice_args(_slice(store, "a,}")) == {"s": ",]", "t": 1}


def test_a_never_closed_b_runs_to_the_end_of_the_whole_trace(tmp_path):
    """vtui's documented rule (not Catapult's, which stops at its thread's last event)."""
    events = [{"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": 0},
              {"ph": "X", "name": "late", "pid": 1, "tid": 2, "ts": 50, "dur": 50}]
    store = load_events(tmp_path, events)
    assert store.slices.end_ns[_slice(store, "open")] == 100_000


def test_an_export_of_leniently_read_events_is_valid_json(tmp_path):
    lines = _fourteen_events()
    lines[3] = '{"ph": "X", "name": "two\nlines", "pid": 1, "tid": 1, "ts": 30, "dur": 5, "args": {"k": [1,],}}'
    store = _load_text(tmp_path, "[" + ",".join(lines) + "]")
    out = tmp_path / "out.json"
    export_range(store, out, 0, store.span_ns)
    doc = json.loads(out.read_text())  # strict JSON
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    assert {"ph": "X", "name": "two\nlines", "pid": 1, "tid": 1, "ts": 30, "dur": 5, "args": {"k": [1]}} in events
    assert len([e for e in events if e.get("ph") == "X"]) == 14


def test_begins_and_ends_at_the_same_time_pair_in_file_order(tmp_path):
    t = {"pid": 1, "tid": 1, "cat": "c"}
    events = [{**t, "ph": "X", "name": "later", "ts": 9, "dur": 1},  # file order is not time order
              {**t, "ph": "B", "name": "a", "ts": 1}, {**t, "ph": "B", "name": "b", "ts": 1},
              {**t, "ph": "E", "ts": 1}, {**t, "ph": "E", "ts": 3}]
    store = load_events(tmp_path, events)
    a, b = _slice(store, "a"), _slice(store, "b")
    assert (store.slices.start_ns[b], store.slices.end_ns[b]) == (0, 0)
    assert (store.slices.start_ns[a], store.slices.end_ns[a]) == (0, 2000)
