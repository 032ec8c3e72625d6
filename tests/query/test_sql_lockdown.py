"""The SQL a query may run is treated as code (DuckDB's own advice): it reads the trace and
nothing else — no file through any allowed directory or path, no state left for the next
query, bounded memory, rows, bytes and time."""

from __future__ import annotations

import pytest

from tests.helpers import FIXTURES, X, write_trace
from vtui.cli import main
from vtui.errors import UsageError
from vtui.load.trace import load_trace

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

from vtui.query import engine  # noqa: E402
from vtui.query.engine import run_query  # noqa: E402

SMALL = FIXTURES / "speedscope__simple-partial-trailing-comma.json"


@pytest.fixture(scope="module")
def store():
    return load_trace(SMALL, cache=False)


def setting(store, name: str):
    return run_query(store, f"SELECT current_setting('{name}')").rows[0][0]


def test_no_directory_or_path_is_allowed_and_nothing_spills(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert setting(store, "allowed_directories") == []
    assert setting(store, "allowed_paths") == []
    assert setting(store, "temp_directory") == ""
    assert setting(store, "enable_external_access") is False


def test_a_tmp_link_to_root_in_the_cwd_reads_and_writes_nothing(store, tmp_path, monkeypatch):
    (tmp_path / ".tmp").symlink_to("/")
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim.txt"
    for sql in ("SELECT * FROM read_text('.tmp/etc/hostname')",
                f"SELECT * FROM read_text('.tmp{tmp_path}/victim.txt')",
                f"COPY (SELECT 'pwned') TO '.tmp{victim}' (FORMAT csv)",
                "SELECT * FROM glob('.tmp/*')", "SELECT * FROM sniff_csv('.tmp/etc/passwd')",
                "SELECT * FROM read_blob('/etc/passwd')", "SELECT * FROM read_csv('.tmp/etc/passwd')",
                "SELECT * FROM read_json('/etc/os-release')", "SELECT * FROM parquet_metadata('.tmp/x.parquet')"):
        with pytest.raises(UsageError):
            run_query(store, sql)
    assert not victim.exists()
    # the CLI, from that cwd, refuses it in one line
    assert main(["query", str(SMALL), "SELECT * FROM read_text('.tmp/etc/hostname')"]) == 1


def test_a_plain_tmp_folder_is_neither_read_nor_made(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError):
        run_query(store, "COPY (SELECT 1) TO '.tmp/x.csv'")
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "secret").write_text("s3cret")
    with pytest.raises(UsageError):
        run_query(store, "SELECT * FROM read_text('.tmp/secret')")
    assert sorted(p.name for p in tmp_path.rglob("*")) == [".tmp", "secret"]


def test_memory_in_the_cwd_is_not_a_file(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for sql in (f"ATTACH '{tmp_path}/:memory:' AS x", f"COPY (SELECT 1) TO '{tmp_path}/:memory:.wal'",
                "ATTACH ':memory:.wal' AS y", f"COPY (SELECT 1) TO '{tmp_path}/:memory:'"):
        with pytest.raises(UsageError):
            run_query(store, sql)
    assert list(tmp_path.iterdir()) == []


def test_the_lock_down_cannot_be_undone(store):
    for sql in ("SET disabled_filesystems = ''", "SET enable_external_access = true",
                "SET temp_directory = '/tmp'", "SET memory_limit = '100GB'", "SET allowed_directories = ['/']",
                "RESET disabled_filesystems", "LOAD httpfs"):
        with pytest.raises(UsageError):
            run_query(store, sql)


def test_nothing_a_query_creates_outlives_it(store):
    n = len(store.slices)
    for sql in ("CREATE MACRO count_star() AS 42", "CREATE TABLE keep AS SELECT 1 AS a",
                "CREATE SCHEMA mine", "CREATE SEQUENCE seq",
                "ATTACH ':memory:' AS other", "CREATE MACRO lower(x) AS 'shadowed'",
                "CREATE VIEW slice2 AS SELECT 1"):
        run_query(store, sql)
    assert run_query(store, "SELECT count(*) FROM slice").rows == [[n]]
    assert run_query(store, "SELECT lower('A')").rows == [["a"]]
    for sql in ("SELECT * FROM keep", "DETACH other", "SELECT nextval('seq')", "SELECT * FROM slice2"):
        with pytest.raises(UsageError):
            run_query(store, sql)
    run_query(store, "CREATE SCHEMA mine")  # not "already exists"


def test_memory_is_limited_and_running_out_is_one_line(store, monkeypatch):
    assert run_query(store, "SELECT current_setting('memory_limit')").rows[0][0] != ""
    assert engine.memory_limit() <= engine.MEMORY_CAP
    monkeypatch.setattr(engine, "MEMORY_CAP", 64 << 20)
    assert engine.memory_limit() == 64 << 20
    with pytest.raises(UsageError, match="memory limit") as err:
        run_query(store, "SELECT count(*) FROM (SELECT DISTINCT i::VARCHAR || repeat('x', 40) FROM range(4000000) t(i))")
    assert "\n" not in str(err.value)


def test_rows_are_bounded_in_bytes_as_well(store):
    got = run_query(store, "SELECT i, repeat('x', 10000) AS s FROM range(2000) t(i)", max_bytes=100_000)
    assert got.truncated and 5 <= got.row_count <= 11
    assert [r[0] for r in got.rows] == list(range(got.row_count))
    whole = run_query(store, "SELECT i, repeat('x', 10) AS s FROM range(2000) t(i)", max_bytes=100_000)
    assert not whole.truncated and whole.row_count == 2000


def test_the_time_limit_covers_fetching_and_converting(store, monkeypatch):
    clock = iter(range(0, 10**9, 100))  # every look at the clock is 100 s later
    monkeypatch.setattr(engine.time, "monotonic", lambda: next(clock))
    with pytest.raises(UsageError, match="ran past 1000 s"):
        run_query(store, "SELECT i FROM range(100000) t(i)", time_limit=1000, max_rows=None)


def test_an_agents_query_leaves_nothing_for_the_next(tmp_path):
    pytest.importorskip("mcp")
    from vtui import mcp as vmcp

    path = write_trace(tmp_path, [X("a", 0, 10), X("b", 20, 5), X("c", 30, 5)])
    tools = {s.name: s.fn for s in vmcp.tool_specs(vmcp.StoreCache())}
    tools["query"](str(path), "CREATE MACRO count_star() AS 42")
    assert '"rows":[[3]]' in tools["query"](str(path), "SELECT count(*) AS n FROM slice")

