"""Damage costs only the damaged event: the scan resumes at the event array's level after a
corrupt event, and a timestamp far from all others is rejected, not the others. The one-process
and the parallel load agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import assert_same_columns
from vtui.load import parallel
from vtui.load.trace import load_trace

GOOD = 1000
# Corrupt (a bare `tru`) before args that hold a list of objects: a `},{` inside the args.
BAD_BALANCED = '{"ph": "X", "name": "bad", "pid": 1, "tid": 1, "ts": 1, "dur": tru, "args": {"l": [{"a": 1}, {"a": 2}]}}'
# Corrupt so that its quotes do not pair up: the brackets cannot be followed.
BAD_QUOTES = '{"ph": "X", "name": "bad, "pid": 1, "tid": 1, "ts": 1, "args": {"l": [{"a": 1}, {"a": 2}]}}'


def _good(i: int) -> str:
    return json.dumps({"ph": "X", "name": f"op{i % 5}", "pid": 1, "tid": 1 + i % 2, "ts": 10 + i, "dur": 0.5,
                       "args": {"i": i, "nested": [{"x": 1}, {"y": [{}, {}]}]}})


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text('{"traceEvents": [\n' + ",\n".join(lines) + '\n], "otherData": {"k": 1}}')
    return path


@pytest.mark.parametrize("bad", [BAD_BALANCED, BAD_QUOTES])
def test_resync_after_a_corrupt_event_never_lands_inside_its_args(tmp_path, bad):
    path = _write(tmp_path / "t.json", [_good(-1), bad] + [_good(i) for i in range(GOOD)])
    store = load_trace(path, cache=False)
    assert len(store.slices) == GOOD + 1
    assert sorted(store.slice_args(r)["i"] for r in range(len(store.slices))) == list(range(-1, GOOD))
    assert not any("unknown phases" in w for w in store.warnings)  # no junk event from inside the args
    assert any(w.startswith("skipped 1 regions of invalid") for w in store.warnings)
    assert not any("not closed" in w for w in store.warnings)
    assert store.sources[0].metadata.get("otherData") == {"k": 1}


@pytest.mark.parametrize("outlier", ["-1e300", "-9223372036854775808", "1e300"])
def test_one_far_timestamp_is_rejected_not_every_other_event(tmp_path, outlier):
    lines = [_good(i) for i in range(20)]
    lines.insert(7, '{"ph": "X", "name": "far", "pid": 1, "tid": 1, "ts": ' + outlier + ', "dur": 1}')
    store = load_trace(_write(tmp_path / "t.json", lines), cache=False)
    assert len(store.slices) == 20 and "far" not in {store.name(r) for r in range(20)}
    assert int(store.slices.start_ns.min()) == 0 and store.origin_us == 10.0
    assert "1 events without a usable ts were skipped (1 of them more than 126 years away from most others)" in store.warnings


def test_the_fullest_window_wins_when_timestamps_split_in_two(tmp_path):
    """Two far-apart groups: the bigger keeps its events; a tie keeps the earlier group."""
    lines = [_good(i) for i in range(5)]
    lines += [json.dumps({"ph": "X", "name": "late", "pid": 1, "tid": 1, "ts": 1e17 + i, "dur": 1}) for i in range(3)]
    store = load_trace(_write(tmp_path / "t.json", lines), cache=False)
    assert len(store.slices) == 5 and any(w.startswith("3 events without a usable ts were skipped (3 of") for w in store.warnings)


def test_parallel_load_of_a_damaged_trace_equals_one_process(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "MIN_RANGE", 1 << 10)
    monkeypatch.setattr("vtui.load.trace.PARALLEL_MIN", 1 << 10)
    lines = [_good(i) for i in range(GOOD)]
    lines.insert(300, BAD_BALANCED)
    lines.insert(600, BAD_QUOTES)
    lines.insert(700, '{"ph": "X", "name": "far", "pid": 1, "tid": 1, "ts": -1e300, "dur": 1}')
    lines.insert(800, '{"ph": "X", "name": "nl\nin name", "pid": 1, "tid": 1, "ts": 5, "dur": 1, "args": {"a": 1,},}')
    path = _write(tmp_path / "t.json", lines)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    one = load_trace(path, cache=False, jobs=1)
    two = load_trace(path, cache=False, jobs=2)
    assert len(one.slices) == GOOD + 1
    assert_same_columns(one, two, skip=("args_off",))
    assert one.strings == two.strings and one.tracks == two.tracks and one.warnings == two.warnings
