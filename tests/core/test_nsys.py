"""Nsight Systems SQLite exports: the figures vtui computes equal the same figures computed by SQL
on the file (kernels per name, memcpy per direction, runtime calls, launch pairs, busy time per
device, NVTX nesting), across schema versions; bad files give one line and exit 1."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from benchmarks.nsys_synth import write_nsys_export
from tests.helpers import FIXTURES, ROOT, SHARED_TRACES, raw_events, union_length
from vtui.analysis.gpu.activity import analyse_gpu, gpu_work_kinds, launch_pairs
from vtui.cli import main
from vtui.errors import TraceLoadError
from vtui.load.trace import load_trace
from vtui.store import cache as trace_cache
from vtui.ui.app import VtuiApp
from vtui.ui.widgets.details import DetailsPanel

NAME = "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
# The shared copy is the original; the fixture is the same export with sampling rows removed.
REAL = SHARED_TRACES / "public" / NAME if (SHARED_TRACES / "public" / NAME).is_file() else FIXTURES / NAME
DIRECTION = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


# ---- the independent path: SQL on the file --------------------------------------------------
def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


class SqlFigures:
    def __init__(self, path: Path) -> None:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = _tables(con)
        self.kernels = {name: (count, total) for name, count, total in con.execute(
            "SELECT s.value, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value")}
        self.memcpy_ns: dict[str, int] = defaultdict(int)
        self.memcpy_bytes: dict[str, int] = defaultdict(int)
        for kind, ns, nbytes in con.execute("SELECT copyKind, sum(end - start), sum(bytes) "
                                            "FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind"):
            self.memcpy_ns[DIRECTION[kind]] += ns
            self.memcpy_bytes[DIRECTION[kind]] += nbytes
        rt_cols = _columns(con, "CUPTI_ACTIVITY_KIND_RUNTIME")
        name_col = "nameId" if "nameId" in rt_cols else "name"
        self.runtime: Counter = Counter()
        for name, count in con.execute(f"SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                                       f"JOIN StringIds s ON s.id = r.{name_col} GROUP BY s.value"):
            self.runtime[re.sub(r"_v\d+$", "", name)] += count
        present = [t for t in GPU_TABLES if t in tables]
        with_pid = all("globalPid" in _columns(con, t) for t in present)
        union = " UNION ALL ".join(f"SELECT start, end, deviceId, correlationId, "
                                   f"{'globalPid' if with_pid else '0'} AS gpid FROM {t}" for t in present)
        pid_join = "AND (g.gpid >> 24) = (r.globalTid >> 24)" if with_pid else ""
        # A call recorded twice under one id (a wrapper around the CUPTI record): the innermost launches.
        self.launches = set(con.execute(f"SELECT max(r.start), g.start FROM ({union}) g JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                                        f"ON r.correlationId = g.correlationId {pid_join} GROUP BY g.rowid, g.start"))
        self.gpu_ops = con.execute(f"SELECT count(*) FROM ({union})").fetchone()[0]
        by_dev: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for start, end, dev, _corr, _pid in con.execute(union):
            by_dev[dev].append((start, end))
        self.busy = {dev: union_length(spans) for dev, spans in by_dev.items()}
        # NVTX rows of other types name domains and threads: definitions, not events.
        sources = [f"SELECT min(start) FROM {t}" for t in [*present, "CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API",
                                                           "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"] if t in tables]
        sources.append("SELECT min(start) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)")
        self.first_start = min(r[0] for r in con.execute(" UNION ALL ".join(sources)) if r[0] is not None)
        con.close()


def _memcpy_bytes(store) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for r in np.flatnonzero(gpu_work_kinds(store) > 0).tolist():
        if store.strings[int(store.slices.cat_id[r])] == "gpu_memcpy":
            out[store.name(r).split()[1]] += store.slice_args(r)["bytes"]
    return out


def check_figures(path: Path) -> None:
    """vtui's figures on ``path`` equal the SQL ones."""
    sql = SqlFigures(path)
    store = load_trace(path, cache=False)
    gpu = analyse_gpu(store, top=10**6)
    assert {k.name: (k.count, k.total_ns) for k in gpu.top_kernels} == sql.kernels
    assert gpu.memcpy_by_direction == dict(sql.memcpy_ns)
    assert gpu.memcpy_bytes_by_direction == _memcpy_bytes(store) == dict(sql.memcpy_bytes)
    cats = np.array(store.strings, dtype=object)[store.slices.cat_id]
    runtime = Counter(store.name(r) for r in np.flatnonzero(cats == "cuda_runtime").tolist())
    assert runtime == sql.runtime
    # Launch pairs, in the file's own ns clock.
    origin = round(store.origin_us * 1000)
    assert origin == sql.first_start
    rows = np.flatnonzero(gpu_work_kinds(store) > 0)
    launch = launch_pairs(store, rows)
    assert len(rows) == sql.gpu_ops
    ok = launch >= 0
    pairs = set(zip((store.slices.start_ns[launch[ok]] + origin).tolist(), (store.slices.start_ns[rows[ok]] + origin).tolist()))
    assert pairs == sql.launches and gpu.launches_paired == len(sql.launches)
    # Busy per device = the union of kernel + memcpy + memset intervals.
    busy = {int(d.label.split()[1]): d.busy_ns for d in gpu.devices}
    assert busy == sql.busy


