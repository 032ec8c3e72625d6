"""Bulk SQLite reads and numpy-built args JSON equal the row-by-row path."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from vtui.io import sqlbulk
from vtui.io.sqlbulk import NULL, Connections, fetch_ints, int_sql, json_objects


@pytest.mark.parametrize(("block", "span"), [(7, 4096), (100_000, 4096), (7, 0)])
def test_json_objects_equal_json_dumps(monkeypatch, block, span):
    monkeypatch.setattr(sqlbulk, "_MIN_BLOCK_ROWS", block)
    monkeypatch.setattr(sqlbulk, "_BLOCK_BYTES", 0)
    monkeypatch.setattr(sqlbulk, "_TABLE_SPAN", span)  # 0: every column written digit by digit
    rng = np.random.default_rng(0)
    n = 3000
    big = rng.integers(-10**18, 10**18, size=n)
    big[:12] = [0, -1, 9, 10, 99, 100, NULL, -9, 10**18, -(10**18), np.iinfo(np.int64).max, NULL + 1]
    grid = rng.integers(0, 1000, size=(n, 3))
    grid[5, 1] = NULL
    small = rng.integers(-5, 5, size=n)
    pieces, lens = json_objects([("x", big), ("grid", grid), ("registers per thread", small)], n)
    blob = b"".join(pieces)
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    assert offs[-1] + lens[-1] == len(blob)
    for i in range(n):
        expected = {"x": None if big[i] == NULL else int(big[i]),
                    "grid": [None if v == NULL else int(v) for v in grid[i]], "registers per thread": int(small[i])}
        assert json.loads(blob[offs[i] : offs[i] + lens[i]]) == expected
    assert json_objects([], 3)[0] == [] and json_objects([], 3)[1].tolist() == [0, 0, 0]


@pytest.mark.parametrize(("chunk", "jobs"), [(2, 1), (2, 3), (1000, 1)])
def test_fetch_ints_in_chunks_equals_fetchall(tmp_path, monkeypatch, chunk, jobs):
    monkeypatch.setattr(sqlbulk, "_CHUNK", chunk)
    monkeypatch.setattr(sqlbulk, "_MIN_CHUNK", 1)
    db = tmp_path / "t.sqlite"
    con = sqlite3.connect(db, check_same_thread=False)
    cons = Connections(lambda: sqlite3.connect(db, check_same_thread=False), jobs)
    con.execute("CREATE TABLE t (a INT, b INT, c TEXT)")
    rows = [(i * 7, None if i % 3 == 0 else -i, str(i)) for i in range(11)] + [(302119224788637, 1, "x"), ("12", 2.0, "y")]
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    con.execute("DELETE FROM t WHERE a = 14")  # a gap in the rowids
    con.commit()
    got = fetch_ints(cons, "t", [int_sql("a"), int_sql("b")])
    expected = [(int(a), NULL if b is None else int(b)) for a, b in con.execute("SELECT a, b FROM t ORDER BY rowid")]
    assert [tuple(r) for r in got.tolist()] == expected
    con.execute("CREATE VIEW v AS SELECT a, b FROM t")  # no rowid: one query
    con.commit()
    assert np.array_equal(fetch_ints(cons, "v", [int_sql("a"), int_sql("b")]), got)
    con.execute("INSERT INTO t (rowid, a, b) VALUES (1 << 60, 5, 5)")  # sparse rowids: one query, not 2^59 chunks
    con.commit()
    assert fetch_ints(cons, "t", [int_sql("a")])[-1].tolist() == [5]
    con.execute("CREATE TABLE empty (a INT)")
    con.commit()
    assert fetch_ints(cons, "empty", [int_sql("a")]).shape == (0, 1)
    cons.close()
