"""Hostile trace text in the app: no markup from names or paths, no control characters drawn."""

from __future__ import annotations

import json

from textual.widgets import Static

from vtui.ui.app import VtuiApp
from vtui.ui.screens.compare import CompareApp
from vtui.ui.timeline.lanes import Timeline
from vtui.ui.widgets.details import DetailsPanel

EVIL = "\x1b]0;pwned\x07\x1b[2J\x9b31m"


def _trace(path, name: str = "kernel"):
    events = [{"ph": "X", "ts": i * 10, "dur": 8, "name": f"{name}{i}", "pid": 1, "tid": 1, "cat": name,
               "args": {"k": name}} for i in range(5)]
    events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": name}})
    path.write_text(json.dumps({"traceEvents": events}))
    return path


async def test_compare_paths_with_markup_are_plain_text(tmp_path):
    a = _trace(tmp_path / "[@click=app.quit]a.json")
    (tmp_path / "x[").mkdir()
    b = _trace(tmp_path / "x[" / "]b[b]c.json")  # the full path reads ".../x[/]b[b]c.json"
    app = CompareApp(a, b)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.click("#title")
        await pilot.pause()
        assert app.is_running and app.load_error is None  # "[/]" did not crash, the click did not quit
        title = str(app.query_one("#title", Static).render())
        assert "[@click=app.quit]a.json" in title and "]b[b]c.json" in title


async def test_control_characters_in_names_are_escaped(tmp_path):
    path = _trace(tmp_path / "t.json", EVIL)
    app = VtuiApp(path)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("down")  # select a slice: its name, category and args in the details
        await pilot.pause()
        timeline = app.query_one(Timeline)
        drawn = "".join(seg.text for y in range(6) for seg in timeline.render_line(y))
        details = app.query_one(DetailsPanel).render()
        shown = drawn + str(details) + str(app.query_one("#tracks").render_lines(app.query_one("#tracks").region))
        assert "\\x1b]0;pwned\\x07" in str(details)
        for ch in ("\x1b", "\x07", "\x9b"):
            assert ch not in shown


def test_block_labels_contrast_with_every_block_colour():
    from vtui.ui.timeline.render import DIMMED, PALETTE, _style, luminance

    for colour in [*PALETTE, DIMMED]:
        style = _style(colour, False)
        fg, bg = luminance(style.color.name), luminance(colour)
        ratio = (max(fg, bg) + 0.05) / (min(fg, bg) + 0.05)
        assert ratio >= 4.0, (colour, style.color.name, ratio)  # white on yellow was 1.6