# ---- figures on real and synthetic exports of several schema versions ------------------------------
def test_real_export_figures_equal_sql():
    check_figures(REAL)


def test_fixture_copy_reads_like_the_original(shared_traces):
    original = shared_traces / "public" / NAME
    a, b = load_trace(original, cache=False), load_trace(FIXTURES / NAME, cache=False)
    assert np.array_equal(a.slices.start_ns, b.slices.start_ns) and a.strings == b.strings


@pytest.mark.parametrize("schema", ["2022", "2024", "old"])
def test_synthetic_export_figures_equal_sql(tmp_path, schema):
    path = tmp_path / f"export-{schema}.sqlite"
    write_nsys_export(path, 600, schema)
    check_figures(path)


def test_schema_versions_give_the_same_store(tmp_path):
    stores = []
    for schema in ("2022", "2024", "old"):
        write_nsys_export(tmp_path / f"{schema}.sqlite", 300, schema)
        stores.append(load_trace(tmp_path / f"{schema}.sqlite", cache=False))
    first = stores[0]
    for other in stores[1:]:
        assert np.array_equal(first.slices.start_ns, other.slices.start_ns)
        assert np.array_equal(first.slices.end_ns, other.slices.end_ns)
        assert [first.name(r) for r in range(len(first.slices))] == [other.name(r) for r in range(len(other.slices))]
        assert [t.label for t in first.tracks] == [t.label for t in other.tracks]
        assert len(first.flows) == len(other.flows)
    assert stores[1].sources[0].metadata["nsys"]["EXPORT_PRODUCT_VERSION"] == "2024.5.1.113"  # META_DATA_EXPORT


def test_names_threads_and_devices():
    store = load_trace(REAL, cache=False)
    labels = [t.label for t in store.tracks]
    assert any("MPI Rank 0" in label and "./saxpy-mpi-cuda" in label for label in labels)  # nvtxNameOsThread
    gpu = [t for t in store.tracks if t.kind == "gpu"]
    assert [t.label for t in gpu] == ["GPU 0 (NVIDIA A100-SXM4-40GB) / stream 7"]
    meta = store.sources[0].metadata
    assert meta["nsys"]["EXPORT_PRODUCT_VERSION"] == "2022.2.1.31"
    assert meta["baseTimeNanoseconds"] == 1687813257637297504
    kernel = int(np.flatnonzero(np.array(store.strings, dtype=object)[store.slices.cat_id] == "kernel")[0])
    args = store.slice_args(kernel)
    assert args["grid"] == [2, 1, 1] and args["block"] == [512, 1, 1] and args["registers per thread"] == 26
    assert args["correlation"] == 140 and args["stream"] == 7 and args["device"] == 0


