"""The explorer driven by key presses (Pilot), asserting on its state."""

from __future__ import annotations

import pytest

from tests.helpers import QWEN, STEPLOOP, settle
from vtui.ui.app import VtuiApp
from vtui.ui.keys import bindings
from vtui.ui.widgets.details import DetailsPanel


async def test_loads_in_background_and_zooms_and_pans():
    app = VtuiApp(STEPLOOP)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        v = app.view
        assert v is not None and v.t0 == 0 and v.t1 == app.store.span_ns
        await pilot.press("w", "w")
        assert v.span == pytest.approx(app.store.span_ns * 0.36, rel=0.01)
        t0 = v.t0
        await pilot.press("d")
        assert v.t0 > t0
        await pilot.press("a", "a")
        assert v.t0 < t0
        await pilot.press("0")
        assert (v.t0, v.t1) == (0, app.store.span_ns)
        await pilot.press("s")  # zooming out past the whole trace is capped
        assert v.span <= app.store.span_ns * 1.2


async def test_arrows_walk_lane_and_nesting(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        v = app.view
        await pilot.press("down")  # selects the first visible slice
        first = v.selected
        assert steploop_store.name(first) == "engine_step"
        await pilot.press("right")
        assert v.selected != first and steploop_store.name(v.selected) == "engine_step"
        assert steploop_store.slices.start_ns[v.selected] > steploop_store.slices.start_ns[first]
        await pilot.press("left")
        assert v.selected == first
        await pilot.press("down")  # to its first child
        child = v.selected
        assert steploop_store.slices.parent[child] == first
        assert steploop_store.name(child) == "schedule"
        await pilot.press("up")
        assert v.selected == first
        await pilot.press("f")
        assert v.t0 <= steploop_store.slices.start_ns[first] and v.t1 >= steploop_store.slices.end_ns[first]
        assert v.span < steploop_store.span_ns / 10
        details = str(app.query_one(DetailsPanel).render())
        assert "engine_step" in details and "dur" in details


async def test_goto_time(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("w", "w", "w")
        await pilot.press("g")
        await pilot.press(*"100ms", "enter")
        v = app.view
        assert v.t0 < 100_000_000 < v.t1
        assert abs((v.t0 + v.t1) / 2 - 100_000_000) < 2


async def test_filter_tracks_by_regex(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        v = app.view
        all_rows = len(v.rows)
        await pilot.press("t", *"stream", "enter")
        tracks = v.visible_tracks()
        assert tracks and all("stream" in t.title for t in tracks)
        assert len(v.rows) < all_rows
        await pilot.press("t", *["backspace"] * 6, "enter")
        assert len(v.rows) == all_rows


async def test_follow_flow_from_launch_to_kernel_and_back(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        f = qwen_store.flows
        launch = int(f.src_slice[0])
        app.view.select(launch)
        await pilot.press("right_square_bracket")
        kernel = app.view.selected
        assert kernel == int(f.dst_slice[0])
        assert qwen_store.tracks[qwen_store.slices.track[kernel]].kind == "gpu"
        details = str(app.query_one(DetailsPanel).render())
        assert "flow ←" in details
        await pilot.press("left_square_bracket")
        assert app.view.selected == launch


async def test_hide_and_pin_tracks_from_track_list(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        v = app.view
        tree = app.query_one("#tracks")
        assert app.focused is app.query_one("#timeline")
        await pilot.press("shift+tab")  # focus moves between panes (tab goes on to the bottom tabs)
        assert app.focused is tree
        await pilot.press("down", "down")
        track = tree.cursor_track
        assert track is not None
        await pilot.press("space")
        assert track in v.hidden and all(r.track != track for r in v.rows)
        await pilot.press("space")
        assert track not in v.hidden
        await pilot.press("p")
        assert v.rows[0].track == track


async def test_help_lists_every_binding(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        text = str(app.screen.query_one("#help-text").render())
        for b in bindings("timeline"):  # the app's and its timeline pane's
            assert b.description in text
        await pilot.press("escape")
        assert app.screen is app.screen_stack[0]


async def test_bad_file_shows_message_not_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("this is not json")
    app = VtuiApp(bad)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        text = str(app.query_one("#error").render())
        assert "not a JSON trace" in text
        await pilot.press("q")
    assert app.return_code == 1
