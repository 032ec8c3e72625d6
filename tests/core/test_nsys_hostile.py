"""A crafted Nsight Systems export cannot load forever: views are not read (only real tables),
every query has a time limit, and SIGTERM / SIGINT stop a running query at once.

Each hang is bounded by faulthandler's watchdog, which kills the test process (a failure, not a
stuck run) if a query does not stop: SQLite runs in C, where no Python timer could interrupt it."""

from __future__ import annotations

import faulthandler
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from tests.helpers import FIXTURES, ROOT
from vtui.errors import TraceLoadError
from vtui.io import nsys_reader
from vtui.io.nsys import read_nsys
from vtui.termination import Terminated

EXPORT = FIXTURES / "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
WATCHDOG_S = 60


@pytest.fixture
def watchdog():
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def _kernel_count() -> int:
    with sqlite3.connect(f"file:{EXPORT}?mode=ro&immutable=1", uri=True) as con:
        return con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]


def _crafted(tmp_path, view_sql: str):
    """The fixture with its kernel table replaced by a view the file chose."""
    path = tmp_path / "crafted.sqlite"
    shutil.copy(EXPORT, path)
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
        con.execute(f"CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS {view_sql}")
    return path


@pytest.mark.parametrize("view", [
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS start, x AS end FROM c",
    "SELECT a.rowid AS start, b.rowid AS end FROM sqlite_master a, sqlite_master b, sqlite_master c, sqlite_master d, "
    "sqlite_master e, sqlite_master f, sqlite_master g"])
def test_a_view_in_place_of_a_table_is_not_read(tmp_path, view, watchdog):
    path = _crafted(tmp_path, view)
    result = subprocess.run([sys.executable, "-m", "vtui", "info", str(path), "--json", "--no-cache"], cwd=ROOT,
                            capture_output=True, text=True, timeout=WATCHDOG_S - 15)
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert any("CUPTI_ACTIVITY_KIND_KERNEL" in w for w in info["warnings"])  # "without 1 table(s)"
    whole = read_nsys(EXPORT).columns
    kernels = _kernel_count()
    assert kernels > 0 and info["events"] < len(whole)  # what the kernels were is gone, the rest is there


def test_queries_past_the_time_limit_are_one_line(watchdog):
    with pytest.raises(TraceLoadError) as exc:
        read_nsys(EXPORT, limit_s=1e-6)
    assert "took more than 1e-06 s and was stopped" in str(exc.value) and "\n" not in str(exc.value)
    assert len(read_nsys(EXPORT).columns) > 0  # the default limit reads it


@pytest.mark.parametrize(("signame", "raised"), [("SIGTERM", Terminated), ("SIGINT", KeyboardInterrupt)])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_signal_stops_a_query_that_would_never_end(monkeypatch, signame, raised, jobs, watchdog):
    """The query runs on the main thread (jobs=1) or on a reading thread (jobs=2); either way
    the signal is raised once the query has stopped."""

    def endless(self):
        threading.Thread(target=os.kill, args=(os.getpid(), getattr(signal, signame))).start()
        if jobs == 1:
            return self.con.execute(ENDLESS).fetchone()
        return self.cons.later(lambda: self.cons.get().execute(ENDLESS).fetchone())()

    monkeypatch.setattr(nsys_reader.Reader, "_load_schema", endless)
    with pytest.raises(raised):
        read_nsys(EXPORT, jobs=jobs, limit_s=None)
