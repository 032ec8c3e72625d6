"""Focus, help and keys as a newcomer meets them (Pilot)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, Input

from tests.conftest import FIXTURES
from vtui.demo import demo_trace_path
from vtui.store.load import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.widgets.aggregation import AggregationPane
from vtui.ui.widgets.details import DetailsPanel
from vtui.ui.widgets.timeline import FOCUS_STYLE, Timeline

QWEN = FIXTURES / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


@pytest.fixture(scope="module")
def demo_store():
    return load_trace(demo_trace_path())


@pytest.fixture(scope="module")
def qwen_store():
    return load_trace(QWEN)


async def test_number_keys_focus_the_pane_they_open(demo_store):
    app = VtuiApp(demo_trace_path(), store=demo_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one("#agg-table", DataTable)
        assert app.focused is table
        pane = app.query_one(AggregationPane)
        before = (pane.by, pane.sort, pane.descending)
        await pilot.press("b", "o", "O")  # the table's own keys, shown in its header, now act
        assert (pane.by, pane.sort, pane.descending) != before
        assert pane.by == "cat" and pane.descending is not before[2]
        await pilot.press("1")
        await pilot.pause()
        assert app.focused is app.query_one(DetailsPanel)
        await pilot.press("3")
        await pilot.pause()
        assert app.focused is app.query_one("#measure-pane")


async def test_table_filter_shows_what_is_typed(demo_store):
    app = VtuiApp(demo_trace_path(), store=demo_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("slash", *"step")
        box = app.query_one("#agg-filter", Input)
        assert app.focused is box and box.value == "step"
        assert box.content_region.height >= 1  # a focused one-row Input used to be all border
        assert "step" in "".join(seg.text for seg in box.render_line(0))


async def test_focus_is_clearly_visible(demo_store):
    app = VtuiApp(demo_trace_path(), store=demo_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        timeline = app.query_one(Timeline)
        assert timeline.has_focus
        head = timeline.render_line(0)
        assert any(seg.style == FOCUS_STYLE for seg in head)
        bottom = app.query_one("BottomPanes")
        calm = bottom.styles.border_top
        await pilot.press("2")
        await pilot.pause()
        assert not any(seg.style == FOCUS_STYLE for seg in timeline.render_line(0))
        assert bottom.styles.border_top != calm
