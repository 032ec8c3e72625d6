"""The SQL pane (key ``:``): a query over the trace with Perfetto's table names, its rows in a
table; ``enter`` on a row with a slice ``id`` (or ``slice_id``) selects that slice, else on a
row with ``ts`` goes to that time.

The query runs in a thread worker with a time limit (DuckDB is interrupted from a timer), so
the app keeps painting; an error is one line in the pane. Cells are trace text: escaped and
handed to the table as ``Text`` (never markup). Numeric columns are drawn whole; long text cells
are cut in the middle to the width the numbers leave, and the highlighted row is written out in
full on the line under the table.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from vtui.present.names import distinct_cuts
from vtui.safe_text import clip
from vtui.store.store import TraceStore
from vtui.ui.keys import bindings
from vtui.ui.trace_text import visible
from vtui.ui.workers import deliver

TIME_LIMIT_S = 10.0
SHOWN_ROWS = 1000  # DataTable shows 1k rows in ~0.3 s; more is a LIMIT away
EXAMPLE = "SELECT name, COUNT(*) n, SUM(dur) total FROM slice GROUP BY name ORDER BY total DESC LIMIT 20"

Jump = tuple[str, int]  # ("slice", row) or ("time", ns)
MIN_TEXT = 12  # a text column is cut no shorter than this (below it the table scrolls sideways)
CELL_PAD = 2  # DataTable pads each cell by one on either side


def is_numeric(values: list) -> bool:
    """A column of numbers (NULLs aside): drawn whole, never cut."""
    return all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values)


def column_widths(header: list[str], cells: list[list[str]], numeric: list[bool], width: int) -> list[int]:
    """Each column's width in ``width`` cells: numbers whole, text columns share what is left (the
    shortest first get all they need, the rest an equal share, at least MIN_TEXT)."""
    natural = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    room = width - 2 - CELL_PAD * len(header) - sum(n for n, num in zip(natural, numeric) if num)  # 2: scrollbar
    out = list(natural)
    text = sorted((i for i, num in enumerate(numeric) if not num), key=lambda i: natural[i])
    for k, i in enumerate(text):
        share = max(MIN_TEXT, room // (len(text) - k))
        out[i] = max(min(natural[i], share), min(natural[i], len(header[i])))
        room -= out[i]
    return out


def jump_of(store: TraceStore, columns: list[str], row: list) -> Jump | None:
    """Where a result row points: a slice by ``slice_id`` / ``id`` (when it is a slice row and,
    with a ``ts`` beside it, starts there), else a time by ``ts``."""
    lower = [c.lower() for c in columns]
    ts = row[lower.index("ts")] if "ts" in lower else None
    for name in ("slice_id", "id"):
        if name in lower:
            value = row[lower.index(name)]
            if isinstance(value, int) and 0 <= value < len(store.slices) and \
                    (name == "slice_id" or ts is None or int(store.slices.start_ns[value]) == ts):
                return ("slice", value)
    if isinstance(ts, int) and not isinstance(ts, bool):
        return ("time", ts)
    return None


class QueryScreen(ModalScreen[Jump | None]):
    """Returns where to jump, or None."""

    KEY_SCOPE = "query"  # its section of the help
    last_sql = ""  # the pane opens with the previous query of this session
    BINDINGS = bindings("query")

    def __init__(self, store: TraceStore, sql: str = "") -> None:
        super().__init__()
        self.store = store
        self.sql = sql or QueryScreen.last_sql
        self.columns: list[str] = []
        self.rows: list[list] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("SQL over slice, thread_track, thread, process, track, counter, flow, args, kernel, "
                         "launch, step, op, gpu_busy · enter runs · enter on a row jumps · esc closes", markup=False)
            yield Input(value=self.sql, placeholder=EXAMPLE, id="query-input")
            yield Static("", id="query-status", markup=False)
            yield DataTable(id="query-table", zebra_stripes=True, cursor_type="row")
            yield Static("", id="query-row", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        sql = event.value.strip() or EXAMPLE
        self.sql = QueryScreen.last_sql = sql
        self._status("running…")
        self.run_query(sql)

    @work(thread=True, exclusive=True, group="query", description="SQL query", exit_on_error=False)
    def run_query(self, sql: str) -> None:
        from vtui.errors import UsageError
        from vtui.query.engine import run_query

        try:
            result = run_query(self.store, sql, time_limit=TIME_LIMIT_S, max_rows=SHOWN_ROWS)
        except UsageError as exc:
            deliver(self.app, self._status, f"error: {exc}")
            return
        except Exception as exc:  # noqa: BLE001 — a message in the pane, never a traceback
            deliver(self.app, self._status, f"query failed ({type(exc).__name__}: {exc})")
            return
        deliver(self.app, self._show, result)

    def _status(self, text: str) -> None:
        self.query_one("#query-status", Static).update(Text(visible(clip(text, 600))))

    def _show(self, result) -> None:
        self.columns, self.rows = list(result.columns), list(result.rows)
        self._fill()
        more = f" (first {SHOWN_ROWS:,}: add a LIMIT)" if result.truncated else ""
        self._status(f"{result.row_count:,} rows{more}")
        if self.rows:
            self.query_one(DataTable).focus()

    def _fill(self) -> None:
        """The table at the pane's width: numbers whole, text cut in the middle."""
        table = self.query_one(DataTable)
        table.clear(columns=True)
        header = [visible(clip(name, 60)) for name in self.columns]
        cells = [[visible(clip("NULL" if v is None else str(v), 2000)) for v in row] for row in self.rows]
        numeric = [is_numeric([row[i] for row in self.rows]) for i in range(len(header))]
        widths = column_widths(header, cells, numeric, table.size.width or self.app.size.width)
        for name, num in zip(header, numeric):
            table.add_column(Text(name, justify="right" if num else "left"))
        shown = [[Text(r[i], justify="right", no_wrap=True) for r in cells] if num else  # different texts cut alike
                 [Text(c, no_wrap=True) for c in distinct_cuts([r[i] for r in cells], widths[i])]
                 for i, num in enumerate(numeric)]
        for row in zip(*shown):
            table.add_row(*row)
        self._detail(0)

    def _detail(self, index: int) -> None:
        """The highlighted row in full (its text cells may be cut in the table)."""
        line = ""
        if 0 <= index < len(self.rows):
            line = " · ".join(f"{c}={'NULL' if v is None else v}" for c, v in zip(self.columns, self.rows[index]))
        self.query_one("#query-row", Static).update(Text(visible(clip(line, 1000))))

    def on_resize(self) -> None:
        if self.columns:
            self._fill()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.cursor_row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        index = event.cursor_row
        if not 0 <= index < len(self.rows):
            return
        target = jump_of(self.store, self.columns, self.rows[index])
        if target is None:
            self._status("this row has no slice id or ts to jump to")
            return
        self.dismiss(target)

    def action_edit(self) -> None:
        self.query_one(Input).focus()

    def action_close(self) -> None:
        self.dismiss(None)
