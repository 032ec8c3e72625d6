"""The call tree's hand-over findings (key `H` in the call tree): where Python hands over to C++,
wrappers deeper than usual, repeated work without GPU work and syncs per step, as ``vtui tree
--handover`` prints them, for the call tree's range."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from vtui.analysis.calltree.tree import CallTree
from vtui.store.store import TraceStore
from vtui.ui import colours
from vtui.ui.keys import bindings
from vtui.ui.safe import plain
from vtui.ui.workers import deliver


class HandOverScreen(Screen[None]):
    KEY_SCOPE = "handover"  # its section of the help
    BINDINGS = bindings("handover")

    def __init__(self, store: TraceStore, tree: CallTree, title: str) -> None:
        """``tree``: the top-down call tree of the range (hand-overs are read from it)."""
        super().__init__()
        self.store, self.calltree, self.title_text = store, tree, title
        self.lines: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(plain(f"Python → C++ hand-over · {self.title_text}"), id="ho-title", markup=False)
        with VerticalScroll(id="ho-scroll"):
            yield Static("Reading the hand-overs…", id="ho-body", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ho-scroll").focus()
        self._compute()

    @work(thread=True, exclusive=True, group="handover", description="hand-overs", exit_on_error=False)
    def _compute(self) -> None:
        from vtui.analysis.calltree.handover import analyse_handover
        from vtui.present.tree_text import handover_lines

        try:
            lines = handover_lines(analyse_handover(self.store, self.calltree))
        except Exception as exc:  # noqa: BLE001 — shown on the screen, never a traceback
            deliver(self.app, self._show, [f"could not read the hand-overs ({type(exc).__name__}: {exc})"], True)
            return
        deliver(self.app, self._show, lines, False)

    def _show(self, lines: list[str], failed: bool) -> None:
        self.lines = lines
        style = colours.ERROR if failed else ""
        self.query_one("#ho-body", Static).update(Text("\n").join(plain(line, style) for line in lines))

    def action_close(self) -> None:
        self.dismiss(None)
