"""Insights draws no stray glyphs at its right edge: its scrollbars are whole cells of colour
(Textual's default ends the thumb in ▁…▇, which reads as text beside the findings)."""

from __future__ import annotations

import pytest
from rich.cells import cell_len
from textual.containers import VerticalScroll

from tests.app.screen import read_screen
from tests.helpers import QWEN, settle
from vtui.ui.app import VtuiApp


def _scrollbar_cells(app) -> list[tuple[int, int]]:
    """(x, y) of every cell of a vertical scrollbar shown on the Insights screen."""
    body = app.screen.query_one("#ins-body", VerticalScroll)
    out = []
    for widget in [body, *body.query("*")]:
        if widget.is_scrollable and widget.show_vertical_scrollbar:
            r = widget.vertical_scrollbar.region.intersection(body.region)  # (the part on screen)
            out += [(x, y) for y in range(r.y, r.bottom) for x in range(r.x, r.right)]
    return out


def _cells(app) -> list[list[str]]:
    """The screen's characters cell by cell (a wide character's second cell: "")."""
    return [[c for seg in strip for ch in seg.text for c in ((ch, "") if cell_len(ch) == 2 else (ch,))]
            for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_no_stray_scrollbar_glyphs_on_insights(qwen_store, size):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot, 2)
        for _ in range(4):  # at the top, then scrolled: the thumb moves to fractional positions
            screen = read_screen(app)
            cells = _scrollbar_cells(app)
            assert cells, "the findings are longer than the screen: a scrollbar is shown"
            text = _cells(app)
            glyphs = {text[y][x] for x, y in cells}
            assert glyphs == {" "}, glyphs
            colours = {screen.bg[y][x] for x, y in cells}
            assert len(colours) == 2, colours  # still a scrollbar: the thumb and the track differ
            await pilot.press("pagedown")
            await pilot.pause()
