"""The call tree's hand-over findings (key `H` in the call tree): where Python hands over to C++,
wrappers deeper than usual, repeated work without GPU work and syncs per step, as ``vtui tree
--handover`` prints them, for the call tree's range. Every hand-over is a row of a table that
sorts by total, self time or depth (keys t, s, d; again reverses; or a click on the header)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Footer, Static

from vtui.analysis.calltree.handover import HandOver, HandOverReport
from vtui.analysis.calltree.tree import CallTree
from vtui.present.names import distinct_cuts
from vtui.store.store import TraceStore
from vtui.ui.keys import bindings
from vtui.ui.screens.computed import ComputedScreen
from vtui.ui.trace_text import plain, visible
from vtui.units import format_duration as fd

SORTS = {"total": lambda h: h.total_ns, "self": lambda h: h.self_ns, "depth": lambda h: h.python_depth}
COLUMNS = ("total", "self", "calls", "depth", "hand-over", "← called from")
NUMBERS = 11 + 11 + 8 + 6 + 4 * 2  # the four number columns and their padding


def handover_rows(handovers: list[HandOver], sort: str, descending: bool) -> list[HandOver]:
    """Sorted by ``sort`` (ties: the larger total first, then the name: a stable order)."""
    key = SORTS[sort]
    return sorted(handovers, key=lambda h: ((-key(h) if descending else key(h)), -h.total_ns, h.name))


def _text_widths(name: int, caller: int, room: int) -> tuple[int, int]:
    """The name and caller columns' widths: whole when they fit, else the name keeps the larger share."""
    room = max(room, 24)
    if name + caller <= room:
        return name, caller
    name_w = min(name, max(room - caller, room * 3 // 5))
    return name_w, room - name_w


class HandOverScreen(ComputedScreen[None]):
    KEY_SCOPE = "handover"  # its section of the help
    BINDINGS = bindings("handover")
    TITLE_WIDGET = "#ho-title"
    STATUS_WIDGET = "#ho-summary"
    FAILED = "could not read the hand-overs"
    COMPUTING = "Reading the hand-overs…"

    def __init__(self, store: TraceStore, tree: CallTree, title: str) -> None:
        """``tree``: the top-down call tree of the range (hand-overs are read from it)."""
        super().__init__()
        self.store, self.calltree, self.title_text = store, tree, title
        self.report: HandOverReport | None = None
        self.sort, self.descending = "total", True
        self.shown: list[HandOver] = []  # the table's rows, in order

    def compose(self) -> ComposeResult:
        yield Static("", id="ho-title", markup=False)
        yield Static(self.COMPUTING, id="ho-summary", markup=False)
        yield DataTable(id="ho-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="ho-findings", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ho-table").focus()

    def title_line(self) -> str:
        return f"Python → C++ hand-over · {self.title_text}"

    def compute(self) -> HandOverReport:
        from vtui.analysis.calltree.handover import analyse_handover

        return analyse_handover(self.store, self.calltree)

    def show(self, report: HandOverReport) -> None:
        from vtui.present.tree_text import handover_lines

        self.report = report
        lines = handover_lines(report)
        self.query_one("#ho-summary", Static).update(plain(lines[0]))
        tail = [line for line in lines[1:] if not line.startswith("  ")]  # steps and findings (rows: the table)
        self.query_one("#ho-findings", Static).update(Text("\n").join(plain(line) for line in tail))
        self._fill()

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        table.clear(columns=True)
        report = self.report
        if report is None or not report.handovers:
            table.display = False
            return
        self.shown = handover_rows(report.handovers, self.sort, self.descending)
        arrow = "↓" if self.descending else "↑"
        for name in COLUMNS:
            label = f"{name} {arrow}" if name == self.sort else name
            table.add_column(Text(label, justify="right" if name in ("total", "self", "calls", "depth") else "left"))
        names = [visible(h.name) for h in self.shown]
        callers = [visible(h.path[-2]) if len(h.path) > 1 else "" for h in self.shown]
        name_w, caller_w = _text_widths(max(map(len, names)), max(map(len, callers)),
                                        (table.size.width or self.app.size.width) - NUMBERS - 6)
        names, callers = distinct_cuts(names, name_w), distinct_cuts(callers, caller_w)
        for h, name, caller in zip(self.shown, names, callers):
            table.add_row(Text(fd(h.total_ns), justify="right"), Text(fd(h.self_ns), justify="right"),
                          Text(f"{h.count:,}", justify="right"), Text(str(h.python_depth), justify="right"),
                          Text(name, no_wrap=True), Text(caller, no_wrap=True))
        self.query_one("#ho-summary", Static).update(Text("\n").join([
            plain(self._summary()),
            plain(f"{len(self.shown)} hand-overs by {self.sort} {arrow} (t total, s self, d depth; again reverses)")]))

    def _summary(self) -> str:
        from vtui.present.tree_text import handover_lines

        return handover_lines(self.report)[0] if self.report is not None else ""

    def on_resize(self) -> None:
        if self.report is not None:
            self._fill()

    def _sort_by(self, sort: str) -> None:
        self.descending = not self.descending if sort == self.sort else True
        self.sort = sort
        self._fill()

    def action_sort(self, sort: str) -> None:
        self._sort_by(sort)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        name = COLUMNS[event.column_index] if event.column_index < len(COLUMNS) else ""
        if name in SORTS:
            self._sort_by(name)

    def action_close(self) -> None:
        self.dismiss(None)
