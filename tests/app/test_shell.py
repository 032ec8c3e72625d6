"""The loading shell both apps share: q stops a loader at once in either app, and a load failure
is one message."""

from __future__ import annotations

import threading

import pytest

from tests.helpers import STEPLOOP
from vtui.load import background as loading
from vtui.ui.app import VtuiApp
from vtui.ui.screens.compare import CompareApp


def stuck_loader(path: str, out, cache: bool = True) -> None:
    """A loader process that never finishes (the spawned child imports it from this module)."""
    out.put(("progress", 0.1))
    threading.Event().wait()


@pytest.mark.parametrize("make_app", [lambda: VtuiApp(STEPLOOP),
                                      lambda: CompareApp(STEPLOOP, STEPLOOP)],
                         ids=["main", "compare"])
async def test_q_while_loading_quits_at_once_and_stops_the_loader(monkeypatch, make_app):
    monkeypatch.setattr(loading, "PROCESS_THRESHOLD", 0)  # the process path, for a small file
    monkeypatch.setattr(loading, "_child", stuck_loader)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(2000):  # until the loader process has started
            if app._load_control.process is not None:
                break
            await pilot.pause()
        proc = app._load_control.process
        assert proc is not None and proc.is_alive()
        await pilot.press("q")
    proc.join(timeout=5)
    assert not proc.is_alive() and app.return_code == 0


async def test_compare_failure_is_one_message_not_markup(tmp_path):
    bad = tmp_path / "[bold]bad.json"
    bad.write_text("this is not json")
    app = CompareApp(bad, STEPLOOP)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = str(app.query_one("#error").render())
        assert text.startswith("Could not compare the traces:") and "[bold]bad.json" in text
        assert str(app.query_one("#title").render()) == "vtui compare · failed"
        await pilot.press("q")
    assert app.return_code == 1


async def test_the_progress_bar_moves_at_most_every_progress_every_s(monkeypatch):
    """A load reports hundreds of steps; each move of the bar is a frame drawn on the UI thread,
    on the cores the load needs: the bar takes one per PROGRESS_EVERY_S, and always the end."""
    from vtui.ui import shell

    clock = [100.0]
    monkeypatch.setattr(shell, "monotonic", lambda: clock[0])

    from textual.app import App

    class Shell(shell.AppShell, App):  # the loading stage alone: the fake load below is its load
        def compose(self):
            yield from self.loading_widgets("loading", "Loading")

    app = Shell()
    shown: list[float] = []
    monkeypatch.setattr(app, "_set_progress", shown.append)
    store = []

    def run(progress, control):
        for k in range(1000):  # 1000 steps in 0.5 s of the (fake) clock
            clock[0] += 0.0005
            progress(k / 1000)
        progress(1.0)
        return store

    monkeypatch.setattr(app, "loaded", lambda result: None)
    async with app.run_test(size=(100, 30)) as pilot:
        app.start_load(shell.LoadJob(run, "fake load", "failed", "failed:", str))
        for _ in range(200):
            if shown and shown[-1] == 1.0:
                break
            await pilot.pause()
    assert shown[0] == 0.0 and shown[-1] == 1.0
    assert len(shown) <= 0.5 / shell.PROGRESS_EVERY_S + 2
