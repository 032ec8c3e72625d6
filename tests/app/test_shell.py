"""The loading shell both apps share: compare mode stops its loader on q as the main app does,
and shows a load failure as one message."""

from __future__ import annotations

from tests.app.test_app_keys import stuck_loader
from vtui.demo import demo_trace_path
from vtui.load import background as loading
from vtui.ui.compare import CompareApp


async def test_compare_q_while_loading_quits_at_once_and_stops_the_loader(monkeypatch):
    monkeypatch.setattr(loading, "PROCESS_THRESHOLD", 0)  # the process path, for a small file
    monkeypatch.setattr(loading, "_child", stuck_loader)
    app = CompareApp(demo_trace_path(), demo_trace_path())
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
    app = CompareApp(bad, demo_trace_path())
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = str(app.query_one("#error").render())
        assert text.startswith("Could not compare the traces:") and "[bold]bad.json" in text
        assert str(app.query_one("#title").render()) == "vtui compare · failed"
        await pilot.press("q")
    assert app.return_code == 1
