"""``vtui.ui.workers.deliver``: a thread worker's result reaches the screen only while that worker
is still the current one — a newer run of its group, or closing its screen, drops it."""

from __future__ import annotations

import asyncio
import threading

from textual import work
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from vtui.ui.workers import deliver

WAIT_S = 10.0  # an upper bound on a gate that the test itself opens, never a timing


class ProbeScreen(Screen[None]):
    """Draws the tag of the last run that delivered; each run waits on its gate first."""

    def __init__(self) -> None:
        super().__init__()
        self.started: dict[str, threading.Event] = {}
        self.finished: dict[str, threading.Event] = {}
        self.calls: list[str] = []  # every show(), drawn or not

    def compose(self) -> ComposeResult:
        yield Static("nothing yet", id="shown")

    def show(self, tag: str) -> None:
        self.calls.append(tag)
        self.query_one("#shown", Static).update(tag)  # raises once the screen is gone

    @work(thread=True, exclusive=True, group="probe", exit_on_error=False)
    def compute(self, tag: str, gate: threading.Event) -> None:
        done = self.finished[tag]
        app = self.app  # taken while the screen is mounted (a removed screen has no app to ask)
        self.started[tag].set()
        try:
            gate.wait(WAIT_S)
            deliver(app, self.show, tag)
        finally:
            done.set()


def shown(screen: ProbeScreen) -> str:
    return str(screen.query_one("#shown", Static).render())


def expect(screen: ProbeScreen, *tags: str) -> None:
    for tag in tags:
        screen.started[tag], screen.finished[tag] = threading.Event(), threading.Event()


async def finished(screen: ProbeScreen, tag: str) -> None:
    """Until run ``tag``'s thread has returned from ``deliver`` (the UI loop keeps running)."""
    assert await asyncio.to_thread(screen.finished[tag].wait, WAIT_S)


async def test_a_newer_run_drops_the_older_runs_late_result():
    app = App()
    async with app.run_test() as pilot:
        screen = ProbeScreen()
        await app.push_screen(screen)
        old_gate, new_gate = threading.Event(), threading.Event()
        expect(screen, "old", "new")
        screen.compute("old", old_gate)
        assert await asyncio.to_thread(screen.started["old"].wait, WAIT_S)  # running, not just queued
        screen.compute("new", new_gate)  # exclusive: cancels "old", whose thread runs on
        new_gate.set()
        await finished(screen, "new")
        await pilot.pause()
        assert shown(screen) == "new"
        old_gate.set()  # the old run ends last: its result must not cover the new one
        await finished(screen, "old")
        await pilot.pause()
        assert shown(screen) == "new"


async def test_a_closed_screens_result_is_dropped_not_an_error():
    app = App()
    async with app.run_test() as pilot:
        screen = ProbeScreen()
        await app.push_screen(screen)
        gate = threading.Event()
        expect(screen, "late")
        worker = screen.compute("late", gate)
        assert await asyncio.to_thread(screen.started["late"].wait, WAIT_S)
        app.pop_screen()
        await pilot.pause()
        gate.set()
        await finished(screen, "late")
        await pilot.pause()
        assert screen.calls == []  # show() on the removed screen would raise NoMatches in the worker
        assert worker.is_cancelled and app.screen is not screen and app.is_running


async def test_the_current_runs_result_is_shown():
    app = App()
    async with app.run_test() as pilot:
        screen = ProbeScreen()
        await app.push_screen(screen)
        gate = threading.Event()
        expect(screen, "only")
        screen.compute("only", gate)
        gate.set()
        await finished(screen, "only")
        await pilot.pause()
        assert shown(screen) == "only"


async def test_a_search_that_ends_after_esc_draws_nothing(steploop_store, monkeypatch):
    """The search job hands back through ``deliver`` too: esc cancels its worker, so a search that
    finishes anyway (one that never looks at the cancel) does not mark the timeline."""
    import vtui.ui.timeline.searching as searching
    from tests.helpers import STEPLOOP
    from vtui.analysis.slices.search import search as real_search
    from vtui.ui.app import VtuiApp

    started, release, returned = threading.Event(), threading.Event(), threading.Event()

    def stubborn(store, text, tracks=None, ignore_case=False, budget=None):
        started.set()
        release.wait(WAIT_S)
        try:
            return real_search(store, text, tracks=tracks, ignore_case=ignore_case)
        finally:
            returned.set()

    monkeypatch.setattr(searching, "search", stubborn)
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(100, 40)) as pilot:
        for _ in range(200):  # until the loaded view is mounted
            if getattr(app, "pane", None) is not None:
                break
            await pilot.pause()
        app.pane.timeline.focus()
        await pilot.pause()
        await pilot.press("slash", *"a", "enter")
        assert await asyncio.to_thread(started.wait, WAIT_S)
        await pilot.press("escape")
        await pilot.pause()
        release.set()
        assert await asyncio.to_thread(returned.wait, WAIT_S)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.pane.view.found is None and not app.pane.search.running


async def test_a_failing_tree_diff_is_one_line_on_its_screen(steploop_store, monkeypatch):
    import vtui.analysis.calltree.diff as calltree_diff
    from vtui.ui.screens.tree_diff import TreeDiffScreen

    def broken(a, b):
        raise ValueError("no \x1b[31mtrees\x1b[0m")

    monkeypatch.setattr(calltree_diff, "diff_trees", broken)
    app = App()
    async with app.run_test() as pilot:
        screen = TreeDiffScreen(steploop_store, steploop_store, "A · B")
        await app.push_screen(screen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        body = str(screen.query_one("#td-body", Static).render())
        assert body.startswith("could not compare the call trees (ValueError: no ") and "\x1b" not in body
        assert app.is_running and len(screen.lines) == 1