def _expected_parents(spans: list[tuple[int, int, int]]) -> dict[int, int]:
    """Containment rule, by brute force: a slice's parent is the shortest other slice on its
    thread containing it (ties: the one that starts first, then the earlier row)."""
    out = {}
    for i, s, e in spans:
        best = None
        for j, s2, e2 in spans:
            if j != i and s2 <= s and e <= e2 and (s2, -e2, j) < (s, -e, i):
                if best is None or (e2 - s2, -s2) < (best[2] - best[1], -best[1]):
                    best = (j, s2, e2)
        out[i] = -1 if best is None else best[0]
    return out


@pytest.mark.parametrize("which", ["real", "synthetic"])
def test_nvtx_ranges_nest_by_containment(tmp_path, which):
    path = REAL if which == "real" else tmp_path / "n.sqlite"
    if which == "synthetic":
        write_nsys_export(path, 200, "2024", steps_every=40)
    store = load_trace(path, cache=False)
    s = store.slices
    cpu = [t.id for t in store.tracks if t.kind == "thread" and t.slice_count > 10]
    assert cpu
    for track in cpu:
        rows = np.flatnonzero(s.track == track).tolist()
        spans = [(r, int(s.start_ns[r]), int(s.end_ns[r])) for r in rows]
        expected = _expected_parents(spans)
        assert {r: int(s.parent[r]) for r in rows} == expected
    nvtx = [r for r in range(len(s)) if store.strings[int(s.cat_id[r])] == "nvtx"]
    assert nvtx
    if which == "synthetic":  # "forward" (start/end) sits inside its "step N" (push/pop)
        forward = [r for r in nvtx if store.name(r) == "forward"]
        assert forward and all(store.name(int(s.parent[r])).startswith("step ") for r in forward)
        marks = store.instants
        assert len(marks) == 5 and {store.strings[int(n)] for n in marks.name_id} == {"mark"}


# ---- damage and drift ------------------------------------------------------------------------
def _make(path: Path, sql: str) -> Path:
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.commit()
    con.close()
    return path


