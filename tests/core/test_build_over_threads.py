"""The build split over threads (the nesting's pieces, the gathers, the flows' binding) makes the
same store as one thread: every column of every table, and the tracks. The size thresholds are
lowered so that the fixtures are split as a big trace is."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import FIXTURES, MI250, QWEN, STEPLOOP, UNCLOSED, X, assert_same_columns, write_trace
from vtui.load.trace import load_trace
from vtui.store import build, flows, nesting


@pytest.mark.parametrize("trace", [QWEN, MI250, STEPLOOP, UNCLOSED, FIXTURES / "catapult__webview.json.gz"],
                         ids=lambda p: p.name[:24])
def test_a_build_over_threads_equals_one_thread(trace, monkeypatch) -> None:
    one = load_trace(trace, cache=False, jobs=1)
    monkeypatch.setattr(nesting, "THREAD_MIN", 0)
    monkeypatch.setattr(build, "GATHER_MIN", 0)
    monkeypatch.setattr(flows, "SPLIT_MIN", 0)
    monkeypatch.setattr(build, "TIMES_SPLIT_MIN", 0)
    cuts = []
    real_cuts = nesting._cuts
    monkeypatch.setattr(nesting, "_cuts", lambda *a: cuts.append(real_cuts(*a)) or cuts[-1])
    many = load_trace(trace, cache=False, jobs=3)
    assert any(len(c) > 2 for c in cuts)  # the nesting was really cut into pieces
    assert_same_columns(one, many)
    for name, col in one.tracks.columns.items():
        assert np.array_equal(col, many.tracks.columns[name]), name
    assert one.warnings == many.warnings


def test_the_time_passes_over_threads_keep_the_origin_and_the_rejected_events(tmp_path, monkeypatch) -> None:
    """Timestamps further apart than int64 ns hold (the fullest ~126-year window wins), a negative
    and a missing dur, metadata: split by rows, the same times, origin and counts as one pass."""
    events = [X(f"op{i}", 1000.0 + 10 * i, 5.0, tid=1 + i % 3) for i in range(300)]
    events += [X("far", 1e17, 1.0), X("neg", 2000.0, -3.0), {"ph": "X", "name": "open", "pid": 1, "tid": 1, "ts": 2500.0},
               {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
               X("early", -1e300, 1.0), {"ph": "i", "name": "mark", "pid": 1, "tid": 2, "ts": 1500.0, "s": "t"}]
    path = write_trace(tmp_path, events)
    one = load_trace(path, cache=False, jobs=1)
    monkeypatch.setattr(build, "TIMES_SPLIT_MIN", 0)
    many = load_trace(path, cache=False, jobs=4)
    assert_same_columns(one, many)
    assert (one.origin_us, one.span_ns, one.warnings) == (many.origin_us, many.span_ns, many.warnings)
    assert any("far" in w or "ts" in w for w in one.warnings)  # the far events were rejected, and said
