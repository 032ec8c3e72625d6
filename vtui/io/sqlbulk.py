"""Bulk reads from SQLite into numpy, and args JSON built in numpy: no Python object per row.

Fetching rows through ``sqlite3`` makes a tuple and an int object per value; instead SQLite
writes a chunk of rows as one comma-separated text (``group_concat(printf(...))``) that numpy
parses in C. Args objects (``{"device":0,"grid":[2,1,1]}``) are likewise assembled from integer
columns with vectorised digit writes, not formatted per row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

NULL = np.iinfo(np.int64).min  # an SQL NULL in an integer column (written "null" in args)
NULL_SQL = "(-9223372036854775807 - 1)"
_CHUNK = 250_000  # rowids per query: bounds the text SQLite builds at once (~30 MB)
_POW10 = 10 ** np.arange(1, 19, dtype=np.int64)


def int_sql(column_sql: str) -> str:
    """An integer column (text and reals cast, NULL kept as ``NULL``) for ``fetch_ints``."""
    return f"coalesce(CAST({column_sql} AS INTEGER), {NULL_SQL})"


def fetch_ints(con: sqlite3.Connection, table_sql: str, exprs: Sequence[str]) -> np.ndarray:
    """All rows of ``exprs`` (integer SQL expressions, never NULL) as an (n, len(exprs)) int64
    array, in rowid order."""
    k = len(exprs)
    row = "printf('" + ",".join(["%d"] * k) + "', " + ", ".join(exprs) + ")"
    try:
        lo, hi, count = con.execute(f"SELECT min(rowid), max(rowid), count(*) FROM {table_sql}").fetchone()
    except sqlite3.OperationalError:  # a WITHOUT ROWID table
        lo = hi = count = None
    # Chunks by rowid where rowids are dense (an export's are); sparse ones would make many empty queries.
    if isinstance(lo, int) and isinstance(hi, int) and hi - lo < 4 * count + _CHUNK:
        ranges = [(a, min(a + _CHUNK - 1, hi)) for a in range(lo, hi + 1, _CHUNK)]
        query = f"SELECT group_concat(r, ',') FROM (SELECT {row} AS r FROM {table_sql} " \
                f"WHERE rowid BETWEEN ? AND ? ORDER BY rowid)"
    else:  # empty, a view, or no rowid: one query
        ranges, query = [None], f"SELECT group_concat(r, ',') FROM (SELECT {row} AS r FROM {table_sql})"
    parts = []
    for bounds in ranges:
        text = con.execute(query, bounds or ()).fetchone()[0]
        if text:
            values = np.fromstring(text, dtype=np.int64, sep=",")  # C parse, exact for int64
            if len(values) % k:
                raise sqlite3.DatabaseError(f"unexpected values in {table_sql}")
            parts.append(values.reshape(-1, k))
    return np.concatenate(parts) if parts else np.zeros((0, k), dtype=np.int64)


def _digits(values: np.ndarray) -> np.ndarray:
    """Characters of each value written in decimal ("null" for NULL, "-" for negatives)."""
    mag = np.abs(np.where(values == NULL, 0, values))
    n = 1 + np.searchsorted(_POW10, mag, side="right")
    return np.where(values == NULL, 4, n + (values < 0))


def _write_number(buf: np.ndarray, at: np.ndarray, values: np.ndarray, widths: np.ndarray) -> None:
    null = values == NULL
    if null.any():
        for j, ch in enumerate(b"null"):
            buf[at[null] + j] = ch
    ok = ~null
    at, values, widths = at[ok], values[ok], widths[ok]
    neg = values < 0
    buf[at[neg]] = ord("-")
    mag = np.abs(values)
    ndig = widths - neg
    # Last digit first: each pass writes the ones digit of what is left, one place further left.
    end = at + widths - 1
    for j in range(int(ndig.max(initial=0))):
        live = ndig > j
        buf[end[live] - j] = (mag[live] % 10).astype(np.uint8) + ord("0")
        mag = mag // 10


def json_objects(fields: Sequence[tuple[str, np.ndarray]], n: int) -> tuple[bytes, np.ndarray]:
    """Row i's args object of integer fields, for all rows at once: (concatenated bytes, length
    per row). A field's values are (n,) for a number or (n, m) for an array of m numbers."""
    if not fields:
        return b"", np.zeros(n, dtype=np.int32)
    # The object as pieces: fixed text, then numbers, alternately.
    literals: list[bytes] = []
    numbers: list[np.ndarray] = []
    text = b"{"
    for i, (key, values) in enumerate(fields):
        text += (b"," if i else b"") + b'"' + key.encode() + b'":'
        cols = [values] if values.ndim == 1 else [values[:, j] for j in range(values.shape[1])]
        if values.ndim > 1:
            text += b"["
        for j, col in enumerate(cols):
            if j:
                text += b","
            literals.append(text)
            numbers.append(np.asarray(col, dtype=np.int64))
            text = b""
        if values.ndim > 1:
            text += b"]"
    literals.append(text + b"}")
    widths = [_digits(v) for v in numbers]
    lens = sum(widths) + sum(len(t) for t in literals)
    starts = np.zeros(n, dtype=np.int64)
    if n > 1:
        np.cumsum(lens[:-1], out=starts[1:])
    buf = np.empty(int(lens.sum()), dtype=np.uint8)
    at = starts.copy()
    for lit, values, width in zip(literals, [*numbers, None], [*widths, None]):
        if lit:
            pos = at[:, None] + np.arange(len(lit))
            buf[pos] = np.frombuffer(lit, dtype=np.uint8)
            at = at + len(lit)
        if values is not None:
            _write_number(buf, at, values, width)
            at = at + width
    return buf.tobytes(), lens.astype(np.int32)
