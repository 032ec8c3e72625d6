"""The relative time axis (z): ruler and status line count from the range's start or the selected slice."""

from __future__ import annotations

from textual.widgets import Static

from tests.helpers import QWEN
from vtui.ui.app import VtuiApp
from vtui.ui.timeline.lanes import Timeline
from vtui.ui.timeline.tracklist import TrackList
from vtui.units import format_duration


def _ruler(app) -> str:
    """The ruler as on screen: its head (in the track list beside, when shown), then the plot's ruler."""
    line = "".join(seg.text for seg in app.query_one(Timeline).render_line(0))
    tracks = app.query_one(TrackList)
    return ("".join(seg.text for seg in tracks.render_line(0)) + "│" + line) if tracks.display else line


def _head_width(app) -> int:
    tracks = app.query_one(TrackList)
    return tracks.size.width if tracks.display else app.query_one(Timeline).label_width


def _status(app) -> str:
    return str(app.query_one("#status", Static).render())


async def test_time_axis_counts_from_the_slice_then_the_range(qwen_store):
    store = qwen_store
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        v = app.view
        assert any(keys == "z" and "Relative times" in what for keys, what in app.key_rows())  # in the help
        await pilot.press("z")  # nothing selected: nothing to count from
        assert v.origin is None and "Δ" not in _ruler(app)
        gpu = next(t for t in store.tracks if t.kind == "gpu")
        s = store.slices
        kernel = int(next(r for r in range(len(s)) if s.track[r] == gpu.id and s.dur_ns[r] > 0))
        v.select(kernel)
        await pilot.press("f")  # the kernel framed: the window starts before it
        await pilot.press("z")
        await pilot.pause()
        start = int(s.start_ns[kernel])
        name = store.name(kernel)
        assert v.origin == (start, name)
        timeline = app.query_one(Timeline)
        ruler = _ruler(app)
        head = _head_width(app)
        assert ruler[:head].strip().startswith("Δ")
        assert f"from {name}"[: head - 3] in ruler[:head]
        # A tick sits on the kernel's start and reads zero; the window's start reads negative.
        x = head + 1 + timeline._x_of(start)
        assert ruler[x:x + 4] == "┼0ns"
        status = _status(app)
        assert f"window {format_duration(v.t0 - start)}" in status and status.startswith("window -")
        assert f"times from {name} (z)" in status
        # With a range, z counts from the range's start: the range then reads from 0.
        await pilot.press("z", "R", "z")
        await pilot.pause()
        assert v.origin == (v.range[0], "range start")
        status = _status(app)
        assert f"range 0 ns – {format_duration(v.range[1] - v.range[0])}" in status
        assert "Δ from range start" in _ruler(app)
        await pilot.press("z")  # back to times from the trace start
        await pilot.pause()
        assert v.origin is None and "Δ" not in _ruler(app) and "times from" not in _status(app)
        assert f"window {format_duration(v.t0)}" in _status(app)


async def test_origin_name_is_escaped(qwen_store):
    store = qwen_store
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        app.view.origin = (0, "\x1b]0;pwned\x07[b]x")
        app._update()
        ruler = _ruler(app)
        assert "\x1b" not in ruler and "\\x1b" in ruler
