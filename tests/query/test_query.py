"""`vtui query` / vtui.query: Perfetto's tables over the store, checked against vtui's own
figures (`vtui stats --by name`) and against plain Python over the raw JSON."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import FIXTURES, X, cli_json, norm, raw_events, write_trace
from vtui.cli import main
from vtui.errors import UsageError
from vtui.load.trace import load_trace
from vtui.query.perfetto_stack import SLICE_PHASES

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

from vtui.query.engine import QueryResult, run_query  # noqa: E402

GROUP_BY = "SELECT name, COUNT(*) n, SUM(dur) total FROM slice GROUP BY name"
PYTHON_THREADS = ("SELECT COUNT(*) FROM slice JOIN thread_track ON slice.track_id = thread_track.id "
                  "JOIN thread USING (utid) WHERE thread.name LIKE '%python%'")
TRACES = sorted(p for p in FIXTURES.iterdir() if not p.name.endswith(".md"))
JSON_TRACES = [p for p in TRACES if ".json" in p.name]


@pytest.fixture(scope="module")
def stores():
    return {p.name: load_trace(p, cache=False) for p in TRACES}


# The CLI itself on three kinds of input (a folder of ranks, an nsys export, a JSON trace); the
# function `vtui stats` prints (`aggregate` over the whole trace) on every fixture.
CLI_TRACES = {"ranks", "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite", "hf_llama_stack.json.gz"}


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_group_by_name_equals_vtui_stats(path: Path, stores, capsys):
    from vtui.analysis.slices.aggregate import aggregate

    store = stores[path.name]
    if path.name in CLI_TRACES:
        rows = cli_json(capsys, "stats", path, "--by", "name", "--format", "json", "--no-cache")
        want = {r["name"]: (r["count"], r["total_ns"]) for r in rows["rows"]}
    else:
        want = {r.key: (r.count, r.total_ns) for r in aggregate(store, by="name").rows}
    assert sum(c for c, _ in want.values()) == len(store.slices) > 0
    # and the instants, slices of dur 0 as Perfetto files them
    i = store.instants
    for name_id in i.name_id[np.isin(i.ph, SLICE_PHASES)].tolist():
        count, total = want.get(store.strings[name_id], (0, 0))
        want[store.strings[name_id]] = (count + 1, total)
    got = run_query(store, GROUP_BY, max_rows=None)
    assert {name: (n, total) for name, n, total in got.rows} == want


def _raw_python_thread_slices(path: Path) -> int:
    """X and B events, and thread-scoped instants, on threads whose thread_name holds 'python' (per
    file of a folder)."""
    files = sorted(f for f in path.iterdir() if f.is_file()) if path.is_dir() else [path]
    count = 0
    for f in files:
        events = raw_events(f)
        names = {(norm(e.get("pid")), norm(e.get("tid"))): e.get("args", {}).get("name", "")
                 for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
        on_thread = [e for e in events if e.get("ph") in ("X", "B") or e.get("ph") in ("i", "I", "R") and e.get("s") not in ("p", "g")]
        count += sum(1 for e in on_thread if "python" in str(names.get((norm(e.get("pid")), norm(e.get("tid"))), "")))
    return count


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_python_thread_join_counts_their_slices(path: Path, stores):
    store = stores[path.name]
    got = run_query(store, PYTHON_THREADS).rows[0][0]
    on_python = np.array([t.kind in ("thread", "gpu") and "python" in t.name for t in store.tracks])
    i = store.instants
    instants = int(on_python[i.track[np.isin(i.ph, SLICE_PHASES)]].sum())
    assert got == int(on_python[store.slices.track].sum()) + instants  # the store's own count
    if ".json" in path.name or path.is_dir():
        assert got == _raw_python_thread_slices(path)  # and the raw file's


def test_some_fixture_has_python_threads(stores):
    counts = [run_query(s, PYTHON_THREADS).rows[0][0] for s in stores.values()]
    assert sum(c > 0 for c in counts) >= 4  # the join is not vacuous


SCHEMA = {
    "slice": ["id", "ts", "dur", "name", "category", "depth", "parent_id", "track_id", "arg_set_id"],
    "thread_track": ["id", "utid", "name", "type"],
    "thread": ["utid", "tid", "name", "upid", "is_main_thread", "start_ts", "end_ts"],
    "process": ["upid", "pid", "name", "label", "start_ts", "end_ts"],
    "track": ["id", "name", "type", "upid", "utid", "label"],
    "counter": ["id", "ts", "track_id", "value"],
    "counter_track": ["id", "name", "upid"],
    "flow": ["id", "slice_out", "slice_in", "name", "category"],
    "args": ["id", "arg_set_id", "flat_key", "key", "int_value", "string_value", "real_value", "value_type",
             "display_value"],
    "instant": ["id", "ts", "name", "category", "track_id"],
    "kernel": ["id", "ts", "dur", "name", "category", "kind", "track_id"],
    "launch": ["slice_id", "kernel_id", "name", "kernel_name", "ts", "kernel_ts", "kernel_dur", "delay", "delay_from_end"],
    "step": ["step", "id", "ts", "dur", "cpu_dur", "name", "pattern"],
    "finding": ["kind", "severity", "message", "hint"],
    "op": ["name", "count", "self", "total", "self_pct", "total_pct"],
    "gpu_busy": ["kind", "label", "busy", "busy_pct", "kernel", "active", "busy_pct_of_active"],
    "trace_bounds": ["start_ts", "end_ts"],
}


@pytest.mark.parametrize("table", sorted(SCHEMA))
def test_schema_columns(table, stores):
    # (args are decoded for the whole store when named: the small trace for that one)
    store = stores["kineto__before_fix_trace.json" if table == "args" else "kineto__worker0_first_step.json.gz"]
    assert run_query(store, f"SELECT * FROM {table} LIMIT 0").columns == SCHEMA[table]
    if table not in ("args", "trace_bounds"):
        ranks = stores["ranks"]  # a folder of ranks: the same columns and a rank
        extra = [] if table in ("finding", "op", "gpu_busy") else ["rank"]
        assert run_query(ranks, f"SELECT * FROM {table} LIMIT 0").columns == SCHEMA[table] + extra


def test_rank_column_counts_each_files_slices(stores):
    store = stores["ranks"]
    got = dict(run_query(store, "SELECT rank, COUNT(*) FROM slice GROUP BY rank").rows)
    from vtui.export.parquet import rank_of

    want = Counter(rank_of(store, int(s)) for s in store.slices.source.tolist())
    assert got == dict(want) and len(got) == 2


def test_slice_columns_equal_the_raw_events(tmp_path):
    events = [X("outer", 10, 100, tid=7), X("inner", 20, 30, tid=7, k=1), X("gpu", 50, 5, cat="kernel", pid=2, tid=9),
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "python main"}},
              {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "proc"}}]
    store = load_trace(write_trace(tmp_path, events), cache=False)
    got = run_query(store, "SELECT s.name, s.ts, s.dur, s.depth, p.name AS parent, t.name AS thread, t.tid, pr.pid, "
                           "pr.name AS process FROM slice s LEFT JOIN slice p ON s.parent_id = p.id "
                           "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) "
                           "JOIN process pr USING (upid) ORDER BY s.ts").rows
    assert got == [["outer", 0, 100_000, 0, None, "python main", 7, 1, "proc"],
                   ["inner", 10_000, 30_000, 1, "outer", "python main", 7, 1, "proc"],
                   ["gpu", 40_000, 5_000, 0, None, got[2][5], 9, 2, None]]


def test_args_table_flattens_like_perfetto(tmp_path):
    events = [X("a", 0, 10, n=3, s="x", f=1.5, b=True, z=None, nested={"k": [7, "y"]}), X("none", 20, 1)]
    events[1]["args"] = {}
    store = load_trace(write_trace(tmp_path, events), cache=False)
    got = run_query(store, "SELECT s.name, key, flat_key, int_value, string_value, real_value, value_type "
                           "FROM slice s JOIN args USING (arg_set_id) ORDER BY key").rows
    assert got == [["a", "args.b", "args.b", 1, None, None, "bool"],
                   ["a", "args.f", "args.f", None, None, 1.5, "real"],
                   ["a", "args.n", "args.n", 3, None, None, "int"],
                   ["a", "args.nested.k[0]", "args.nested.k", 7, None, None, "int"],
                   ["a", "args.nested.k[1]", "args.nested.k", None, "y", None, "string"],
                   ["a", "args.s", "args.s", None, "x", None, "string"],
                   ["a", "args.z", "args.z", None, None, None, "null"]]


def test_extract_arg_and_arg_json_read_one_slices_args(tmp_path):
    events = [X("a", 0, 10, n=3, s="x", nested={"k": [7, "y"]}), X("b", 20, 1, n=4)]
    store = load_trace(write_trace(tmp_path, events), cache=False)
    got = run_query(store, "SELECT name, extract_arg(arg_set_id, 'args.n')::BIGINT, extract_arg(arg_set_id, 'args.s'), "
                           "extract_arg(arg_set_id, 'args.nested.k[1]') FROM slice ORDER BY ts").rows
    assert got == [["a", 3, "x", "y"], ["b", 4, None, None]]
    texts = run_query(store, "SELECT s.name, j.json FROM slice s JOIN arg_json j USING (arg_set_id) ORDER BY s.ts").rows
    assert [(n, json.loads(t)) for n, t in texts] == [(e["name"], e["args"]) for e in events]


def test_args_count_per_key_equals_the_raw_json():
    path = FIXTURES / "kineto__worker0_first_step.json.gz"
    store = load_trace(path, cache=False)
    got = dict(run_query(store, "SELECT key, COUNT(*) FROM args WHERE key IN ('args.External id', 'args.correlation') "
                                "GROUP BY key").rows)
    raw = [e for e in raw_events(path) if e.get("ph") == "X"]
    assert got == {k: n for k in ("args.External id", "args.correlation")
                   if (n := sum(1 for e in raw if k[5:] in e.get("args", {})))}
    assert got["args.correlation"] > 100
    same = run_query(store, "SELECT COUNT(extract_arg(arg_set_id, 'args.correlation')) FROM slice").rows[0][0]
    assert same == got["args.correlation"]


def test_kernel_launch_and_step_views_equal_insights():
    from vtui.analysis.gpu.activity import analyse_gpu
    from vtui.analysis.steps.detect import analyse_steps

    store = load_trace(FIXTURES / "kineto__worker0_first_step.json.gz", cache=False)
    gpu = analyse_gpu(store)
    n, mean = run_query(store, "SELECT COUNT(*), AVG(delay) FROM launch").rows[0]
    assert n == gpu.launches_paired > 0 and mean == pytest.approx(gpu.launch.mean)
    kernel_ns = run_query(store, "SELECT SUM(dur) FROM kernel WHERE kind = 'kernel'").rows[0][0]
    assert kernel_ns == gpu.kernel_ns
    steps = analyse_steps(store)
    assert run_query(store, "SELECT COUNT(*) FROM step").rows[0][0] == steps.count
    # the same step times as Insights: to the end of the GPU work, the annotation beside
    assert run_query(store, "SELECT dur, cpu_dur FROM step ORDER BY step").rows == \
        [[int(d), int(c)] for d, c in zip(steps.durations, steps.cpu_durations)]
    busy = run_query(store, "SELECT label, busy FROM gpu_busy WHERE kind = 'device'").rows
    assert busy == [[d.label, d.busy_ns] for d in gpu.devices] and busy[0][1] > 0
    from vtui.analysis.slices.operators import analyse_ops

    top = analyse_ops(store, top=5).by_self
    assert run_query(store, "SELECT name, self, count FROM op ORDER BY self DESC, name LIMIT 5").rows == \
        [[r.name, r.self_ns, r.count] for r in sorted(top, key=lambda r: (-r.self_ns, r.name))]


def test_bad_sql_is_one_line_with_duckdbs_message(capsys):
    with pytest.raises(UsageError, match="syntax error"):
        run_query(load_trace(FIXTURES / "speedscope__simple-partial-trailing-comma.json"), "SELEC 1")
    assert main(["query", str(FIXTURES / "speedscope__simple-partial-trailing-comma.json"), "SELECT * FROM nope"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("vtui: error: ") and "nope" in err


def test_query_is_read_only():
    store = load_trace(FIXTURES / "speedscope__simple-partial-trailing-comma.json")
    for sql in ("SELECT * FROM read_csv('/etc/passwd')", "COPY slice TO '/tmp/vtui-should-not-exist.csv'",
                "SET enable_external_access = true", "INSTALL httpfs"):
        with pytest.raises(UsageError):
            run_query(store, sql)
    assert not Path("/tmp/vtui-should-not-exist.csv").exists()


def test_time_limit_stops_a_long_query():
    store = load_trace(FIXTURES / "speedscope__simple-partial-trailing-comma.json")
    started = time.monotonic()
    with pytest.raises(UsageError, match="ran past 0.2 s"):
        run_query(store, "SELECT SUM(hash(i)) FROM range(100000000000000) t(i)", time_limit=0.2)
    assert time.monotonic() - started < 15  # stopped, not run to the end (hours)
    assert run_query(store, "SELECT 1").rows == [[1]]  # the next query runs


def test_max_rows_truncates_and_says_so():
    store = load_trace(FIXTURES / "hf_llama_stack.json.gz")
    got = run_query(store, "SELECT id FROM slice ORDER BY id", max_rows=5)
    assert got.rows == [[i] for i in range(5)] and got.truncated and got.row_count == 5
    assert not run_query(store, "SELECT id FROM slice LIMIT 5", max_rows=5).truncated


def test_trace_text_is_escaped_in_text_and_kept_in_json(tmp_path, capsys):
    evil = "kern\x1b]0;pwned\x07\x9b31m"
    path = write_trace(tmp_path, [X(evil, 0, 10), X("ok", 20, 5)])
    for fmt in ("table", "md", "csv"):
        assert main(["query", str(path), "SELECT name FROM slice ORDER BY ts", "--format", fmt, "--no-cache"]) == 0
        out = capsys.readouterr().out
        if fmt != "csv":
            assert "\x1b" not in out and "\x9b" not in out and "\\x1b]0;pwned\\x07" in out
    assert main(["query", str(path), "SELECT name FROM slice ORDER BY ts", "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0] == [evil]  # lossless (stdout is not a terminal)


def test_result_is_a_struct_and_cli_json_is_its_fields(capsys):
    path = FIXTURES / "kineto__before_fix_trace.json"
    doc = cli_json(capsys, "query", path, "SELECT COUNT(*) AS n FROM slice WHERE dur > 0", "--format", "json")
    store = load_trace(path)
    assert doc == {"schema_version": 1, "columns": ["n"], "types": ["BIGINT"], "rows": [[int((store.slices.dur_ns > 0).sum())]],
                   "row_count": 1, "truncated": False}
    assert set(QueryResult.__struct_fields__) | {"schema_version"} == set(doc)


def test_a_missing_extra_is_one_line(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb now raises ImportError
    assert main(["query", str(FIXTURES / "kineto__before_fix_trace.json"), "SELECT 1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'vtui[sql]'" in err
    monkeypatch.setitem(sys.modules, "mcp", None)
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)
    monkeypatch.setitem(sys.modules, "mcp.server.fastmcp", None)
    assert main(["mcp"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'vtui[mcp]'" in err


# ---- a folder of vtui's Parquet export: the same tables, the same figures ----------------------------
@pytest.fixture(scope="module")
def parquet_folders(tmp_path_factory, stores):
    """The ranks fixture exported at once, and each rank exported alone into one folder."""
    from vtui.export.parquet import write_parquet

    together = tmp_path_factory.mktemp("pq-together")
    write_parquet(stores["ranks"], together)
    apart = tmp_path_factory.mktemp("pq-apart")
    for f in sorted((FIXTURES / "ranks").glob("*.json.gz")):
        write_parquet(load_trace(f, cache=False), apart)
    return together, apart


def test_parquet_folder_gives_the_stores_figures(parquet_folders, stores):
    from vtui.query.parquet import ParquetSource

    store = stores["ranks"]
    by_rank = "SELECT rank, name, COUNT(*), SUM(dur) FROM slice GROUP BY ALL ORDER BY ALL"
    want = run_query(store, by_rank, max_rows=None).rows
    for folder in parquet_folders:
        pq = ParquetSource(folder)
        assert run_query(pq, by_rank, max_rows=None).rows == want
        assert run_query(pq, PYTHON_THREADS).rows == run_query(store, PYTHON_THREADS).rows
        assert run_query(pq, "SELECT COUNT(DISTINCT id), COUNT(*) FROM slice").rows == [[len(store.slices)] * 2]
        bad = "SELECT COUNT(*) FROM slice s JOIN slice p ON s.parent_id = p.id WHERE s.rank <> p.rank OR s.track_id <> p.track_id"
        assert run_query(pq, bad).rows == [[0]]
        assert run_query(pq, "SELECT COUNT(parent_id) FROM slice").rows == [[int((store.slices.parent >= 0).sum())]]
        kinds = "SELECT rank, kind, COUNT(*), SUM(dur) FROM kernel GROUP BY ALL ORDER BY ALL"
        assert run_query(pq, kinds).rows == run_query(store, kinds).rows
        for table in ("slice", "thread_track", "thread", "process", "track", "counter", "counter_track", "flow",
                      "instant", "kernel", "args"):
            extra = [] if table == "args" else ["rank"]
            cols = [c for c in SCHEMA[table] if c not in ("id", "display_value")] if table == "args" else SCHEMA[table]
            assert run_query(pq, f"SELECT * FROM {table} LIMIT 0").columns == cols + extra, table  # (export: no args.id)
        with pytest.raises(UsageError, match="needs the trace itself"):
            run_query(pq, "SELECT * FROM step")


def test_cli_reads_a_parquet_folder(parquet_folders, capsys):
    together, _ = parquet_folders
    doc = cli_json(capsys, "query", together, "SELECT rank, COUNT(*) n FROM slice GROUP BY rank ORDER BY rank",
                   "--format", "json")
    per_file = [len([e for e in raw_events(f) if e.get("ph") == "X"]) for f in sorted((FIXTURES / "ranks").glob("*.json.gz"))]
    assert doc["rows"] == [[0, per_file[0]], [1, per_file[1]]]  # the rank files hold X events only


@pytest.mark.parametrize("name", ["public/viztracer__multi_process_pool.json", "public/tracelens__vllm_decode_full_graph_execution.json.gz"])
def test_group_by_on_shared_traces(shared_traces, name):
    from vtui.analysis.slices.aggregate import aggregate

    store = load_trace(shared_traces / name)
    agg = aggregate(store)  # what `vtui stats --by name` prints
    got = run_query(store, GROUP_BY, max_rows=None).rows
    assert {n: (c, t) for n, c, t in got} == {r.key: (r.count, r.total_ns) for r in agg.rows}
    on_python = np.array([t.kind in ("thread", "gpu") and "python" in t.name for t in store.tracks])
    assert run_query(store, PYTHON_THREADS).rows[0][0] == int(on_python[store.slices.track].sum())


def test_slice_columns_are_handed_over_without_a_copy(stores):
    from vtui.query.tables import slice_table

    store = stores["hf_llama_stack.json.gz"]
    table = slice_table(store)
    s = store.slices
    for column, array in (("ts", s.start_ns), ("dur", s.dur_ns), ("track_id", s.track)):
        chunk = table.column(column).chunks[0]
        assert chunk.buffers()[1].address == array.ctypes.data, column  # the store's own memory
    # parent and depth: the store's, but where Perfetto's stack puts a zero-length slice elsewhere
    n, long = len(s), s.dur_ns > 0
    parent = table.column("parent_id").to_numpy(zero_copy_only=False)[:n]
    assert np.array_equal(np.nan_to_num(parent, nan=-1).astype(np.int64)[long], s.parent[long])
    assert np.array_equal(table.column("depth").to_numpy()[:n][long], s.depth[long])
    names = table.column("name").chunks[0]
    assert names.indices.buffers()[1].address == s.name_id.ctypes.data
