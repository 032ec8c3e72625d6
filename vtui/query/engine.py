"""Run one SQL query over a store with DuckDB: tables registered on demand, a time limit, and
the rows back as plain values in a msgspec Struct.

The tables a query names (a word match on the SQL: cheap, and a table named in a comment only
costs its build) are registered as Arrow views of the store's columns; nothing is copied. The
connection is locked down before the query runs: no file or network access, no extensions, no
settings changes, so a query reads the trace and writes no file (one database per process,
locked once; each query runs on its own cursor, whose registered tables no other query sees). A timer thread calls DuckDB's
``interrupt()`` when the time limit passes.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import threading
import uuid
from typing import Any

import msgspec

from vtui.errors import UsageError
from vtui.store.store import TraceStore

TIME_LIMIT_S = 30.0
MAX_ROWS = 10_000  # rows a query returns unless told (a SELECT * over 2M slices stays bounded)


class QueryResult(msgspec.Struct):
    """One query's answer: column names and DuckDB types, the rows (at most ``max_rows``) and
    whether more rows were left out."""

    columns: list[str]
    types: list[str]
    rows: list[list[Any]]
    row_count: int  # rows returned here
    truncated: bool  # the query had more rows than were fetched


def duckdb_module():
    try:
        import duckdb
    except ImportError:
        raise UsageError("SQL needs duckdb and pyarrow: pip install 'vtui[sql]'") from None
    return duckdb


def table_names() -> dict[str, Any]:
    """Every table a query can name, with its builder (store -> Arrow table)."""
    from vtui.query.tables import BUILDERS
    from vtui.query.views import VIEWS

    return {**BUILDERS, **VIEWS}


def referenced(sql: str, names: list[str]) -> list[str]:
    return [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", sql, re.IGNORECASE)]


_DATABASE: list[Any] = []  # one in-memory DuckDB per process, locked down once; a cursor per query
_DATABASE_LOCK = threading.Lock()


def database():
    """The process's DuckDB database: no file or network access, no extensions, progress bar
    off (it would write over the CLI's output and MCP's stdout), configuration locked. Opening
    one costs ~25 ms CPU; a cursor on it ~1 ms, so every query gets its own cursor."""
    duckdb = duckdb_module()
    with _DATABASE_LOCK:
        if not _DATABASE:
            db = duckdb.connect(":memory:", config={"enable_external_access": False,
                                                    "autoload_known_extensions": False,
                                                    "autoinstall_known_extensions": False})
            db.execute("SET enable_progress_bar = false")
            db.execute("SET lock_configuration = true")
            _DATABASE.append(db)
        return _DATABASE[0]


def connect(source: Any, sql: str = "", every_table: bool = False):
    """A cursor (its own connection) with the tables ``sql`` names (all with ``every_table``)
    registered over ``source`` (a store, or a ``ParquetSource``), and Perfetto's views and table
    functions it names (``vtui.query.perfetto``) with the tables they read; registrations are
    private to the cursor."""
    from vtui.query.args import ARGS_NAMES, register_args
    from vtui.query.parquet import ParquetSource
    from vtui.query.perfetto import object_names, wanted_objects

    names = [*table_names(), *ARGS_NAMES]
    named = set(names + object_names()) if every_table else set(referenced(sql, names + object_names()))
    objects = wanted_objects(named)
    needed = named | {t for reads, _ in objects for t in reads}
    wanted = [n for n in names if n in needed]
    con = database().cursor()
    for name in wanted:
        if isinstance(source, ParquetSource):
            con.register(name, source.table(name))
        elif name not in ARGS_NAMES:
            con.register(name, table_names()[name](source))
    if not isinstance(source, ParquetSource) and set(ARGS_NAMES) & set(wanted):
        register_args(source, con, wanted)
    for _reads, create in objects:
        con.execute(create)
    return con


def run_query(store: TraceStore | Any, sql: str, time_limit: float = TIME_LIMIT_S, max_rows: int | None = MAX_ROWS,
              con=None) -> QueryResult:
    """``sql`` over ``store`` (or a ``ParquetSource``): at most ``max_rows`` rows (None: all), stopped after ``time_limit``
    seconds (0: no limit). Bad SQL or a stopped query is a UsageError with DuckDB's message."""
    duckdb = duckdb_module()
    if not sql.strip():
        raise UsageError("empty query")
    from vtui.query.perfetto import translate

    sql = translate(sql)
    own = con is None
    con = connect(store, sql) if own else con
    timer = threading.Timer(time_limit, con.interrupt) if time_limit and time_limit > 0 else None
    try:
        if timer is not None:
            timer.daemon = True
            timer.start()
        try:
            cursor = _execute(duckdb, con, sql)
            if cursor.description is None:  # a statement with no result (SET, …)
                return QueryResult([], [], [], 0, False)
            columns = [d[0] for d in cursor.description]
            types = [str(d[1]) for d in cursor.description]
            got = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows + 1)
        except duckdb.InterruptException:
            raise UsageError(f"the query ran past {time_limit:g} s and was stopped "
                             "(narrow it, add a LIMIT, or raise --time-limit)") from None
        except duckdb.Error as exc:
            from vtui.query.perfetto import missing_table_line

            line = one_line(str(exc))
            raise UsageError(missing_table_line(line, [*table_names(), "args", "arg_json"]) or line) from None
    finally:
        if timer is not None:
            timer.cancel()
        if own:
            con.close()
    truncated = max_rows is not None and len(got) > max_rows
    rows = [[plain(v) for v in row] for row in (got[:max_rows] if truncated else got)]
    return QueryResult(columns, types, rows, len(rows), truncated)


def _execute(duckdb, con, sql: str):
    """``con.execute(sql)``, with SQLite's rule for a double-quoted word naming no column (it is
    text: Perfetto's queries write ``name = "foo"``) applied to each such word DuckDB reports."""
    from vtui.query.perfetto import string_retry

    for _ in range(64):
        try:
            return con.execute(sql)
        except duckdb.BinderException as exc:
            again = string_retry(sql, str(exc))
            if again is None:
                raise
            sql = again
    return con.execute(sql)


def one_line(message: str) -> str:
    """DuckDB's message on one line (its errors carry a caret diagram over several)."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    kept = [ln for ln in lines if not set(ln) <= set("^ ") and not ln.startswith("LINE ")]
    return " ".join(kept) or message.strip() or "query failed"


def plain(value: Any) -> Any:
    """A DuckDB value as JSON-ready Python: numbers, text, None, lists and dicts."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta, uuid.UUID)):
        return str(value)
    return str(value)
