"""Importer rules where Perfetto and Catapult differ, each on a minimal JSON case:
vtui does what Perfetto does (README, "Importer rules")."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import load_events
from vtui.load.trace import load_trace


def _rows(store, name: str) -> list[int]:
    return [r for r in range(len(store.slices)) if store.name(r) == name]


def _span(store, name: str) -> tuple[int, int]:
    (row,) = _rows(store, name)
    return int(store.slices.start_ns[row]), int(store.slices.end_ns[row])


def _track(store, name: str):
    (row,) = _rows(store, name)
    return store.tracks[int(store.slices.track[row])]


def _load_text(tmp_path: Path, text: str):
    path = tmp_path / "t.json"
    path.write_text(text)
    return load_trace(path, cache=False)


def test_string_timestamps_are_read_as_perfettos_coerce_to_ts_reads_them(tmp_path):
    # Current Perfetto's CoerceToTs: the string's whole text must be a JSON number
    # (json::ParseValue). White space, "+", "_", a trailing space, hex, "1." and leading zeros
    # leave the event without a usable ts (dropped, with a warning); an exponent is a number.
    texts = {"plain": '"1000"', "exponent": '"2e1"', "spaced": '" 12.5"', "plus": '"+5"', "underscore": '"1_000"',
             "trailing": '"12 "', "hex": '"0x10"', "dot": '"1."', "zeros": '"007"', "number": "7"}
    events = ",".join(f'{{"ph":"X","name":"{k}","pid":1,"tid":1,"ts":{v},"dur":1}}' for k, v in texts.items())
    store = _load_text(tmp_path, f"[{events}]")
    names = {store.name(r) for r in range(len(store.slices))}
    assert names == {"plain", "exponent", "number"}
    # origin 7 µs: 20 µs is 13000 ns after it, 1000 µs 993000
    assert _span(store, "exponent") == (13_000, 14_000) and _span(store, "plain") == (993_000, 994_000)
    assert any(w.startswith("7 events without a usable ts") for w in store.warnings)


def test_counter_values_are_numbers_or_strings_strtod_reads_whole(tmp_path):
    c = {"ph": "C", "pid": 1, "name": "ctr"}
    events = [{**c, "ts": 0, "args": {"a": "1_000", "b": "12 ", "c": True, "d": "0x10", "e": " 2.5", "f": 3}}]
    store = load_events(tmp_path, events)
    by_series = {store.tracks[int(t)].name: float(v) for t, v in zip(store.counters.track, store.counters.value)}
    assert by_series == {"ctr d": 16.0, "ctr e": 2.5, "ctr f": 3.0}
    assert any(w.startswith("3 counter values were not numbers") for w in store.warnings)


def test_an_end_closes_the_innermost_begin_of_its_name_and_leaves_the_ones_inside_open(tmp_path):
    # B A, B C, E A: A ends at 2; C, opened inside A, stays open: nothing else on its thread
    # closes it, so it runs to the trace end (3 µs, the X on another thread). Perfetto: C=[1,3].
    t = {"pid": 1, "tid": 1}
    events = [{**t, "ph": "B", "name": "A", "ts": 0}, {**t, "ph": "B", "name": "C", "ts": 1},
              {**t, "ph": "E", "name": "A", "ts": 2}, {"ph": "X", "name": "Z", "pid": 1, "tid": 2, "ts": 0, "dur": 3}]
    store = load_events(tmp_path, events)
    assert _span(store, "A") == (0, 2_000)
    assert _span(store, "C") == (1_000, 3_000)
    assert any(w.startswith("1 B events were never closed") for w in store.warnings)


def test_the_next_event_on_the_thread_closes_what_was_left_open_at_its_parents_end(tmp_path):
    # Perfetto's MaybeCloseStack: at B D (4 µs, after A's end), C ends where A ended.
    t = {"pid": 1, "tid": 1}
    events = [{**t, "ph": "B", "name": "A", "ts": 0}, {**t, "ph": "B", "name": "C", "ts": 1},
              {**t, "ph": "E", "name": "A", "ts": 2}, {**t, "ph": "B", "name": "D", "ts": 4},
              {**t, "ph": "E", "name": "D", "ts": 5}]
    store = load_events(tmp_path, events)
    assert _span(store, "A") == (0, 2_000) and _span(store, "C") == (1_000, 2_000) and _span(store, "D") == (4_000, 5_000)
    assert not any("never closed" in w or "no open B" in w for w in store.warnings)


def test_an_end_whose_name_or_category_nobody_opened_is_stray(tmp_path):
    t = {"pid": 1, "tid": 1}
    events = [{**t, "ph": "B", "name": "A", "cat": "x", "ts": 0}, {**t, "ph": "E", "name": "other", "ts": 1},
              {**t, "ph": "E", "name": "A", "cat": "y", "ts": 2}, {**t, "ph": "E", "ts": 3}]
    store = load_events(tmp_path, events)
    assert _span(store, "A") == (0, 3_000)  # only the E without name or category closes it
    assert any(w.startswith("2 E events had no open B") for w in store.warnings)


def test_async_ids_are_per_process(tmp_path):
    # The same id in two processes is two slices, each on its own process's track (Catapult's
    # global ids would nest pid 2's slice in pid 1's and draw it there).
    a = {"cat": "c", "id": 1, "tid": 1}
    events = [{**a, "ph": "b", "name": "one", "pid": 1, "ts": 0}, {**a, "ph": "b", "name": "two", "pid": 2, "ts": 1},
              {**a, "ph": "e", "name": "two", "pid": 2, "ts": 2}, {**a, "ph": "e", "name": "one", "pid": 1, "ts": 5}]
    store = load_events(tmp_path, events)
    assert _track(store, "one").pid == 1 and _track(store, "two").pid == 2
    assert _span(store, "one") == (0, 5_000) and _span(store, "two") == (1_000, 2_000)
    assert int(store.slices.depth[_rows(store, "two")[0]]) == 0


def test_closed_async_pairs_in_pid_0_and_another_process_give_no_warning(tmp_path):
    # Seven pairs, ids shared between pid 0 and pid 1, interleaved in time: all closed.
    events = []
    for k in range(7):
        pid = k % 2
        events += [{"ph": "b", "cat": "c", "id": k // 2, "name": f"n{k}", "pid": pid, "tid": 0, "ts": k},
                   {"ph": "e", "cat": "c", "id": k // 2, "name": f"n{k}", "pid": pid, "tid": 0, "ts": k + 1.5}]
    store = load_events(tmp_path, events)
    assert len(store.slices) == 7
    assert not [w for w in store.warnings if "async" in w]
    assert [_span(store, f"n{k}") for k in range(7)] == [(k * 1000, k * 1000 + 1500) for k in range(7)]


def test_a_missing_tid_is_the_processs_main_thread_and_tid_0_is_thread_0(tmp_path):
    # Perfetto: tid = opt_tid.value_or(pid). tid 0 stays its own thread (Kineto's GPU stream 0).
    x = {"ph": "X", "pid": 5, "dur": 1}
    events = [{**x, "name": "none", "ts": 0}, {**x, "name": "zero", "tid": 0, "ts": 2},
              {**x, "name": "main", "tid": 5, "ts": 4}, {**x, "name": "other", "tid": 6, "ts": 6},
              {"ph": "M", "name": "thread_name", "pid": 5, "args": {"name": "the main one"}}]
    store = load_events(tmp_path, events)
    main = _track(store, "main")
    assert _track(store, "none") is main and main.tid == 5
    assert main.name == "the main one"  # a thread_name without a tid names the main thread
    assert _track(store, "zero").tid == 0 and _track(store, "zero") is not main
    assert _track(store, "other") is not main


def test_string_and_integer_pids_with_the_same_digits_are_two_processes(tmp_path):
    x = {"ph": "X", "tid": 1, "dur": 1}
    events = [{**x, "name": "int", "pid": 7, "ts": 0}, {**x, "name": "str", "pid": "7", "ts": 2}]
    store = load_events(tmp_path, events)
    assert _track(store, "int") is not _track(store, "str")
    assert _track(store, "int").pid == 7 and _track(store, "str").pid == "7"
