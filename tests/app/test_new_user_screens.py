"""What a new user reads on the app's screens: the SQL pane's numbers, the hand-over list, the
aggregation at 80 columns, the memory rows' first paint, compare mode's counters, a capture trace
opened beside its replay."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import QWEN, settle
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


async def test_aggregation_at_80_columns_drops_empty_and_minor_columns_before_cutting_names(qwen_store):
    """At 80×24 the slice table keeps names at least 24 cells (the README's rule): the roofline
    columns, blank for these rows, go before a name is cut."""
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = read_screen(app)
        y = [y for y in screen.find(" name ") if "count" in screen.text[y]][0]
        header = screen.text[y]
        assert "FLOPs" not in header and "% roof" not in header
        assert header.index("count") - len(" name") >= 24 - 5  # the name column, right-aligned count
        rows = [line for line in screen.text[y + 1:y + 5] if line.strip()]
        names = [line[1:].split("  ")[0] for line in rows]
        assert names and all(len(n) >= 24 or "…" not in n for n in names), names
