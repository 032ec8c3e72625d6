"""The timeline's rows built as arrays (a million tracks must not slow the app's first frame) are the
rows the simple path made (one Row per lane, track by track, group by group: kept below as the
reference), in every view state that changes them: hidden, pinned, folded, expanded, filtered, a
small lane cap; on the fixtures and on generated traces of many odd threads. ``find`` gives the
row a linear search finds."""

from __future__ import annotations

import json
import random

import pytest

from tests.core.test_trackset_columns import _odd_threads
from tests.helpers import MI250, QWEN, STACK, UNCLOSED
from vtui.analysis.gpu.memory_tracks import series_of_track
from vtui.load.trace import load_trace
from vtui.store.tracks import COUNTER
from vtui.ui.timeline.rows import HEADER, SERIES, Row, RowList
from vtui.ui.timeline.view import PINNED, ViewState


def _reference_rows(v: ViewState) -> list[Row]:
    """The rows as ``ViewState.rebuild_rows`` made them before they were arrays."""
    tracks = [t for t in v.store.tracks if t.id not in v.hidden and v.matches(t)]
    pinned = sorted((t for t in tracks if t.id in v.pinned), key=lambda t: v.pinned.index(t.id))
    groups: dict[tuple, list] = {}
    for t in pinned + [t for t in tracks if t.id not in v.pinned]:
        key = PINNED if t.id in v.pinned else ("process", t.source, t.process_title)
        groups.setdefault(key, []).append(t)
    rows: list[Row] = []
    for key, members in groups.items():
        rows.append(Row(members[0].id, HEADER, False, group=key))
        if key in v.folded:
            continue
        for t in members:
            shown = t.lanes if t.id in v.expanded or t.lanes <= v.lane_cap + 1 else v.lane_cap
            rows.extend(Row(t.id, lane, lane == 0, t.lanes - shown if lane == shown - 1 else 0) for lane in range(shown))
            if t.instant_count or t.kind == COUNTER:
                rows.append(Row(t.id, -1, shown == 0))
            if t.instant_count:
                rows.extend(Row(t.id, SERIES, False, series=k) for k in series_of_track(v.store, t.id))
    return rows


def _states(v: ViewState, rng: random.Random):
    """The view in a series of states: each yields once its rows are rebuilt."""
    n = len(v.store.tracks)
    yield "plain"
    v.lane_cap = 2
    v.rebuild_rows()
    yield "lane cap 2"
    deep = [t.id for t in v.store.tracks if t.lanes > 3]
    if deep:
        v.toggle_expanded(deep[0])
        yield "expanded"
    for t in rng.sample(range(n), min(3, n)):
        v.toggle_pinned(t)
    yield "pinned"
    for t in rng.sample(range(n), min(n // 3, 50)):
        v.toggle_hidden(t)
    yield "hidden"
    keys = [r.group for r in v.rows if r.lane == HEADER]
    for key in keys[:: 2]:
        v.toggle_folded(key)
    yield "folded"
    v.filter_text = "1"
    v.rebuild_rows()
    yield "filtered"


def _check(v: ViewState) -> None:
    want = _reference_rows(v)
    assert isinstance(v.rows, RowList)
    assert list(v.rows) == want
    assert [v.rows[i] for i in range(len(want))] == want and v.rows[-1:] == want[-1:]
    first = {}
    for i, r in enumerate(want):
        if r.lane >= 0 or r.lane == -1:
            first.setdefault((r.track, r.lane), i)
    for (track, lane), i in first.items():
        assert v.rows.find(track, lane) == i
    for track in range(len(v.store.tracks)):
        assert v.rows.find(track, 10_000) == -1
        if (track, 0) not in first:
            assert v.rows.find(track, 0) == -1
    stops = [i for i, r in enumerate(want) if r.lane == HEADER or r.first]  # the track list's cursor stops
    assert v.rows.stop_lines().tolist() == stops
    for i in stops:
        r = want[i]
        if r.lane == HEADER:
            assert v.rows.header_line(r.group) == i
        else:
            assert v.rows.first_line(r.track) == i
    for key in {r.group for r in want if r.lane == HEADER}:
        assert v.group_size(key) == len(dict(v.groups())[key])


@pytest.mark.parametrize("path", [MI250, QWEN, STACK, UNCLOSED], ids=lambda p: p.name)
def test_rows_match_the_simple_path_on_fixtures(path):
    v = ViewState(load_trace(path, cache=False))
    rng = random.Random(1)
    for _state in _states(v, rng):
        _check(v)


@pytest.mark.parametrize("seed", range(4))
def test_rows_match_the_simple_path_on_many_odd_threads(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": _odd_threads(rng, 12_000 if seed == 0 else 600)}))  # seed 0: more rows than one block
    v = ViewState(load_trace(path, cache=False))
    assert len(v.store.tracks) > 100 and (seed or len(v.rows) > 2 * 4096)
    for _state in _states(v, rng):
        _check(v)


def test_no_tracks_shown_gives_no_rows(tmp_path):
    v = ViewState(load_trace(UNCLOSED, cache=False))
    v.filter_text = "no track is called this"
    v.rebuild_rows()
    assert len(v.rows) == 0 and list(v.rows) == [] == _reference_rows(v)
    assert v.row_of_selection() == -1 and v.rows.find(0, 0) == -1
