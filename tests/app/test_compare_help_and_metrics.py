"""Compare mode: its help opens while the traces still load, and its metrics call no first step a TTFT."""

from __future__ import annotations

import threading

from tests.app.screen import read_screen
from tests.helpers import QWEN, STEPLOOP, settle
from vtui.load.trace import load_trace
from vtui.ui.screens.compare import CompareApp


async def test_compare_help_opens_while_the_traces_are_still_loading(monkeypatch):
    release = threading.Event()

    def slow_load(self, progress, control):
        release.wait(60)  # a bound for the test, not a sleep: the test releases it at once
        raise RuntimeError("released")

    monkeypatch.setattr(CompareApp, "_load", slow_load)
    app = CompareApp(STEPLOOP, STEPLOOP)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert "loading…" in read_screen(app).text[0]
            await pilot.press("question_mark")
            await pilot.pause()
            await pilot.pause()
            screen = "\n".join(read_screen(app).text)
            assert "vtui compare keys" in screen and "Lock times" in screen
            await pilot.press("escape")  # closes the help; q still quits
            await pilot.pause()
            assert "vtui compare keys" not in "\n".join(read_screen(app).text)
            release.set()
            await pilot.press("q")
    finally:
        release.set()


async def test_compare_metrics_do_not_call_any_first_step_a_ttft(steploop_store):
    # Comparing two training ranks, Metrics read "time to first step (TTFT)": the first step's
    # length, a TTFT only for an inference engine's steps (Serving's own row says when it is one).
    qwen = load_trace(QWEN)
    app = CompareApp(STEPLOOP, QWEN, stores=(steploop_store, qwen))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, 2)
        await pilot.press("2")
        await settle(pilot)
        text = "\n".join(read_screen(app).text)
        assert "first step (TTFT when serving)" in text and "time to first step (TTFT)" not in text, text
