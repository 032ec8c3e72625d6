"""The slice aggregation table over the range (or whole trace) and the visible tracks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from vtui.analysis.slices.aggregate import SORT_KEYS, Aggregation, AggRow, aggregate, sort_rows
from vtui.present.names import distinct_cuts
from vtui.ui.keys import bindings
from vtui.ui.timeline.view import ViewState
from vtui.ui.trace_text import visible
from vtui.units import format_duration

if TYPE_CHECKING:
    from vtui.analysis.gpu.roofline import GroupRoofline
    from vtui.present.tabular import Table

# The roofline, its words and the table's text are imported when the table is first filled (the
# pane starts hidden): ~15 ms less before the app's first frame.

GROUPS = ("name", "cat", "track")
NAME_WIDTH = 36  # before the pane has a width
MIN_NAME = 24  # numeric columns drop (DROP_ORDER) before the name gets less than this
NUMERIC = ("count", "total", "self", "avg", "min", "max", "% range")
ROOF = ("FLOPs", "TFLOP/s", "% roof")  # shown when the range has ops with recorded shapes
DROP_ORDER = ("min", "max", "avg", "% roof", "TFLOP/s", "FLOPs", "self")
COLUMN_SORT = {"count": "count", "total": "total", "self": "self", "avg": "avg", "min": "min", "max": "max",
               "% range": "total"}  # what a click on a column's header sorts by


def roof_cells(g: GroupRoofline | None) -> list[str]:
    """The roofline columns of one row: blank for a group without roofline ops, — for no figure."""
    from vtui.present.why_text import format_flops  # noqa: PLC0415 — see the imports

    if g is None:
        return ["", "", ""]
    pct = g.pct_of_roofline
    return [format_flops(g.flops) if g.flops else "0", "—" if g.tflops is None else f"{g.tflops:.2f}",
            "—" if pct is None else f"{pct:.1f}%"]


class AggregationPane(Vertical):
    BINDINGS = bindings("aggregation")

    class RowChosen(Message):
        """A row of the table was highlighted (jump=False) or entered (jump=True)."""

        def __init__(self, row: AggRow, jump: bool) -> None:
            self.row, self.jump = row, jump
            super().__init__()

    def __init__(self, view: ViewState, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.by = "name"
        self.sort = "total"
        self.descending = True
        self.agg: Aggregation | None = None
        self.shown: list[AggRow] = []
        self.matches_only = False  # aggregate only the current search's matches
        self.columns: tuple[str, ...] = ()  # the numeric columns shown
        self.roof: dict[int, GroupRoofline] = {}  # per group: its roofline ops (analysis.roofline)
        self._layout: tuple = ()  # (name width, columns) the table was built with

    def compose(self) -> ComposeResult:
        yield Static("", id="agg-head")
        yield Input(placeholder="filter rows (substring) — / to focus, enter to return", id="agg-filter")
        yield DataTable(id="agg-table", cursor_type="row", zebra_stripes=True)

    def refresh_table(self) -> None:
        """Recompute over the view's range and visible tracks."""
        found = self.view.found
        only = found.rows if self.matches_only and found is not None else None
        self.agg = aggregate(self.view.store, self.view.analysis_range(), self.view.visible_track_ids(), by=self.by,
                             sort=self.sort, only=only)
        from vtui.analysis.gpu.roofline import group_roofline  # noqa: PLC0415 — see the imports

        # Insights' range rule (calls starting in the range), so the two roofline figures agree.
        self.roof = group_roofline(self.view.store, self.agg.selected, self.agg.keys, (self.agg.t0, self.agg.t1))
        self._fill()

    def set_grouping(self, by: str) -> None:
        self.by = by
        self.refresh_table()

    def _fill(self) -> None:
        if self.agg is None:
            return
        text = self.query_one("#agg-filter", Input).value.strip().lower()
        rows = sort_rows(self.agg.rows, self.sort, self.descending)
        self.shown = [r for r in rows if text in r.key.lower()] if text else rows
        table = self.query_one(DataTable)
        display = self.table().display
        numeric = NUMERIC + ROOF if self.roof else NUMERIC
        if self.roof:
            display = [d + roof_cells(self.roof.get(r.group)) for d, r in zip(display, self.shown)]
        names = [visible(r[0]) for r in display]
        width, columns = self._fit(table.size.width, names, display, numeric)
        if (width, columns) != self._layout:
            self._layout, self.columns = (width, columns), columns
            table.clear(columns=True)
            table.add_column("name", width=width)
            for key in columns:
                table.add_column(key, key=key)
        else:
            table.clear()
        keep = [1 + numeric.index(key) for key in columns]
        for name, r in zip(distinct_cuts(names, width), display):
            table.add_row(Text(name, no_wrap=True), *(Text(r[i], justify="right") for i in keep))
        a = self.agg
        where = "range" if self.view.range else "whole trace"
        found = self.view.found
        if self.matches_only and found is not None:
            where = f"matches of /{visible(found.pattern)}/ in the {where}"
        arrow = "↓" if self.descending else "↑"
        rule = "roofline: calls starting in it · " if self.roof else ""  # (the other columns: slices overlapping it)
        self.query_one("#agg-head", Static).update(Text(
            f"{where} {format_duration(a.t0)} – {format_duration(a.t1)} ({format_duration(a.t1 - a.t0)}) · {rule}"
            f"{a.slices:,} slices on {a.tracks} tracks · by {a.by} · sort {self.sort}{arrow} · "
            f"{len(self.shown)} rows · b group, o sort, / filter, enter jumps, x exports", no_wrap=True))

    @staticmethod
    def _fit(width: int, names: list[str], display: list[list[str]],
             numeric: tuple[str, ...] = NUMERIC) -> tuple[int, tuple[str, ...]]:
        """The name column's width and the numeric columns that fit beside it in ``width`` cells:
        the name gets what the numbers leave; numbers drop before the name is cut below MIN_NAME."""
        if width <= 0:  # not laid out yet
            return NAME_WIDTH, numeric
        cells = {key: max([len(key)] + [len(r[1 + i]) for r in display]) + 2 for i, key in enumerate(numeric)}
        longest = max((len(n) for n in names), default=8)
        # A column blank on every row (roofline columns where no op has shapes) says nothing: it goes first.
        columns = [k for i, k in enumerate(numeric) if k not in ROOF or any(r[1 + i] for r in display)]
        room = width - 2 - 2 - sum(cells[k] for k in columns)  # the scrollbar, the name's padding
        for key in DROP_ORDER:
            if room >= min(longest, MIN_NAME):
                break
            if key not in columns:
                continue
            columns.remove(key)
            room += cells[key]
        return max(min(longest, room), 8), tuple(columns)

    def on_resize(self) -> None:
        if self.agg is not None:
            self._fill()

    def table(self) -> Table:
        """The rows as shown (filter and sort applied), for export."""
        from vtui.present.tables import aggregation_table  # noqa: PLC0415 — see the imports

        assert self.agg is not None
        return aggregation_table(self.agg.with_rows(self.shown))

    # ---- keys and events ----------------------------------------------------------------
    def action_group(self) -> None:
        self.set_grouping(GROUPS[(GROUPS.index(self.by) + 1) % len(GROUPS)] if self.by in GROUPS else "name")

    def action_sort(self) -> None:
        self.sort = SORT_KEYS[(SORT_KEYS.index(self.sort) + 1) % len(SORT_KEYS)]
        self._fill()

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self._fill()

    def action_matches_only(self) -> None:
        if self.view.found is None and not self.matches_only:
            self.app.notify("search first (/), then M aggregates only the matches", markup=False)
            return
        self.matches_only = not self.matches_only
        self.refresh_table()

    def action_focus_filter(self) -> None:
        self.add_class("filtering")
        self.query_one("#agg-filter", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._fill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.set_class(bool(event.value.strip()), "filtering")  # an empty filter gives its line back to the rows
        self.query_one(DataTable).focus()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        if event.column_index == 0:
            column = "name"
        else:
            picked = self.columns[event.column_index - 1] if event.column_index - 1 < len(self.columns) else ""
            if picked not in COLUMN_SORT:  # the roofline columns do not sort: a click leaves the order alone
                return
            column = COLUMN_SORT[picked]
        self.descending = not self.descending if column == self.sort else column != "name"
        self.sort = column
        self._fill()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        # Only a user moving the cursor highlights slices, not the table filling itself.
        if event.data_table.has_focus and 0 <= event.cursor_row < len(self.shown):
            self.post_message(self.RowChosen(self.shown[event.cursor_row], jump=False))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.shown):
            self.post_message(self.RowChosen(self.shown[event.cursor_row], jump=True))
