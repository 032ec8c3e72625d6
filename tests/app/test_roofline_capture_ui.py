"""The Insights screen's roofline with a capture trace opened beside its replay: the replayed
graph kernels are rows costed from the capture's shapes, marked, with the capture named."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.core.test_roofline_peer_points import _capture_and_replay
from tests.helpers import settle
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


async def test_insights_roofline_costs_replayed_kernels_from_the_capture(tmp_path):
    _capture_and_replay(tmp_path)
    rep = tmp_path / "rep.json"
    app = VtuiApp(rep, store=load_trace(rep, cache=False), capture=tmp_path / "cap.json")
    async with app.run_test(size=(180, 60)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await app.screen.workers.wait_for_complete()
        await settle(pilot, 2)
        app.screen.query_one("#ins-roofline").scroll_visible(top=True, animate=False)
        await settle(pilot, 2)
        text = "\n".join(read_screen(app).text)
        assert "graph-replayed kernels costed from the capture trace cap.json" in text
        assert "⟳ aten::mm" in text and "⟳ aten::add" in text and "Roofline: 4 calls" in text
