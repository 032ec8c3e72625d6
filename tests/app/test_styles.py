"""Styles: one stylesheet shipped with the package, colours as theme variables."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

from textual.color import Color

import vtui.ui
from tests.helpers import STEPLOOP
from vtui.ui import colours
from vtui.ui.app import VtuiApp
from vtui.ui.screens.compare import CompareApp

HEX = re.compile(r"#[0-9a-fA-F]{6}\b")


def test_stylesheet_is_package_data():
    """Found through importlib.resources (as from an installed wheel), and the file both apps load."""
    sheet = files("vtui.ui").joinpath("vtui.tcss")
    assert sheet.is_file()
    assert Path(VtuiApp.CSS_PATH) == Path(CompareApp.CSS_PATH) == Path(str(sheet))
    assert not HEX.search(sheet.read_text())  # theme variables, not colour codes


def test_no_widget_keeps_its_own_css():
    ui = Path(vtui.ui.__file__).parent
    for py in ui.rglob("*.py"):
        text = py.read_text()
        assert "DEFAULT_CSS" not in text and not re.search(r"^\s+CSS = ", text, re.M), py


async def test_colours_come_from_the_theme(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert app.theme == "vtui"
        title = app.query_one("#title")
        assert title.styles.background == Color.parse(colours.PANEL)
        app.theme = "textual-light"  # another theme recolours the panes
        await pilot.pause()
        assert title.styles.background != Color.parse(colours.PANEL)


def test_colours_are_named_in_the_palette_only():
    # One place for every colour: widgets and renderers name palette constants, never a hex code.
    ui = Path(vtui.ui.__file__).parent
    for py in ui.rglob("*.py"):
        if py.name != "colours.py":
            assert not re.search(r"#[0-9a-fA-F]{6}\b", py.read_text()), py
