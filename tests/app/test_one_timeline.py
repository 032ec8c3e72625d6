"""One timeline pane (vtui.ui.timeline.pane) for the main view and both compare panes: the same
keys draw the same window in each, and the search (its "searching…", esc, its errors) behaves the
same in each, because it is one piece of code mounted three times."""

from __future__ import annotations

import pytest

from tests.app.screen import read_screen
from tests.helpers import STEPLOOP, search_until_cancelled, settle
from vtui.ui.app import VtuiApp
from vtui.ui.screens.compare import CompareApp, TracePane
from vtui.ui.timeline.lanes import Timeline
from vtui.ui.timeline.main_view import MainPane
from vtui.ui.timeline.pane import TimelinePane

KEYS = ("w", "w", "w", "d", "d", "a", "s", "w", "right", "right", "down", "f", "w", "d")
SIZE = (100, 40)  # below the track list's width: every timeline spans the terminal


def _window_of(line: str) -> str:
    """``window 1.2 ms – 3.4 ms`` out of a status or title line."""
    return line[line.index("window "):].split(" · ")[0].strip()


def _ruler_line(app, timeline: Timeline) -> str:
    return read_screen(app).text[timeline.region.y]


async def _drawn_after_keys(app, pane: TimelinePane, pilot) -> tuple[tuple[int, int], str, str]:
    pane.timeline.focus()
    await pilot.pause()
    await pilot.press(*KEYS)
    await settle(pilot)
    screen = read_screen(app).text
    window = next(_window_of(line) for line in screen if "window " in line
                  and line.find("window ") >= 0 and (isinstance(pane, MainPane) or f"{pane.tag} · " in line))
    return (pane.view.t0, pane.view.t1), window, _ruler_line(app, pane.timeline)


async def test_the_same_keys_draw_the_same_window_in_the_main_view_and_each_compare_pane(steploop_store):
    path = STEPLOOP
    main = VtuiApp(path, store=steploop_store)
    async with main.run_test(size=SIZE) as pilot:
        await settle(pilot, 2)
        assert len(main.query(TimelinePane)) == 1
        expected = await _drawn_after_keys(main, main.pane, pilot)
    for which in (0, 1):
        app = CompareApp(path, path, stores=(steploop_store, steploop_store))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, 2)
            panes = app.panes()
            assert len(panes) == 2 and all(isinstance(p, TimelinePane) for p in panes)
            times, window, ruler = await _drawn_after_keys(app, panes[which], pilot)
            assert times == expected[0], which
            assert window == expected[1], which  # the title line says what the status line said
            # The ruler as drawn: the same ticks at the same columns (both label columns are shown).
            assert ruler.rstrip(" │") == expected[2].rstrip(" │"), which
            other = panes[1 - which]
            assert other.view.span == steploop_store.span_ns  # unlocked: the other pane did not move


async def test_wheel_zooms_by_the_keys_step_in_both_modes(steploop_store):
    path = STEPLOOP
    spans = []
    for app in (VtuiApp(path, store=steploop_store), CompareApp(path, path, stores=(steploop_store, steploop_store))):
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, 2)
            pane = app.query(TimelinePane).first()
            pane.timeline.post_message(Timeline.Wheel(True, False, pane.view.t0))
            await settle(pilot)
            wheel = pane.view.span
            await pilot.press("s", "w")  # back out and in by the key's step
            await settle(pilot)
            spans.append((wheel, pane.view.span))
    assert spans[0] == spans[1] and spans[0][0] == spans[0][1] < steploop_store.span_ns


def _record_errors(app) -> list[str]:
    """Every error the app notifies, as it is told: toasts expire (a busy machine can outlast one),
    so the test keeps its own list instead of reading the app's live notifications."""
    said: list[str] = []
    notify = app.notify

    def recording(message, *args, severity="information", **kwargs):
        if severity == "error":
            said.append(str(message))
        return notify(message, *args, severity=severity, **kwargs)

    app.notify = recording
    return said


async def _search_bad_regex(pilot) -> None:
    await pilot.press("slash", *"(foo", "enter")
    await settle(pilot)


async def test_a_search_error_is_told_in_the_main_view_and_in_each_compare_pane(steploop_store):
    path = STEPLOOP
    main = VtuiApp(path, store=steploop_store)
    main_said = _record_errors(main)
    async with main.run_test(size=SIZE) as pilot:
        await settle(pilot, 2)
        await _search_bad_regex(pilot)
        assert len(main_said) == 1 and "(foo" in main_said[0] and "(?i)" not in main_said[0]
    app = CompareApp(path, path, stores=(steploop_store, steploop_store))
    compare_said = _record_errors(app)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, 2)
        for pane in app.panes():
            pane.timeline.focus()
            await pilot.pause()
            before = len(compare_said)
            await _search_bad_regex(pilot)
            said = compare_said[before:]
            # the same words as the main view, after which trace it was
            assert said == [f"{pane.tag}: {m}" for m in main_said], said


@pytest.mark.parametrize("which", [0, 1])
async def test_each_compare_pane_says_searching_and_esc_stops_it(steploop_store, monkeypatch, which):
    started = search_until_cancelled(monkeypatch)
    path = STEPLOOP
    app = CompareApp(path, path, stores=(steploop_store, steploop_store))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 2)
        pane = app.panes()[which]
        pane.timeline.focus()
        await pilot.pause()
        await pilot.press("slash", *"slow", "enter")
        await pilot.pause()
        assert started.wait(30)
        await pilot.pause()
        assert f"searching /slow/ in {pane.tag}… (esc stops)" in "\n".join(read_screen(app).text)
        await pilot.press("escape")
        await settle(pilot)
        assert not pane.search.running and pane.view.found is None
        assert "searching" not in "\n".join(read_screen(app).text)
        assert "Search stopped" in [n.message for n in app._notifications]


async def test_timeline_keys_rest_under_another_screen_without_screen_counting(steploop_store):
    """The keys are the pane's: out of the focus chain under Insights, with no check_action."""
    assert "check_action" not in VtuiApp.__dict__ and "check_action" not in CompareApp.__dict__
    path = STEPLOOP
    for app in (VtuiApp(path, store=steploop_store), CompareApp(path, path, stores=(steploop_store, steploop_store))):
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot, 2)
            pane = app.query(TimelinePane).first()
            await pilot.press("i")
            await settle(pilot, 2)
            assert app.screen is not app.screen_stack[0]
            span = pane.view.span
            await pilot.press("w", "a", "l")  # zoom, pan; in compare mode l would lock
            await pilot.pause()
            assert pane.view.span == span and pane.view.t0 == 0
            assert getattr(app, "lock_mode", None) is None


async def test_typed_range_in_a_compare_pane_moves_the_locked_other(steploop_store):
    path = STEPLOOP
    app = CompareApp(path, path, stores=(steploop_store, steploop_store))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 2)
        pa, pb = app.panes()
        assert isinstance(pa, TracePane)
        await pilot.press("l")  # locked (same trace twice: the same times in both)
        await pilot.press("g", *"1ms:2ms", "enter")
        await settle(pilot)
        assert pa.view.range == (1_000_000, 2_000_000)
        assert (pb.view.t0, pb.view.t1) == (pa.view.t0, pa.view.t1) and pa.view.t0 < 1_000_000 < pa.view.t1
