"""What a new user ran into, trying the app in tmux on traces it had not seen (issue 24): each test
reads the rendered screen and failed before its fix."""

from __future__ import annotations

import threading

from tests.app.screen import read_screen
from vtui.demo import demo_trace_path
from vtui.ui.compare import CompareApp


async def test_compare_help_opens_while_the_traces_are_still_loading(monkeypatch):
    release = threading.Event()

    def slow_load(self, progress, control):
        release.wait(60)  # a bound for the test, not a sleep: the test releases it at once
        raise RuntimeError("released")

    monkeypatch.setattr(CompareApp, "_load", slow_load)
    app = CompareApp(demo_trace_path(), demo_trace_path())
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
