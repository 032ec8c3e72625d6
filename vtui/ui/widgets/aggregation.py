"""The slice aggregation table over the range (or whole trace) and the visible tracks."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from vtui.analysis.aggregate import SORT_KEYS, Aggregation, AggRow, aggregate, sort_rows
from vtui.fmt import format_duration
from vtui.present.tables import aggregation_table
from vtui.ui.keys import bindings
from vtui.ui.safe import visible
from vtui.ui.view import ViewState

GROUPS = ("name", "cat", "track")
NAME_WIDTH = 36
COLUMN_SORT = ("name", "count", "total", "self", "avg", "min", "max", "total")  # per table column


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

    def compose(self) -> ComposeResult:
        yield Static("", id="agg-head")
        yield Input(placeholder="filter rows (substring) — / to focus, enter to return", id="agg-filter")
        table = DataTable(id="agg-table", cursor_type="row", zebra_stripes=True)
        table.add_column("name", width=NAME_WIDTH)
        table.add_columns("count", "total", "self", "avg", "min", "max", "% range")
        yield table

    def refresh_table(self) -> None:
        """Recompute over the view's range and visible tracks."""
        t0, t1 = self.view.analysis_window()
        found = self.view.found
        only = found.rows if self.matches_only and found is not None else None
        self.agg = aggregate(self.view.store, t0, t1, self.view.visible_track_ids(), by=self.by, sort=self.sort,
                             only=only)
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
        table.clear()
        for r in aggregation_table(self.agg.with_rows(self.shown)).display:
            name = visible(r[0])
            name = name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"
            table.add_row(Text(name, no_wrap=True), *(Text(c, justify="right") for c in r[1:]))
        a = self.agg
        where = "range" if self.view.range else "whole trace"
        found = self.view.found
        if self.matches_only and found is not None:
            where = f"matches of /{visible(found.pattern)}/ in the {where}"
        arrow = "↓" if self.descending else "↑"
        self.query_one("#agg-head", Static).update(Text(
            f"{where} {format_duration(a.t0)} – {format_duration(a.t1)} ({format_duration(a.t1 - a.t0)}) · "
            f"{a.slices:,} slices on {a.tracks} tracks · by {a.by} · sort {self.sort}{arrow} · "
            f"{len(self.shown)} rows · b group, o sort, / filter, enter jumps, x exports", no_wrap=True))

    def table(self):
        """The rows as shown (filter and sort applied), for export."""
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
        self.query_one("#agg-filter", Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._fill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one(DataTable).focus()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        column = COLUMN_SORT[event.column_index]
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
