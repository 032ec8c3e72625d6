"""The SQL pane (key ``:``): a query over the trace with Perfetto's table names, its rows in a
table; ``enter`` on a row with a slice ``id`` (or ``slice_id``) selects that slice, else on a
row with ``ts`` goes to that time.

The query runs in a thread worker with a time limit (DuckDB is interrupted from a timer), so
the app keeps painting; an error is one line in the pane. Cells are trace text: escaped and
handed to the table as ``Text`` (never markup).
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from vtui.safe_text import clip
from vtui.store.store import TraceStore
from vtui.ui.keys import bindings
from vtui.ui.safe import visible
from vtui.ui.workers import deliver

TIME_LIMIT_S = 10.0
SHOWN_ROWS = 1000  # DataTable shows 1k rows in ~0.3 s; more is a LIMIT away
EXAMPLE = "SELECT name, COUNT(*) n, SUM(dur) total FROM slice GROUP BY name ORDER BY total DESC LIMIT 20"

Jump = tuple[str, int]  # ("slice", row) or ("time", ns)


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
        table = self.query_one(DataTable)
        table.clear(columns=True)
        self.columns, self.rows = list(result.columns), list(result.rows)
        for name in self.columns:
            table.add_column(Text(visible(clip(name, 60))))
        for row in self.rows:
            table.add_row(*(Text(visible(clip("NULL" if v is None else str(v), 200))) for v in row))
        more = f" (first {SHOWN_ROWS:,}: add a LIMIT)" if result.truncated else ""
        self._status(f"{result.row_count:,} rows{more}")
        if self.rows:
            table.focus()

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