def _cli_error(path: Path) -> str:
    result = subprocess.run([sys.executable, "-m", "vtui", "info", "--no-cache", str(path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stderr.count("\n") <= 1
    return result.stderr


def test_missing_tables_null_names_and_kernels_without_a_runtime_call(tmp_path):
    path = _make(tmp_path / "partial.sqlite", """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'gemm_short');
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT,
            correlationId INT, shortName INT, demangledName INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 7, 1, 2, 1), (300, 450, 0, 7, 2, 2, NULL),
            (500, 600, 0, 7, 3, NULL, NULL), (700, 800, 0, 7, 4, 99, 99), (900, NULL, 0, 7, 5, 2, 1);
    """)
    store = load_trace(path, cache=False)
    names = [store.name(r) for r in range(len(store.slices))]
    assert names == ["gemm", "gemm_short", "", ""]  # demangled, else short; NULL / unknown ids: no name
    text = " | ".join(store.warnings)
    assert "without 6 table(s)" in text and "CUPTI_ACTIVITY_KIND_RUNTIME" in text
    assert "1 names pointed at no StringIds entry" in text
    assert "1 CUPTI_ACTIVITY_KIND_KERNEL rows without a start or end" in text
    assert "4 GPU activities have no runtime call" in text
    gpu = analyse_gpu(store)
    assert gpu.present and gpu.launches_paired == 0 and gpu.kernel_ns == 100 + 150 + 100 + 100


def test_renamed_and_missing_columns(tmp_path):
    # Names only by id, no correlation column on memcpy, columns in any order, an extra one.
    path = _make(tmp_path / "drift.sqlite", """
        CREATE TABLE StringIds (value TEXT, id INTEGER PRIMARY KEY);
        INSERT INTO StringIds VALUES ('k', 1), ('cudaLaunchKernel_v7000', 2);
        CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (greenContextId INT, end INT, shortName INT, start INT,
            correlationId INT, globalPid INT, streamId INT, deviceId INT, contextId INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 2000, 1, 1500, 10, 4242 << 24, 7, 0, 1);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT, deviceId INT, streamId INT, bytes INT,
            copyKind INT, globalPid INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (2100, 2300, 0, 7, 64, 1, 4242 << 24);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (globalTid INT, nameId INT, start INT, end INT, correlationId INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ((4242 << 24) | 4243, 2, 1000, 1100, 10);
    """)
    store = load_trace(path, cache=False)
    assert sorted(store.name(r) for r in range(len(store.slices))) == ["Memcpy HtoD", "cudaLaunchKernel", "k"]
    gpu = analyse_gpu(store)
    assert gpu.launches_paired == 1 and gpu.memcpy_by_direction == {"HtoD": 200}
    thread = [t for t in store.tracks if t.kind == "thread"]
    assert [(t.pid, t.tid) for t in thread] == [(4242, 4243)]
    assert "1 GPU activities have no runtime call with their correlation id" in " | ".join(store.warnings)


def test_sqlite_but_not_nsys_is_one_line(tmp_path):
    path = _make(tmp_path / "other.sqlite", "CREATE TABLE notes (a TEXT); INSERT INTO notes VALUES ('x');")
    with pytest.raises(TraceLoadError, match="not an Nsight Systems export"):
        load_trace(path, cache=False)
    assert "not an Nsight Systems export" in _cli_error(path)


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_database_is_one_line(tmp_path, damage):
    data = bytearray((FIXTURES / NAME).read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 3]
    else:  # keep the header, scramble the pages after the first
        rng = np.random.default_rng(3)
        data[4096:] = rng.integers(0, 256, size=len(data) - 4096, dtype=np.uint8).tobytes()
    path = tmp_path / "damaged.sqlite"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceLoadError):
        load_trace(path, cache=False)
    assert "damaged.sqlite" in _cli_error(path)


def test_read_only_file_is_not_touched(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / NAME
    shutil.copy(FIXTURES / NAME, path)
    before = path.read_bytes()
    path.chmod(0o444)
    folder.chmod(0o555)
    try:
        store = load_trace(path, cache=False)
        assert len(store.slices) == 137
        assert path.read_bytes() == before and sorted(p.name for p in folder.iterdir()) == [NAME]
    finally:
        folder.chmod(0o755)


# ---- integration: folders, cache, CLI --------------------------------------------------------------
def test_folder_mixing_sqlite_and_json_ranks(tmp_path):
    shutil.copy(FIXTURES / NAME, tmp_path / "rank0.sqlite")
    shutil.copy(FIXTURES / "ranks" / "hta__sampled_rank-1.json.gz", tmp_path / "rank1.json.gz")
    store = load_trace(tmp_path, cache=False)
    assert [s.form for s in store.sources][0] == "nsys-sqlite" and len(store.sources) == 2
    alone = load_trace(FIXTURES / NAME, cache=False)
    mine = [t for t in store.tracks if t.source == 0]
    assert sum(t.slice_count for t in mine) == len(alone.slices)
    assert any(t.kind == "gpu" and "A100" in t.label for t in mine)


def test_index_cache_reopens_an_export(tmp_path):
    path = tmp_path / NAME
    shutil.copy(FIXTURES / NAME, path)
    first = load_trace(path)
    key = trace_cache.entry_key([path])
    reopened = trace_cache.open_entry(key)
    assert reopened is not None
    second = load_trace(path)
    for store in (reopened, second):
        assert np.array_equal(store.slices.start_ns, first.slices.start_ns)
        assert store.strings == first.strings and len(store.flows) == len(first.flows)
        kernel = int(np.flatnonzero(np.array(store.strings, dtype=object)[store.slices.cat_id] == "kernel")[0])
        assert store.slice_args(kernel) == first.slice_args(kernel)


@pytest.mark.parametrize("argv", [["info"], ["stats"], ["insights"], ["search", "saxpy"], ["diff", "SELF"]])
def test_commands_open_an_export(capsys, argv):
    path = str(FIXTURES / NAME)
    args = [argv[0], path, *[path if a == "SELF" else a for a in argv[1:]]]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.strip()
    if argv[0] == "search":
        assert "saxpy" in out


def test_export_writes_a_chrome_trace_that_reads_back_the_same(tmp_path):
    store = load_trace(FIXTURES / NAME, cache=False)
    out = tmp_path / "out.json"
    assert main(["export", str(FIXTURES / NAME), "-o", str(out), "--no-cache"]) == 0
    back = load_trace(out, cache=False)
    assert np.array_equal(back.slices.start_ns, store.slices.start_ns)
    assert np.array_equal(back.slices.end_ns, store.slices.end_ns)
    assert [back.name(r) for r in range(len(back.slices))] == [store.name(r) for r in range(len(store.slices))]
    assert [t.label for t in back.tracks] == [t.label for t in store.tracks]
    assert np.array_equal(back.flows.src_slice, store.flows.src_slice)
    assert back.slice_args(int(back.flows.dst_slice[0])) == store.slice_args(int(store.flows.dst_slice[0]))


async def test_app_opens_an_export_and_follows_launch_flows():
    app = VtuiApp(FIXTURES / NAME)
    async with app.run_test(size=(140, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        store = app.store
        assert store is not None and store.sources[0].form == "nsys-sqlite"
        launch = next(r for r in store.flows.src_slice.tolist() if store.name(r) == "cudaLaunchKernel")
        app.view.select(launch)
        await pilot.press("right_square_bracket")
        kernel = app.view.selected
        assert store.strings[int(store.slices.cat_id[kernel])] == "kernel"
        assert store.slice_args(kernel)["correlation"] == store.slice_args(launch)["correlation"]
        assert "flow ←" in str(app.query_one(DetailsPanel).render())
        await pilot.press("left_square_bracket")
        assert app.view.selected == launch


def test_hostile_names_load_verbatim(tmp_path, capsys):
    path = _make(tmp_path / "hostile.sqlite", """
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        INSERT INTO StringIds VALUES (1, 'evil' || char(27) || '[31m[bold red]k[/]'), (2, 'w' || char(7) || 'orker');
        CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, textId INT, globalTid INT, domainId INT);
        INSERT INTO NVTX_EVENTS VALUES (10, 90, 59, '[link=file:///etc]r[/link]' || char(13) || 'ange', NULL, 77 << 24 | 77, 0);
        CREATE TABLE ThreadNames (nameId INT, globalTid INT);
        INSERT INTO ThreadNames VALUES (2, 77 << 24 | 77);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, demangledName INT);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (20, 40, 0, 7, 1);
    """)
    for argv in (["stats", str(path)], ["info", str(path)], ["search", str(path), "evil|range"]):
        assert main([*argv, "--no-cache"]) == 0
    store = load_trace(path, cache=False)
    names = sorted(store.name(r) for r in range(len(store.slices)))
    assert names == ["[link=file:///etc]r[/link]\range", "evil\x1b[31m[bold red]k[/]"]  # as written
    assert [t.name for t in store.tracks if t.kind == "thread"] == ["w\x07orker"]


def test_memcpy_bytes_per_direction_on_a_kineto_trace():
    """The same figure from a JSON trace, against plain json over the raw events."""
    path = FIXTURES / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    expected: dict[str, int] = defaultdict(int)
    for e in raw_events(path):
        if e.get("ph") == "X" and e.get("cat") == "gpu_memcpy":
            direction = re.search(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA)\b", e["name"])
            expected[direction.group(1) if direction else "other"] += e["args"]["bytes"]
    assert expected
    assert analyse_gpu(load_trace(path, cache=False)).memcpy_bytes_by_direction == dict(expected)


def test_an_nsys_report_says_how_to_export_it(tmp_path):
    path = tmp_path / "run.nsys-rep"
    path.write_bytes(b"\x00\x01binary report")
    assert "nsys export --type sqlite run.nsys-rep" in _cli_error(path)
