"""Bulk reads from SQLite into numpy, and args JSON built in numpy: no Python object per row.

Fetching rows through ``sqlite3`` makes a tuple and an int object per value; instead SQLite
writes a chunk of rows as one comma-separated text (``group_concat(printf(...))``) that numpy
parses in C. Args objects (``{"device":0,"grid":[2,1,1]}``) are likewise assembled from integer
columns with vectorised digit writes, not formatted per row.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

NULL = np.iinfo(np.int64).min  # an SQL NULL in an integer column (written "null" in args)
NULL_SQL = "(-9223372036854775807 - 1)"
_CHUNK = 250_000  # rowids per query: bounds the text SQLite builds at once (~30 MB)
_MIN_CHUNK = 20_000  # below this many rows per query, another thread is not worth starting
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)


def int_sql(column_sql: str) -> str:
    """An integer column (text and reals cast, NULL kept as ``NULL``) for ``fetch_ints``."""
    return f"coalesce(CAST({column_sql} AS INTEGER), {NULL_SQL})"


class Connections:
    """One read connection per thread: SQLite runs a query without the GIL, so chunks of a table
    read on several threads use several cores. ``connect`` must allow closing from another
    thread (``check_same_thread=False``)."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], jobs: int = 1) -> None:
        self.connect = connect
        self.jobs = max(1, jobs)
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def get(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._local.con = self.connect()
            with self._lock:
                self._opened.append(con)
        return con

    def map(self, fn: Callable, items: list) -> list:
        """``fn`` over ``items`` on the threads (in order), or here when one job or one item."""
        if self.jobs == 1 or len(items) < 2:
            return [fn(item) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="vtui-sqlite")
        return list(self._pool.map(fn, items))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for con in self._opened:  # opened with check_same_thread=False: closed from here
            con.close()
        self._opened.clear()


def fetch_ints(cons: Connections, table_sql: str, exprs: Sequence[str]) -> np.ndarray:
    """All rows of ``exprs`` (integer SQL expressions, never NULL) as an (n, len(exprs)) int64
    array, in rowid order; rowid ranges are read on ``cons.jobs`` threads."""
    k = len(exprs)
    row = "printf('" + ",".join(["%d"] * k) + "', " + ", ".join(exprs) + ")"
    try:
        lo, hi, count = cons.get().execute(f"SELECT min(rowid), max(rowid), count(*) FROM {table_sql}").fetchone()
    except sqlite3.OperationalError:  # a WITHOUT ROWID table
        lo = hi = count = None
    # Chunks by rowid where rowids are dense (an export's are); sparse ones would make many empty queries.
    if isinstance(lo, int) and isinstance(hi, int) and hi - lo < 4 * count + _CHUNK:
        pieces = max(1, min(cons.jobs * 2, count // _MIN_CHUNK))
        step = max(1, min(_CHUNK, -(-(hi - lo + 1) // pieces)))
        ranges: list[tuple[int, int] | None] = [(a, min(a + step - 1, hi)) for a in range(lo, hi + 1, step)]
        query = f"SELECT group_concat(r, ',') FROM (SELECT {row} AS r FROM {table_sql} " \
                f"WHERE rowid BETWEEN ? AND ? ORDER BY rowid)"
    else:  # empty, a view, or no rowid: one query
        ranges, query = [None], f"SELECT group_concat(r, ',') FROM (SELECT {row} AS r FROM {table_sql})"

    def read(bounds: tuple[int, int] | None) -> np.ndarray | None:
        text = cons.get().execute(query, bounds or ()).fetchone()[0]
        if not text:
            return None
        values = np.fromstring(text, dtype=np.int64, sep=",")  # C parse, exact for int64
        if len(values) % k:
            raise sqlite3.DatabaseError(f"unexpected values in {table_sql}")
        return values.reshape(-1, k)

    parts = [g for g in cons.map(read, ranges) if g is not None]
    return np.concatenate(parts) if parts else np.zeros((0, k), dtype=np.int64)


_ROWS = 100_000  # rows per block of the args matrix (bounds its memory: rows x widest object)


def json_objects(fields: Sequence[tuple[str, np.ndarray]], n: int) -> tuple[bytes, np.ndarray]:
    """Row i's args object of integer fields, for all rows at once: (concatenated bytes, length
    per row). A field's values are (n,) for a number or (n, m) for an array of m numbers.

    Each row is laid out in a fixed-width byte matrix (fixed text in fixed columns, numbers right-
    aligned in slots as wide as the field's widest value, padded with zero bytes); dropping the
    zero bytes of the flattened matrix leaves the objects back to back. Only whole-column writes."""
    if not fields:
        return b"", np.zeros(n, dtype=np.int32)
    pieces: list[bytes | np.ndarray] = []  # fixed text and number columns, in order
    text = b"{"
    for i, (key, values) in enumerate(fields):
        text += (b"," if i else b"") + b'"' + key.encode() + b'":'
        cols = [values] if values.ndim == 1 else [values[:, j] for j in range(values.shape[1])]
        text += b"[" if values.ndim > 1 else b""
        for j, col in enumerate(cols):
            pieces.extend([text + (b"," if j else b""), np.asarray(col, dtype=np.int64)])
            text = b""
        text += b"]" if values.ndim > 1 else b""
    pieces.append(text + b"}")
    blobs: list[bytes] = []
    lens: list[np.ndarray] = []
    for lo in range(0, n, _ROWS):
        block = [p if isinstance(p, bytes) else p[lo : lo + _ROWS] for p in pieces]
        blob, ln = _objects_block(block, min(_ROWS, n - lo))
        blobs.append(blob)
        lens.append(ln)
    return b"".join(blobs), (np.concatenate(lens) if lens else np.zeros(0, dtype=np.int64)).astype(np.int32)


def _objects_block(pieces: list, n: int) -> tuple[bytes, np.ndarray]:
    widths = [len(p) if isinstance(p, bytes) else int(_width(p).max(initial=1)) for p in pieces]
    mat = np.zeros((n, sum(widths)), dtype=np.uint8)
    at = 0
    for piece, width in zip(pieces, widths):
        if isinstance(piece, bytes):
            mat[:, at : at + width] = np.frombuffer(piece, dtype=np.uint8)
        else:
            _write_numbers(mat, at + width - 1, width, piece)
        at += width
    kept = mat != 0
    return mat[kept].tobytes(), kept.sum(axis=1)


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
