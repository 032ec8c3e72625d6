"""Bulk reads from SQLite into numpy, and args JSON built in numpy: no Python object per row.

Fetching rows through ``sqlite3`` makes a tuple and an int object per value; instead SQLite
writes a chunk of rows as one comma-separated text (``group_concat(printf(...))``) that numpy
parses in C. Args objects (``{"device":0,"grid":[2,1,1]}``) are likewise assembled from integer
columns with vectorised digit writes, not formatted per row.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

NULL = np.iinfo(np.int64).min  # an SQL NULL in an integer column (written "null" in args)
NULL_SQL = "(-9223372036854775807 - 1)"
_CHUNK = 250_000  # rowids per query: bounds the text SQLite builds at once (~30 MB)
_MIN_CHUNK = 20_000  # below this many rows per query, another thread is not worth starting
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)
# SQLite VM steps between two calls of the progress handler. On the main thread it is what lets
# a signal's handler run during a query (SQLite runs without the GIL, Python handlers need
# bytecode); on the reading threads it only has to notice a stop, so it comes rarely (GIL).
_TICK_MAIN = 50_000
_TICK_THREAD = 2_000_000


def int_sql(column_sql: str) -> str:
    """An integer column (text and reals cast, NULL kept as ``NULL``) for ``fetch_ints``."""
    return f"coalesce(CAST({column_sql} AS INTEGER), {NULL_SQL})"


class Connections:
    """One read connection per thread: SQLite runs a query without the GIL, so chunks of a table
    read on several threads use several cores. ``connect`` must allow closing from another
    thread (``check_same_thread=False``)."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], jobs: int = 1, limit_s: float | None = None) -> None:
        self.connect = connect
        self.jobs = max(1, jobs)
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self.stopped = ""  # why every query was stopped: "time" (``limit_s`` passed), "signal", "closed"
        self.limit_s = limit_s
        self._deadline = time.monotonic() + limit_s if limit_s else None
        self._timer: threading.Timer | None = None
        if limit_s:
            self._timer = threading.Timer(limit_s, self.stop, ("time",))
            self._timer.daemon = True
            self._timer.start()

    def get(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            self._tick()
            if self.stopped:
                raise sqlite3.OperationalError("interrupted")
            con = self._local.con = self.connect()
            main = threading.current_thread() is threading.main_thread()
            con.set_progress_handler(self._tick, _TICK_MAIN if main else _TICK_THREAD)
            with self._lock:
                self._opened.append(con)
        return con

    def _tick(self) -> int:
        """SQLite's progress handler: non-zero aborts the running query ("interrupted")."""
        if not self.stopped and self._deadline is not None and time.monotonic() > self._deadline:
            self.stopped = "time"  # the timer may not have had its turn yet
        return 1 if self.stopped else 0

    def stop(self, reason: str) -> None:
        """Abort every running query and refuse new ones (from any thread: a timer, a signal handler)."""
        if not self.stopped:
            self.stopped = reason
        with self._lock:
            opened = list(self._opened)
        for con in opened:
            try:
                con.interrupt()  # thread-safe in SQLite; the progress handler catches what starts later
            except sqlite3.ProgrammingError:  # closed meanwhile
                pass

    def later(self, fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        """``fn(*args)`` queued on the threads now; the returned function waits for its result.
        With one job nothing runs ahead: ``fn`` runs when its result is asked for."""
        if self.jobs == 1:
            return lambda: fn(*args)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="vtui-sqlite")
        return self._pool.submit(fn, *args).result

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.stop("closed")  # after an error, a query still running on a thread ends now
        if self._pool is not None:  # after an error, queued reads are dropped, not run
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
        for con in self._opened:  # opened with check_same_thread=False: closed from here
            con.close()
        self._opened.clear()


def fetch_ints(cons: Connections, table_sql: str, exprs: Sequence[str]) -> np.ndarray:
    """All rows of ``exprs`` (integer SQL expressions, never NULL) as an (n, len(exprs)) int64
    array, in rowid order; rowid ranges are read on ``cons.jobs`` threads."""
    parts = fetch_ints_later(cons, table_sql, exprs)()
    return np.concatenate(parts) if parts else np.zeros((0, len(exprs)), dtype=np.int64)


def fetch_ints_later(cons: Connections, table_sql: str, exprs: Sequence[str]) -> Callable[[], list[np.ndarray]]:
    """``fetch_ints`` queued now on the threads (so SQLite reads ahead while the caller works on
    earlier tables); the returned function waits for the rows, as (rows, len(exprs)) pieces in
    order (the caller copies out the columns it needs: no copy of the whole)."""
    k = len(exprs)
    row = "printf('" + ",".join(["%d"] * k) + "', " + ", ".join(exprs) + ")"

    def read(query: str, bounds: tuple[int, ...]) -> np.ndarray | None:
        text = cons.get().execute(query, bounds).fetchone()[0]
        if not text:
            return None
        values = np.fromstring(text, dtype=np.int64, sep=",")  # C parse, exact for int64
        if len(values) % k:
            raise sqlite3.DatabaseError(f"unexpected values in {table_sql}")
        return values.reshape(-1, k)

    def plan() -> list[Callable[[], np.ndarray | None]]:
        try:
            lo, hi, count = cons.get().execute(f"SELECT min(rowid), max(rowid), count(*) FROM {table_sql}").fetchone()
        except sqlite3.OperationalError:  # a WITHOUT ROWID table
            lo = hi = count = None
        # Chunks by rowid where rowids are dense (an export's are); sparse ones would make many empty queries.
        if isinstance(lo, int) and isinstance(hi, int) and hi - lo < 4 * count + _CHUNK:
            pieces = max(1, min(cons.jobs * 2, count // _MIN_CHUNK))
            step = max(1, min(_CHUNK, -(-(hi - lo + 1) // pieces)))
            query = f"SELECT group_concat(r, ',') FROM (SELECT {row} AS r FROM {table_sql} " \
                    f"WHERE rowid BETWEEN ? AND ? ORDER BY rowid)"
            return [cons.later(read, query, (a, min(a + step - 1, hi))) for a in range(lo, hi + 1, step)]
        # empty, a view, or no rowid: one query
        return [cons.later(read, f"SELECT group_concat(r, ',') FROM (SELECT {row} AS r FROM {table_sql})", ())]

    planned = cons.later(plan)  # on a thread too: count(*) walks the whole table

    def result() -> list[np.ndarray]:
        return [g for g in (part() for part in planned()) if g is not None]

    return result


_BLOCK_BYTES = 1 << 21  # rows per block of the args matrix: ~2 MB, so its writes stay in cache
_MIN_BLOCK_ROWS = 1024
_TABLE_SPAN = 4096  # a column spanning fewer values is written from a table of their texts


def json_objects(fields: Sequence[tuple[str, np.ndarray]], n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Row i's args object of integer fields, for all rows at once: (the objects back to back, in
    uint8 pieces to join, and the length per row). A field's values are (n,) for a number or (n, m) for an array of m numbers.

    Each row is laid out in a fixed-width byte matrix (fixed text in fixed columns, numbers right-
    aligned in slots as wide as the field's widest value, padded with zero bytes); dropping the
    zero bytes of the flattened matrix leaves the objects back to back. Only whole-column writes:
    a column of few distinct values (grid sizes, devices) is copied from a table of their texts,
    others are written digit by digit."""
    if not fields:
        return [], np.zeros(n, dtype=np.int32)
    template = bytearray(b"{")  # the fixed text of a row, zeros where numbers go
    slots: list[tuple[int, _Slot]] = []  # (first column, slot)
    for i, (key, values) in enumerate(fields):
        template += (b"," if i else b"") + b'"' + key.encode() + b'":'
        cols = [values] if values.ndim == 1 else [values[:, j] for j in range(values.shape[1])]
        template += b"[" if values.ndim > 1 else b""
        for j, col in enumerate(cols):
            template += b"," if j else b""
            slot = _Slot(np.asarray(col, dtype=np.int64))
            slots.append((len(template), slot))
            template += bytes(slot.width)
        template += b"]" if values.ndim > 1 else b""
    template += b"}"
    row = np.frombuffer(bytes(template), dtype=np.uint8)
    step = max(_MIN_BLOCK_ROWS, _BLOCK_BYTES // len(row))
    blobs: list[np.ndarray] = []
    lens = np.zeros(n, dtype=np.int32)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        mat = np.empty((hi - lo, len(row)), dtype=np.uint8)
        mat[:] = row
        for at, slot in slots:
            mat[:, at : at + slot.width] = slot.text(lo, hi)
        kept = mat != 0
        blobs.append(mat[kept])
        lens[lo:hi] = kept.view(np.uint8).sum(axis=1, dtype=np.int32)
    return blobs, lens


class _Slot:
    """One number column as right-aligned text, zero-padded on the left to ``width`` bytes."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        hi = int(values.max(initial=0))
        null = bool(len(values)) and int(values.min()) == NULL
        lo = int(np.where(values == NULL, hi, values).min(initial=hi)) if null else int(values.min(initial=0))
        # Characters grow with |v| on either side of zero: the extremes are the widest.
        self.width = max(len(str(lo)), len(str(hi)), 4 if null else 1)
        self.table: np.ndarray | None = None
        if hi - lo < _TABLE_SPAN:
            texts = [b"null" if null else b"", *(str(v).encode() for v in range(lo, hi + 1))]
            # One fixed-size item per text: a gather of them copies whole slots at once.
            self.table = np.array([t.rjust(self.width, b"\0") for t in texts], dtype=f"V{self.width}")
            self.index = np.where(values == NULL, 0, values - (lo - 1)) if null else values - (lo - 1)

    def text(self, lo: int, hi: int) -> np.ndarray:
        if self.table is not None:
            return self.table.take(self.index[lo:hi]).view(np.uint8).reshape(hi - lo, self.width)
        out = np.zeros((hi - lo, self.width), dtype=np.uint8)
        _write_numbers(out, self.width - 1, self.width, self.values[lo:hi])
        return out


def _width(values: np.ndarray) -> np.ndarray:
    """Characters of each value in decimal ("null" for NULL, a "-" for negatives)."""
    mag = np.abs(np.where(values == NULL, 0, values))
    digits = 1 + np.searchsorted(_POW10, mag, side="right")
    return np.where(values == NULL, 4, digits + (values < 0))


def _write_numbers(mat: np.ndarray, last: int, width: int, values: np.ndarray) -> None:
    """Write ``values`` right-aligned in the ``width`` columns ending at column ``last``."""
    null = values == NULL
    neg = values < 0
    mag = np.abs(np.where(null, 0, values)).astype(np.uint64)
    live = np.ones(len(values), dtype=bool)  # digits left to write (a zero writes one)
    for j in range(width):  # the ones digit first, moving left
        mat[:, last - j] = np.where(live, (mag % 10).astype(np.uint8) + ord("0"), 0)
        mag //= 10
        live = mag > 0
        if not live.any():
            break
    # The sign just left of each negative number's digits; "null" over NULLs.
    if (neg & ~null).any():
        ndig = 1 + np.searchsorted(_POW10, np.abs(np.where(null | ~neg, 0, values)), side="right")
        rows = np.flatnonzero(neg & ~null)
        mat[rows, last - ndig[rows]] = ord("-")
    if null.any():
        mat[np.flatnonzero(null)[:, None], np.arange(last - 3, last + 1)] = np.frombuffer(b"null", dtype=np.uint8)
