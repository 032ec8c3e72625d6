"""The screens that compute as they open share one pattern (``vtui.ui.screens.computed.ComputedScreen``):
a failing computation leaves one line on the screen, never a traceback; a superseded run's result
is dropped; a jump back to the timeline is ``dismiss(result)``, acted on by the timeline."""

from __future__ import annotations

import asyncio
import threading

import pytest
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from benchmarks.ranks_synth import rank_events, slow_rank, write_rank
from tests.app.screen import read_screen
from tests.helpers import STEPLOOP, settle
from vtui.analysis.calltree.tree import build_tree
from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range
from vtui.ui.app import VtuiApp
from vtui.ui.screens.computed import ComputedScreen, Jump
from vtui.ui.screens.handover_view import HandOverScreen
from vtui.ui.screens.insights import InsightsScreen
from vtui.ui.screens.modals import WarningsScreen
from vtui.ui.screens.ranks import RanksScreen
from vtui.ui.screens.tree import CallTreeScreen
from vtui.ui.screens.tree_diff import TreeDiffScreen

WAIT_S = 10.0  # an upper bound on a gate the test itself opens, never a timing
HOSTILE = "no \x1b[31mdata\x1b[0m"  # the exception's text: drawn escaped, never as a terminal sequence

SCREENS = {  # each ported screen: how to open it over the step loop, and how its failure line begins
    "insights": (lambda s: InsightsScreen(s, time_range(s), "t"), "could not compute insights (ValueError: no \\x1b"),
    "call tree": (lambda s: CallTreeScreen(s, time_range(s), None, "t"), "could not build the call tree (ValueError: no "),
    "tree diff": (lambda s: TreeDiffScreen(s, s, "A · B"), "could not compare the call trees (ValueError: no "),
    "ranks": (lambda s: RanksScreen(s), "could not compare the ranks (ValueError: no "),
    "hand-over": (lambda s: HandOverScreen(s, build_tree(s), "t"), "could not read the hand-overs (ValueError: no "),
    "warnings": (lambda s: WarningsScreen(["a warning"], s), "trace health could not be computed (ValueError)"),
}


def _broken(self):
    raise ValueError(HOSTILE)


@pytest.mark.parametrize("name", list(SCREENS))
async def test_a_failing_computation_is_one_line_on_the_screen(name, steploop_store, monkeypatch):
    make, line = SCREENS[name]
    screen = make(steploop_store)
    assert isinstance(screen, ComputedScreen)
    monkeypatch.setattr(type(screen), "compute", _broken)
    app = VtuiApp(STEPLOOP, store=steploop_store)  # the app's styles: the line must be on screen, not below it
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await app.push_screen(screen)
        await settle(pilot, 2)
        text = read_screen(app).text
        said = [row.strip(" │") for row in text if "could not" in row]
        assert len(said) == 1 and said[0].startswith(line), "\n".join(text)
        assert not any("omputing" in row or "Traceback" in row or "\x1b" in row for row in text), "\n".join(text)
        assert app.is_running and app.screen is screen


class GatedScreen(ComputedScreen[None]):
    """Each run waits on its own gate, then returns its tag; the screen draws the last tag shown."""

    STATUS_WIDGET = "#shown"

    def __init__(self) -> None:
        super().__init__()
        self.gates: list[threading.Event] = []
        self.started: list[threading.Event] = []
        self.returned: list[threading.Event] = []
        self.shown: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(self.COMPUTING, id="shown")

    def on_mount(self) -> None:
        for _ in range(2):
            self.gates.append(threading.Event())
            self.started.append(threading.Event())
            self.returned.append(threading.Event())

    def compute(self) -> str:
        run = sum(e.is_set() for e in self.started)
        self.started[run].set()
        try:
            self.gates[run].wait(WAIT_S)
            if run == 0:
                raise ValueError("the old run failed")
            return f"run {run}"
        finally:
            self.returned[run].set()

    def show(self, result: str) -> None:
        self.shown.append(result)
        self.query_one("#shown", Static).update(result)


async def test_a_superseded_runs_failure_is_dropped():
    app = App()
    async with app.run_test() as pilot:
        screen = GatedScreen()
        await app.push_screen(screen)
        assert await asyncio.to_thread(screen.started[0].wait, WAIT_S)  # the first run, started on mount
        screen.start()  # a newer run cancels it
        assert await asyncio.to_thread(screen.started[1].wait, WAIT_S)
        screen.gates[1].set()
        assert await asyncio.to_thread(screen.returned[1].wait, WAIT_S)
        await pilot.pause()
        screen.gates[0].set()  # the old run fails last: its line must not cover the new result
        assert await asyncio.to_thread(screen.returned[0].wait, WAIT_S)
        await settle(pilot, 2)
        assert screen.shown == ["run 1"] and str(screen.query_one("#shown", Static).render()) == "run 1"


def _spy_dismiss(monkeypatch, cls) -> list:
    """Every result ``cls`` closes with (the close itself still happens)."""
    results: list = []

    def dismiss(self, result=None):
        results.append(result)
        return Screen.dismiss(self, result)

    monkeypatch.setattr(cls, "dismiss", dismiss)
    return results


async def test_the_call_trees_jump_is_its_dismiss_result(steploop_store, monkeypatch):
    results = _spy_dismiss(monkeypatch, CallTreeScreen)
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("F")
        await settle(pilot, 2)
        selected = app.view.selected
        await pilot.press("q")  # closing without a jump: None, and the timeline stays as it was
        await pilot.pause()
        assert results == [None] and app.screen is app.screen_stack[0] and app.view.selected == selected
        results.clear()
        await pilot.press("F")
        await settle(pilot, 2)
        screen = app.screen
        assert isinstance(screen, CallTreeScreen)
        row = screen.current.longest_slice(screen.view.selected)
        await pilot.press("t")
        await pilot.pause()
        assert results == [row] and app.screen is app.screen_stack[0] and app.view.selected == row


async def test_insights_jump_is_its_dismiss_result(steploop_store, monkeypatch):
    results = _spy_dismiss(monkeypatch, InsightsScreen)
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot, 2)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, InsightsScreen) and screen.insights is not None
        await pilot.press("down", "down", "enter")  # step #2 of the plot
        await pilot.pause()
        row = int(screen.insights.steps.rows[2])
        assert results == [Jump(row)] and app.screen is app.screen_stack[0] and app.view.selected == row


async def test_the_ranks_jump_is_its_dismiss_result(tmp_path, monkeypatch):
    for r in range(3):
        write_rank(tmp_path, f"t_rank{r}.json", rank_events(r, 3, 2, slow_rank(1)), r, 3)
    results = _spy_dismiss(monkeypatch, RanksScreen)
    app = VtuiApp(tmp_path, store=load_trace(tmp_path, cache=False))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("K")
        await settle(pilot, 2)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RanksScreen) and screen.matched is not None
        await pilot.press("enter")  # the first collective
        await pilot.pause()
        (rows,) = results
        want = sorted(screen.matched.row[screen.matched.coll == 0].tolist())
        assert sorted(rows.tolist()) == want and app.screen is app.screen_stack[0]
        assert sorted(app.view.highlight.nonzero()[0].tolist()) == want
