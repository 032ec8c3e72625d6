"""Compare mode's differential call tree: per call path A, B and Δ, added and removed paths."""

from __future__ import annotations

import re

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from vtui.store.store import TraceStore
from vtui.ui.colours import FASTER, SLOWER
from vtui.ui.keys import bindings
from vtui.ui.screens.computed import ComputedScreen


class TreeDiffScreen(ComputedScreen[None]):
    """The whole-trace call trees of A and B side by side, path by path (``vtui diff --table tree``)."""

    KEY_SCOPE = "treediff"  # its section of the help
    BINDINGS = bindings("treediff")
    TITLE_WIDGET = "#td-title"
    STATUS_WIDGET = "#td-body"
    FAILED = "could not compare the call trees"
    COMPUTING = "Computing both call trees…"

    def __init__(self, a: TraceStore, b: TraceStore, title: str) -> None:
        super().__init__()
        self.stores = (a, b)
        self.title_text = title
        self.lines: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="td-title", markup=False)
        with VerticalScroll(id="td-scroll"):
            yield Static(self.COMPUTING, id="td-body", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#td-scroll").focus()

    def title_line(self) -> str:
        return f"Differential call tree · {self.title_text}"

    def compute(self) -> list[str]:
        from vtui.analysis.calltree.diff import diff_trees
        from vtui.analysis.calltree.tree import build_tree
        from vtui.present.tree_text import diff_lines

        a, b = self.stores
        return diff_lines(diff_trees(build_tree(a), build_tree(b)))

    def show(self, lines: list[str]) -> None:
        self.lines = lines
        self.query_one("#td-body", Static).update(coloured(lines))

    def show_error(self, message: str) -> None:
        self.lines = [message]
        super().show_error(message)


def coloured(lines: list[str]) -> Text:
    """The table with each path's line in red where B took longer, green where shorter."""
    text = Text()
    columns = [m.start() for m in re.finditer(r"-+", lines[1])] if len(lines) > 1 else []
    for n, line in enumerate(lines):
        style = "bold" if n < 2 else ""
        if n >= 2 and len(columns) > 3:
            delta = line[columns[2]:columns[3]].strip()
            if delta.startswith("+") and delta not in ("+0 ns",):
                style = SLOWER
            elif delta.startswith("−"):
                style = FASTER
        text.append(line + ("\n" if n < len(lines) - 1 else ""), style=style)
    return text
