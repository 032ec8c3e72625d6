"""The build split over threads (the nesting's pieces, the gathers, the flows' binding) makes the
same store as one thread: every column of every table, and the tracks. The size thresholds are
lowered so that the fixtures are split as a big trace is."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import FIXTURES, MI250, QWEN, STEPLOOP, UNCLOSED, assert_same_columns
from vtui.load.trace import load_trace
from vtui.store import build, flows, nesting


@pytest.mark.parametrize("trace", [QWEN, MI250, STEPLOOP, UNCLOSED, FIXTURES / "catapult__webview.json.gz"],
                         ids=lambda p: p.name[:24])
def test_a_build_over_threads_equals_one_thread(trace, monkeypatch) -> None:
    one = load_trace(trace, cache=False, jobs=1)
    monkeypatch.setattr(nesting, "THREAD_MIN", 0)
    monkeypatch.setattr(build, "GATHER_MIN", 0)
    monkeypatch.setattr(flows, "SPLIT_MIN", 0)
    cuts = []
    real_cuts = nesting._cuts
    monkeypatch.setattr(nesting, "_cuts", lambda *a: cuts.append(real_cuts(*a)) or cuts[-1])
    many = load_trace(trace, cache=False, jobs=3)
    assert any(len(c) > 2 for c in cuts)  # the nesting was really cut into pieces
    assert_same_columns(one, many)
    for name, col in one.tracks.columns.items():
        assert np.array_equal(col, many.tracks.columns[name]), name
    assert one.warnings == many.warnings
