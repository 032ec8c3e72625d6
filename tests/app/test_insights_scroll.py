"""Insights: PgUp/PgDn scroll the findings whichever list has the focus (as the help says), and
] / [ reach each section in one key."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import OptionList

from tests.app.screen import read_screen
from tests.helpers import QWEN, settle
from vtui.ui.app import VtuiApp


async def test_page_keys_scroll_the_findings_and_sections_are_one_key_away(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot, 2)
        body = app.screen.query_one("#ins-body", VerticalScroll)
        focused = app.focused
        assert isinstance(focused, OptionList)  # a list has the keys (the step plot)
        highlighted = focused.highlighted
        await pilot.press("pagedown")
        await pilot.pause()
        assert body.scroll_y > 0 and focused.highlighted == highlighted  # the findings moved, not the list
        await pilot.press("pageup")
        await pilot.pause()
        assert body.scroll_y == 0
        def memory_shown() -> bool:
            return any(line.strip().startswith("Memory") for line in read_screen(app).text)

        assert not memory_shown()  # far below at first
        presses = 0
        while not memory_shown():
            await pilot.press("right_square_bracket")
            await pilot.pause()
            presses += 1
            assert presses <= 12, "Memory never came into view"  # one press per section above it
        here = body.scroll_y
        assert here > 0
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert body.scroll_y < here
