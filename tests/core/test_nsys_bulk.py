"""The nsys reader's bulk paths: distinct values and rows by factorizing equal numpy's sorts, and
an export read in many small chunks on threads, with rows out of order, calls recorded twice and
one stream shared by two processes, still gives the figures SQL computes on the file."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from benchmarks.nsys_synth import write_nsys_export
from tests.core.test_nsys import check_figures
from vtui.io import sqlbulk
from vtui.io.nsys_parts import distinct_rows, factorize
from vtui.load.trace import load_trace


@pytest.mark.parametrize("spread", [3, 10**5, 10**15])  # a counted table, then sorts
def test_factorize_equals_unique(spread):
    rng = np.random.default_rng(spread)
    values = rng.integers(-spread, spread, size=5000)
    uniq, inverse = factorize(values)
    expected, expected_inverse = np.unique(values, return_inverse=True)
    assert np.array_equal(uniq, expected) and np.array_equal(inverse, expected_inverse.reshape(-1))
    assert [len(a) for a in factorize(np.zeros(0, dtype=np.int64))] == [0, 0]


@pytest.mark.parametrize("spreads", [(2, 4, 3, 40), (2, 1 << 40, 3, 7), (1 << 40, 1 << 40, 1 << 40, 9)])
def test_distinct_rows_equal_unique_rows(spreads):
    rng = np.random.default_rng(len(spreads))
    # Few distinct values per column (as devices, processes, streams are), spread over a range.
    columns = [rng.integers(0, 6, size=4000) * (s // 6 + 1) - s // 2 for s in spreads]
    uniq, inverse = distinct_rows(*columns)
    expected, expected_inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    assert np.array_equal(uniq, expected) and np.array_equal(inverse, expected_inverse.reshape(-1))


def test_distinct_rows_of_too_many_combinations_for_one_key():
    rng = np.random.default_rng(7)
    columns = [rng.integers(0, 10**6, size=4000) for _ in range(6)]  # 4000^6 > 2^62: one lexsort
    columns[0][:2000] = columns[0][2000:]  # and some rows repeated
    for c in columns[1:]:
        c[:2000] = c[2000:]
    uniq, inverse = distinct_rows(*columns)
    expected, expected_inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    assert len(uniq) == 2000 and np.array_equal(uniq, expected) and np.array_equal(inverse, expected_inverse.reshape(-1))


def test_export_out_of_order_in_small_chunks_equals_sql(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlbulk, "_CHUNK", 97)  # many rowid chunks, read on the threads
    monkeypatch.setattr(sqlbulk, "_MIN_CHUNK", 1)
    path = tmp_path / "shuffled.sqlite"
    write_nsys_export(path, 800, "2024")
    con = sqlite3.connect(path)
    rt = "CUPTI_ACTIVITY_KIND_RUNTIME"
    # Calls in random order, and some recorded twice under one correlation id (an outer wrapper).
    con.execute(f"CREATE TABLE shuffled AS SELECT * FROM {rt} ORDER BY random()")
    con.execute(f"DROP TABLE {rt}")
    con.execute(f"ALTER TABLE shuffled RENAME TO {rt}")
    con.execute(f"INSERT INTO {rt} (globalTid, start, end, correlationId, nameId, eventClass, returnValue) "
                f"SELECT globalTid, start - 50, end + 50, correlationId, nameId, eventClass, returnValue FROM {rt} "
                "WHERE correlationId % 5 = 0")
    # Another process's kernels on the same device and stream: a track of its own, no launch here.
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + (1 << 24), "
                "correlationId = correlationId + 1000000 WHERE correlationId % 7 = 0")
    con.commit()
    tracks = con.execute("SELECT count(*) FROM (SELECT DISTINCT deviceId, globalPid, contextId, streamId FROM "
                         "(SELECT deviceId, globalPid, contextId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
                         "SELECT deviceId, globalPid, contextId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL "
                         "SELECT deviceId, globalPid, contextId, streamId FROM CUPTI_ACTIVITY_KIND_MEMSET UNION ALL "
                         "SELECT deviceId, globalPid, contextId, streamId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION))"
                         ).fetchone()[0]
    con.close()
    check_figures(path)
    store = load_trace(path, cache=False, jobs=2)
    assert len([t for t in store.tracks if t.label.startswith("GPU")]) == tracks
