"""Run one SQL query over a store with DuckDB: tables registered on demand, a time limit, and
the rows back as plain values in a msgspec Struct.

The tables a query names (a word match on the SQL: cheap, and a table named in a comment only
costs its build) are registered as Arrow views of the store's columns; nothing is copied.

DuckDB's own advice is to treat its SQL as code, and a query here may come from a trace's text
by way of an agent, so every query gets a database of its own, locked down before it runs and
closed after it (nothing a query creates, a macro shadowing ``count`` included, outlives it):
the local file system disabled and no temp directory (so no allowed directory or path is left
to read or write, not even a ``.tmp`` in the cwd that links elsewhere), no network, no
extensions, a memory limit, the configuration locked. Rows are fetched a batch at a time and
stop at a row and a byte bound; the time limit covers the fetch and conversion too (a timer
thread calls DuckDB's ``interrupt()``).
"""

from __future__ import annotations

import datetime
import decimal
import math
import os
import re
import threading
import time
import uuid
from typing import Any

import msgspec

from vtui.errors import UsageError
from vtui.store.store import TraceStore

TIME_LIMIT_S = 30.0
MAX_ROWS = 10_000  # rows a query returns unless told (a SELECT * over 2M slices stays bounded)
MAX_BYTES = 64 << 20  # and at most this much cell text (10,000 rows of 1 MB would be 10 GB)
FETCH_BATCH = 64  # rows fetched and converted at a time (a row may be megabytes)
MEMORY_CAP = 4 << 30  # DuckDB's memory for one query: this, or half the machine's if less


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


def memory_limit() -> int:
    """Bytes DuckDB may use for one query (its default is 80 % of the machine's memory; with no
    temp directory nothing spills, so past this a query fails with one line)."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return MEMORY_CAP
    return min(MEMORY_CAP, ram // 2)


def database():
    """A new in-memory DuckDB database for one query, locked down: local file system disabled
    and no temp directory (set before external access is turned off, so DuckDB adds no allowed
    path for the cwd), no network or extensions, a memory limit, progress bar off (it would
    write over the CLI's output and MCP's stdout), configuration locked. ~20 ms CPU to open."""
    duckdb = duckdb_module()
    db = duckdb.connect(":memory:", config={"temp_directory": "",
                                            "autoload_known_extensions": False,
                                            "autoinstall_known_extensions": False})
    try:
        for setting in ("SET disabled_filesystems = 'LocalFileSystem'", "SET enable_external_access = false",
                        "SET enable_progress_bar = false", f"SET memory_limit = '{memory_limit()}B'",
                        "SET lock_configuration = true"):
            db.execute(setting)
    except BaseException:
        db.close()
        raise
    return db


def connect(source: Any, sql: str = "", every_table: bool = False):
    """A fresh locked-down database (``database()``; the caller closes it) with the tables ``sql``
    names (all with ``every_table``) registered over ``source`` (a store, or a
    ``ParquetSource``), and Perfetto's views and table functions it names
    (``vtui.query.perfetto``) with the tables they read."""
    from vtui.query.args import ARGS_NAMES
    from vtui.query.perfetto import object_names, wanted_objects

    names = [*table_names(), *ARGS_NAMES]
    named = set(names + object_names()) if every_table else set(referenced(sql, names + object_names()))
    objects = wanted_objects(named)
    needed = named | {t for reads, _ in objects for t in reads}
    wanted = [n for n in names if n in needed]
    con = database()
    try:
        _register(con, source, wanted, objects)
    except BaseException:
        con.close()
        raise
    return con


def _register(con, source: Any, wanted: list[str], objects: list[tuple[Any, str]]) -> None:
    from vtui.query.args import ARGS_NAMES, register_args
    from vtui.query.parquet import ParquetSource

    for name in wanted:
        if isinstance(source, ParquetSource):
            con.register(name, source.table(name))
        elif name not in ARGS_NAMES:
            con.register(name, table_names()[name](source))
    if not isinstance(source, ParquetSource) and set(ARGS_NAMES) & set(wanted):
        register_args(source, con, wanted)
    for _reads, create in objects:
        con.execute(create)


def run_query(store: TraceStore | Any, sql: str, time_limit: float = TIME_LIMIT_S, max_rows: int | None = MAX_ROWS,
              con=None, max_bytes: int | None = MAX_BYTES) -> QueryResult:
    """``sql`` over ``store`` (or a ``ParquetSource``): at most ``max_rows`` rows and about
    ``max_bytes`` of cell text (None: no bound), stopped after ``time_limit`` seconds (0: no
    limit) counted over the run, the fetch and the conversion. Bad SQL, a stopped query or one
    over the memory limit is a UsageError with one line."""
    duckdb = duckdb_module()
    if not sql.strip():
        raise UsageError("empty query")
    from vtui.query.perfetto import translate

    sql = translate(sql)
    limited = bool(time_limit and time_limit > 0)
    deadline = time.monotonic() + time_limit if limited else math.inf
    stopped = UsageError(f"the query ran past {time_limit:g} s and was stopped "
                         "(narrow it, add a LIMIT, or raise --time-limit)")
    own = con is None
    con = connect(store, sql) if own else con
    timer = threading.Timer(time_limit, con.interrupt) if limited else None
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
            rows, truncated = _fetch(cursor, max_rows, max_bytes, deadline)
        except duckdb.InterruptException:
            raise stopped from None
        except duckdb.OutOfMemoryException:
            raise UsageError(f"the query needed more than {memory_limit() >> 20:,} MiB, SQL's memory limit "
                             "(aggregate, narrow it or add a LIMIT)") from None
        except duckdb.Error as exc:
            from vtui.query.perfetto import missing_table_line

            line = one_line(str(exc))
            raise UsageError(missing_table_line(line, [*table_names(), "args", "arg_json"]) or line) from None
        if time.monotonic() > deadline:
            raise stopped
    finally:
        if timer is not None:
            timer.cancel()
        if own:
            con.close()
    return QueryResult(columns, types, rows, len(rows), truncated)


def _fetch(cursor, max_rows: int | None, max_bytes: int | None, deadline: float) -> tuple[list[list[Any]], bool]:
    """Rows a batch at a time, converted as they come, until ``max_rows`` rows or ``max_bytes``
    of cell text are held (then True: more were left out) or the deadline passes (the caller's
    time-limit error). DuckDB streams the result, so rows past the bounds are never made."""
    rows: list[list[Any]] = []
    held = 0
    while True:
        want = FETCH_BATCH if max_rows is None else min(FETCH_BATCH, max_rows + 1 - len(rows))
        got = cursor.fetchmany(want)
        if time.monotonic() > deadline:
            raise cursor_interrupt()
        if not got:
            return rows, False
        for row in got:
            if max_rows is not None and len(rows) == max_rows:
                return rows, True
            values = [plain(v) for v in row]
            held += sum(_size(v) for v in values)
            if max_bytes is not None and held > max_bytes and rows:
                return rows, True
            rows.append(values)


def cursor_interrupt() -> Exception:
    """The exception a timer's ``interrupt()`` raises, for a deadline found between batches."""
    return duckdb_module().InterruptException("interrupted")


def _size(value: Any) -> int:
    """Roughly the bytes a converted cell holds (its text; 8 for a number)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return 8 + sum(_size(v) for v in value)
    if isinstance(value, dict):
        return 8 + sum(len(k) + _size(v) for k, v in value.items())
    return 8


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
