"""The store build's warnings: data (rule, count, example) made into the texts users read, and
the index the build made kept by the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vtui.store.store as store_module
from vtui.load.trace import load_trace
from vtui.store.build_warnings import RULES, BuildWarning, warning_if


def _load(tmp_path: Path, events: list[dict]):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return load_trace(path, cache=False, jobs=1)


def test_every_rule_in_one_trace_gives_the_texts_users_know(tmp_path):
    """One trace that trips every rule; the texts are written out whole, as users have seen them."""
    t = {"pid": 1, "tid": 2}
    events = [
        {"ph": "M", "name": "thread_name", **t, "args": {"name": "a"}},
        {"ph": "M", "name": "thread_name", **t, "args": {"name": "b"}},  # given again, differently
        {"ph": "X", "name": "no ts", **t, "dur": 1},
        {"ph": "X", "name": "far", **t, "ts": 1e300, "dur": 1},
        {"ph": "X", "name": "x", **t, "ts": 0, "dur": -5},
        {"ph": "X", "name": "still open", "pid": 1, "tid": 3, "ts": 3},
        {"ph": "b", "cat": "c", "name": "no id", **t, "ts": 9},
        {"ph": "s", "cat": "fl", "name": "no id", **t, "ts": 13},
        {"ph": "X", "name": "p", **t, "ts": 10, "dur": 10},
        {"ph": "X", "name": "q", **t, "ts": 15, "dur": 10},  # partly overlaps p
        {"ph": "E", **t, "ts": 30},
        {"ph": "B", "name": "open", **t, "ts": 40},
        {"ph": "e", "cat": "c", "id": 1, "name": "r", **t, "ts": 5},
        {"ph": "b", "cat": "c", "id": 2, "name": "r", **t, "ts": 6},
        {"ph": "F", "cat": "c", "id": 3, "name": "s", **t, "ts": 7},
        {"ph": "S", "cat": "c", "id": 4, "name": "s", **t, "ts": 8},
        {"ph": "C", "name": "mem", "pid": 1, "ts": 1, "args": {"used": "lots"}},
        {"ph": "Q", "name": "odd", **t, "ts": 1},
        {"ph": "f", "cat": "fl", "id": 7, "name": "fl", **t, "ts": 12, "bp": "e"},
        {"ph": "s", "cat": "fl", "id": 8, "name": "fl", **t, "ts": 11},
    ]
    assert _load(tmp_path, events).warnings == [
        "2 events without a usable ts were skipped (1 of them more than 126 years away from most others)",
        "1 process/thread names or sort indices were given again with a different value (the last one wins)",
        "1 X events had a negative or huge dur (skipped, as Perfetto skips them)",
        "1 X events had no dur (still open when tracing stopped?): they run to the trace end",
        "1 E events had no open B on their thread (ignored)",
        "1 B events were never closed (they run to the trace end)",
        "1 async b/e ends had no open begin (ignored)",
        "1 async b/e begins were never ended (they run to the trace end)",
        "1 async S/F ends had no open begin (ignored)",
        "1 async S/F begins were never ended (they run to the trace end)",
        "1 async events without an id or a pid were skipped (as Perfetto skips them)",
        "1 counter values were not numbers (or past the float range; skipped)",
        "1 events with unknown phases were skipped: 'Q'",
        "1 flow events without an id were skipped (as Perfetto skips them)",
        "1 flow ends had no start (launched before the trace?)",
        "1 flow starts had no end",
        "1 slices partly overlap a neighbour (shown on extra lanes)",
    ]


def test_a_clean_trace_has_no_warnings(tmp_path):
    assert _load(tmp_path, [{"ph": "X", "name": "x", "pid": 1, "tid": 2, "ts": 0, "dur": 1}]).warnings == []


def test_the_text_comes_from_the_rule_count_and_example():
    assert BuildWarning("unusable_ts", 1234).text == "1,234 events without a usable ts were skipped"
    assert BuildWarning("unusable_ts", 3, "2").text.endswith("(2 of them more than 126 years away from most others)")
    assert BuildWarning("async_unmatched_end", 2, "S/F").text == "2 async S/F ends had no open begin (ignored)"
    assert warning_if("bad_dur", 0) == []
    assert warning_if("bad_dur", 5) == [BuildWarning("bad_dur", 5)]
    for rule in RULES:  # every rule makes a text (no template names a field it is not given)
        assert str(7) in BuildWarning(rule, 7, "e").text
    with pytest.raises(AttributeError):
        BuildWarning("bad_dur", 1).count = 2  # type: ignore[misc]  # frozen: a warning is a fact


def test_the_store_keeps_the_index_the_build_made(tmp_path, monkeypatch):
    store = _load(tmp_path, [{"ph": "X", "name": "x", "pid": 1, "tid": 2, "ts": 0, "dur": 1}])

    def no_second_build(*_args):
        raise AssertionError("the index was built a second time")

    monkeypatch.setattr(store_module, "IntervalIndex", no_second_build)
    assert list(store.index.query(int(store.slices.track[0]), 0, 1)) == [0]
