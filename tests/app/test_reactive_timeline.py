"""The timeline's view is three values (window, selection, track layout), each replaced on a
change, and each widget redraws for the ones it draws: a selection move leaves the track list
alone, a zoom or pan leaves the track layout (and its rows) alone."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from tests.app.screen import read_screen
from tests.helpers import X, load_events, settle
from vtui.ui.timeline import view as view_module
from vtui.ui.timeline.lanes import Timeline
from vtui.ui.timeline.tracklist import TrackList
from vtui.ui.timeline.view import ViewState


def _events() -> list[dict]:
    """Two processes, three threads, ten slices in a row on each (all in the first window)."""
    out = []
    for pid, tid in ((1, 1), (1, 2), (2, 3)):
        out += [X(f"op_{tid}_{k}", k * 100.0, 80.0, pid=pid, tid=tid) for k in range(10)]
    return out


_real = view_module.build_rows


class Counting:
    """Counts the calls of a method of one object (its class's, patched by ``monkeypatch``)."""

    def __init__(self, monkeypatch, cls, name: str, only=None) -> None:
        self.calls: list[tuple] = []
        real = getattr(cls, name)

        def counted(obj, *args, **kwargs):
            if only is None or obj is only():
                self.calls.append(args)
            return real(obj, *args, **kwargs)

        monkeypatch.setattr(cls, name, counted)


async def test_a_selection_move_redraws_the_timeline_not_the_track_list(tmp_path, open_app, monkeypatch):
    async with open_app(load_events(tmp_path, _events()), (160, 40)) as (app, pilot):
        tracks, timeline = app.query_one(TrackList), app.query_one(Timeline)
        assert tracks.display and timeline.has_focus
        await pilot.press("right")  # the first slice in view
        await settle(pilot)
        first = app.view.selected
        pane = app.pane
        window, layout = pane.window, pane.track_layout
        list_lines = Counting(monkeypatch, TrackList, "render_line")
        list_refreshes = Counting(monkeypatch, TrackList, "refresh")
        timeline_lines = Counting(monkeypatch, Timeline, "render_line")
        await pilot.press("right", "right")  # two moves along the lane: keys, as a person's
        await settle(pilot)
        assert app.view.selected == first + 2 and app.store.name(app.view.selected).endswith("_2")
        assert "op_1_2" in "\n".join(read_screen(app).text)  # the details say so: the screen did change
        assert timeline_lines.calls  # the timeline drew the new selection
        assert pane.window is window and pane.track_layout is layout  # neither value was replaced
        assert list_lines.calls == [] and list_refreshes.calls == []  # the track list was left alone


async def test_a_zoom_or_pan_keeps_the_track_layout(tmp_path, open_app, monkeypatch):
    async with open_app(load_events(tmp_path, _events()), (160, 40)) as (app, pilot):
        pane = app.pane
        layout, rows, window = pane.track_layout, app.view.rows, pane.window
        builds: list = []
        monkeypatch.setattr(view_module, "build_rows", lambda *a, **k: (builds.append(a), _real(*a, **k))[1])
        list_lines = Counting(monkeypatch, TrackList, "render_line")
        await pilot.press("w", "w", "d")  # zoom in twice, pan right
        await settle(pilot)
        assert pane.window is not window and app.view.span < window.t1 - window.t0  # the window moved
        assert builds == [] and pane.track_layout is layout and app.view.rows is rows  # the rows did not
        # The track list redrew its head only (the ruler's span is written there), not its lines.
        assert list_lines.calls and {args[0] for args in list_lines.calls} == {0}


async def test_hiding_a_track_rebuilds_the_layout_once_and_redraws_the_list(tmp_path, open_app, monkeypatch):
    """The other way round: a track layout change is one new layout, and the track list redraws."""
    async with open_app(load_events(tmp_path, _events()), (160, 40)) as (app, pilot):
        pane = app.pane
        layout, window, selection = pane.track_layout, pane.window, pane.selection
        builds: list = []
        monkeypatch.setattr(view_module, "build_rows", lambda *a, **k: (builds.append(a), _real(*a, **k))[1])
        list_lines = Counting(monkeypatch, TrackList, "render_line")
        await pilot.press("shift+tab")  # to the track list
        await pilot.press("down", "down", "space")  # the first process, its first thread: hidden
        await settle(pilot)
        assert app.focused is app.query_one(TrackList)
        assert len(builds) == 1 and pane.track_layout is not layout and len(app.view.hidden) == 1
        assert pane.window is window and pane.selection is selection
        assert {args[0] for args in list_lines.calls} - {0}  # its lines, not only its head
        assert "hidden tracks" in "\n".join(read_screen(app).text)


def test_each_move_replaces_only_its_value(tmp_path):
    """Plain Python: the view's moves give new values for what they change and keep the rest."""
    v = ViewState(load_events(tmp_path, _events()))
    w, s, lay = v.window, v.selection, v.layout
    v.zoom(0.5)
    assert v.window is not w and v.selection is s and v.layout is lay
    w = v.window
    v.pan(0.2)
    assert v.window is not w and v.selection is s and v.layout is lay
    v.pan(5)  # against the end: the window stops there
    w = v.window
    v.pan(0.2)  # no further: the same value
    assert v.window is w
    v.show_all()
    w = v.window
    v.step_on_lane(1)  # selects the first slice in view
    assert v.selection is not s and v.layout is lay and v.window is w
    s = v.selection
    v.step_on_lane(1)
    assert v.selection is not s and v.window is w and v.layout is lay
    s = v.selection
    v.toggle_hidden(2)
    assert v.layout is not lay and v.window is w and v.selection is s
    lay = v.layout
    v.set_window(v.t0, v.t1)  # the same window: no new value, nobody redraws
    v.select(v.selected)
    assert v.window is w and v.selection is s and v.layout is lay
    v.set_range(100, 500)
    v.undo_range()
    assert v.range is None and v.window.history == ()
    with pytest.raises(FrozenInstanceError):
        v.window.t0 = 5  # type: ignore[misc]


async def test_a_click_selects_and_a_drag_sets_the_range_through_the_pane(tmp_path, open_app, monkeypatch):
    """The mouse on the plot: the timeline posts what happened, the pane changes the view."""
    async with open_app(load_events(tmp_path, _events()), (160, 40)) as (app, pilot):
        timeline, v = app.query_one(Timeline), app.view
        row = v.rows.find(v.store.tracks[int(v.store.slices.track[0])].id, 0)
        y = 1 + row - timeline.top  # under the ruler
        x_of = lambda t_us: timeline.plot_x + int(t_us * 1000 / v.span * timeline.plot_width)  # noqa: E731
        list_lines = Counting(monkeypatch, TrackList, "render_line")
        await pilot.click(Timeline, offset=(x_of(440), y))
        await settle(pilot)
        assert v.store.name(v.selected) == "op_1_4" and list_lines.calls == []
        await pilot.mouse_down(Timeline, offset=(x_of(200), y))
        await pilot.mouse_up(Timeline, offset=(x_of(600), y))
        await settle(pilot)
        a, b = v.range
        assert abs(a - 200_000) <= 2 * v.span / timeline.plot_width and abs(b - 600_000) <= 2 * v.span / timeline.plot_width
        assert "range" in "\n".join(read_screen(app).text)
