"""The track list sits beside the timeline row for row: line y names what the timeline draws at y."""

from __future__ import annotations

import numpy as np

from tests.helpers import QWEN, STACK
from vtui.analysis.gpu.memory_tracks import memory_series
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.timeline.lanes import Timeline
from vtui.ui.timeline.tracklist import TrackList
from vtui.ui.timeline.view import HEADER, SERIES
from vtui.ui.trace_text import visible


def _text(strip) -> str:
    return "".join(seg.text for seg in strip)


def assert_aligned(app) -> int:
    """Every line of the track list names the timeline's row on the same screen line; returns rows checked."""
    timeline, tracks = app.query_one(Timeline), app.query_one(TrackList)
    v = app.view
    assert tracks.display and tracks.region.y == timeline.region.y and tracks.size.height == timeline.size.height
    checked = 0
    for y in range(1, timeline.size.height):
        index = timeline.top + y - 1
        row = v.rows[index] if index < len(v.rows) else None
        assert tracks.row_at(y) == row
        left = _text(tracks.render_line(y))
        assert timeline.label_width == 0  # the list names the rows: the timeline repeats no label column
        if row is None:
            continue
        checked += 1
        if row.lane == HEADER:  # the process header beside the process header
            title = visible(v.group_title(row.group))
            assert title in left, (y, left)
        elif row.first:  # the track's name beside its first row
            track = v.store.tracks[row.track]
            assert visible(track.title) in left, (y, left)
        elif row.lane == SERIES:  # a memory counter row: its own name
            assert memory_series(v.store)[row.series].title in left, (y, left)
        else:  # further rows of a track: no name on either side
            assert not any(ch.isalpha() for ch in left.replace("rows", "").replace("enter", "")), (y, left)
    return checked


async def test_track_list_lines_up_with_the_timeline_while_scrolling(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        v = app.view
        assert len(v.rows) > app.query_one(Timeline).size.height  # more rows than the screen: scrolling matters
        assert assert_aligned(app)
        tops = {app.query_one(Timeline).top}
        for _ in range(3):
            await pilot.press("pagedown")
            await pilot.pause()
            tops.add(app.query_one(Timeline).top)
            assert assert_aligned(app)
        assert len(tops) >= 2  # it did scroll
        # Unfold the deep Python thread (c on one of its slices), then scroll back up.
        deep = max(qwen_store.tracks, key=lambda t: t.lanes)
        s = qwen_store.slices
        v.select(int(np.flatnonzero(s.track == deep.id)[0]))
        await pilot.press("c")
        await pilot.pause()
        assert v.is_collapsed(deep.id) is False and assert_aligned(app)
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert assert_aligned(app)
        # A filter, and a track hidden from the list: still line for line.
        await pilot.press("t", *"stream|thread", "enter")
        await pilot.pause()
        assert assert_aligned(app)


async def test_folding_from_the_track_list_folds_the_timeline(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        v = app.view
        tracks = app.query_one(TrackList)
        tracks.focus()
        await pilot.press("down")  # the first process's header
        assert tracks.cursor[0] == "group"
        group = tracks.cursor[1]
        before = len(v.rows)
        await pilot.press("enter")
        await pilot.pause()
        assert group in v.folded and len(v.rows) < before
        assert [r for r in v.rows if v.group_of(r.track) == group] == [v.rows[0]]  # only its header is left
        assert "track)" in _text(tracks.render_line(1)) and assert_aligned(app)
        # The cursor keeps the viewport: moving down past the screen scrolls both panes together.
        for _ in range(12):
            await pilot.press("down")
        await pilot.pause()
        assert assert_aligned(app)
        await pilot.press("up", "up")  # back to a track line
        track = tracks.cursor_track
        await pilot.press("space")  # hidden: listed below the rows, where space shows it again
        await pilot.pause()
        assert track in v.hidden and tracks.cursor_index() >= len(v.rows)
        assert assert_aligned(app)
        await pilot.press("space")
        await pilot.pause()
        assert track not in v.hidden and assert_aligned(app)
        # A jump to a slice inside the folded process unfolds it.
        s = v.store.slices
        inside = next(r for r in range(len(s)) if v.group_of(int(s.track[r])) == group)
        v.select(inside)
        assert group not in v.folded and v.row_of_selection() >= 0


async def test_deep_stack_folded_rows_line_up():
    app = VtuiApp(STACK, store=load_trace(STACK))
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        assert assert_aligned(app)
        v = app.view
        s = app.store.slices
        deep = max(app.store.tracks, key=lambda t: t.lanes)
        v.select(int(np.flatnonzero((s.track == deep.id) & (s.lane > 20))[0]))  # unfolds the stack
        await pilot.press("f")
        await pilot.pause()
        assert app.query_one(Timeline).top > 0 and assert_aligned(app)  # scrolled to the selection: both panes
        await pilot.press("c")
        await pilot.pause()
        assert assert_aligned(app)


async def test_scrolled_rows_stay_until_the_selection_or_window_moves(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 24)) as pilot:
        await pilot.pause()
        v = app.view
        await pilot.press("right")  # a slice on the first track, near the top
        await pilot.press("pagedown")
        await pilot.pause()
        scrolled = app.query_one(Timeline).top
        assert scrolled > v.row_of_selection()  # the selection is above the screen now
        tracks = app.query_one(TrackList)
        await pilot.press("shift+tab", "down")  # the cursor starts on screen, not back at the top
        assert tracks.cursor_index() >= scrolled and app.query_one(Timeline).top == scrolled
        await pilot.press("down", "space")  # hide a track: rows rebuilt, the view follows the cursor, not the selection
        await pilot.pause()
        height = app.query_one(Timeline).rows_height
        assert v.hidden and app.query_one(Timeline).top <= tracks.cursor_index() < app.query_one(Timeline).top + height
        assert app.query_one(Timeline).top > v.row_of_selection() and assert_aligned(app)
        await pilot.press("tab", "f")  # framing the selection brings its row back, both panes
        await pilot.pause()
        assert app.query_one(Timeline).top <= v.row_of_selection() < app.query_one(Timeline).top + height and assert_aligned(app)
