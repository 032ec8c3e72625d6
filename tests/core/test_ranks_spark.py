"""`vtui ranks --engine spark` (Spark in local[2]): the same report as the Python and DuckDB engines
on the synthetic rank folders and the HTA traces, the per-rank conversion done as Spark tasks, and
`vtui export-ranks` read back by both SQL engines. One SparkSession for the module (its start-up is
the slow part)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from tests.core.test_ranks import _folder, check
from tests.helpers import FIXTURES
from vtui.cli import main

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")
from vtui.query.ranks import PARQUET, run_sql, sql_text, statements  # noqa: E402
from vtui.query.ranks_spark import run_ranks_spark, session, spark_statements  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    if shutil.which("java") is None:
        pytest.skip("no `java` on PATH: Spark needs Java 17+")
    s = session("local[2]")
    yield s
    s.stop()


def _hta(tmp_path: Path) -> Path:
    folder = tmp_path / "sampled"
    folder.mkdir()
    for r in (0, 1):
        name = f"hta__sampled_rank-{r}.json.gz"
        (folder / name).write_bytes((FIXTURES / "ranks" / name).read_bytes())
    return folder


# Every folder of tests/core/test_ranks.py (there checked against plain Python over the raw JSON).
FOLDERS = {
    "straggler": lambda p: (_folder(p), "epoch"),
    "skewed clocks": lambda p: (_folder(p, clocks={1: 70_000, 3: -4_000}), "collective"),
    "kineto base times": lambda p: (_folder(p, bases=[1_700_000_000_000_000_000 + k * 3_000_000 for k in range(4)]), "epoch"),
    "missing rank": lambda p: (_folder(p, drop=(1,)), "epoch"),
    "file names": lambda p: (_folder(p, names=["job_dp0_pp0_tp0_dcp0_ep0_rank0.1.pt.trace.json", "worker-rank-1.1700.pt.trace.json",
                                               "rank-2.Jul_15_10_52_41.1074.pt.trace.json", "host_rank3.json"],
                                     dist=False, flows=False), "epoch"),
    "no rank named": lambda p: (_folder(p, names=["a.json", "b.json", "c.json", "d.json"], dist=False), "epoch"),
    "no steps or collectives": lambda p: (FIXTURES / "kineto__before_fix_trace.json", "epoch"),
    "hta epoch": lambda p: (_hta(p), "epoch"),
    "hta collective": lambda p: (_hta(p), "collective"),
}


def test_spark_statements_are_ranks_sql_with_two_substitutions(tmp_path):
    """The Spark form of ranks.sql: the same blocks less the Parquet views, the per-rank blocks over
    all ranks at once — and that form, run on DuckDB, gives the rank-by-rank exposed communication."""
    blocks = statements(sql_text())
    spark_blocks = spark_statements(sql_text())
    assert [n for k, n, _ in blocks if not (k == "view" and n in PARQUET)] == [n for _k, n, _ in spark_blocks]
    assert all("{rank_" not in sql and "read_parquet" not in sql for _k, _n, sql in spark_blocks)
    assert {k for k, _n, _s in spark_blocks} == {"view", "name"}
    import duckdb

    from vtui.query.rank_export import export_rank, rank_files

    folder = _folder(tmp_path)
    folders = [export_rank(f, pos, tmp_path / "out") for pos, f in rank_files(folder)]
    con = duckdb.connect()
    for n in PARQUET:
        con.execute(f"CREATE VIEW {n} AS SELECT * FROM read_parquet({[str(f / (n + '.parquet')) for f in folders]})")
    subs = {"rank": "named_rank", "align": "epoch", "step_key": "name"}
    exposed = None
    for kind, name, sql in spark_blocks:
        for key, value in subs.items():
            sql = sql.replace("{" + key + "}", value)
        if kind == "view":
            con.execute(sql)
        elif name == "exposed":
            exposed = con.execute(sql).fetchall()
    per_rank = run_sql(folders)
    assert [(e.rank, e.comm_ns, e.overlapped_ns) for e in per_rank.exposed] == exposed
    assert exposed and all(comm > over > 0 for _r, comm, over in exposed)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(FOLDERS))
def test_spark_gives_the_python_engines_report(spark, tmp_path, case):
    path, align = FOLDERS[case](tmp_path)
    want = check(path, align)  # the Python engine, equal to DuckDB's and to the raw-JSON reference
    got = msgspec.to_builtins(run_ranks_spark(path, align, spark=spark, parquet_dir=tmp_path / "pq"))
    assert got == want
    assert len(list((tmp_path / "pq").glob("rank-file-*/comp.parquet"))) == len(want["ranks"])  # written by the tasks


@pytest.mark.slow
def test_export_ranks_then_each_sql_engine_on_the_cli(spark, tmp_path, capsys):
    folder = _folder(tmp_path)
    assert main(["ranks", str(folder), "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    assert main(["export-ranks", str(folder), "--count"]) == 0
    count = int(capsys.readouterr().out)
    out = tmp_path / "export"
    for i in range(count):  # what one Slurm array task runs
        assert main(["export-ranks", str(folder), "-o", str(out), "--index", str(i), "--no-cache"]) == 0
    capsys.readouterr()
    for engine in ("duckdb", "spark"):
        assert main(["ranks", str(out), "--json", "--engine", engine]) == 0
        got = json.loads(capsys.readouterr().out)
        assert got["engine"] == engine and got["exposed"] and got["straggler"]["rank"] == 2
        assert {k: v for k, v in got.items() if k not in ("engine", "trace")} == \
            {k: v for k, v in want.items() if k not in ("engine", "trace")}
    assert main(["ranks", str(folder), "--json", "--engine", "spark", "--master", "local[2]"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in got.items() if k != "engine"} == {k: v for k, v in want.items() if k != "engine"}


def test_cli_errors_are_one_line(tmp_path, capsys):
    folder = _folder(tmp_path)
    assert main(["ranks", str(folder), "--engine", "spark", "--master", "spark://nowhere:7077"]) != 0
    assert "--parquet-dir" in capsys.readouterr().err
    assert main(["export-ranks", str(folder), "-o", str(tmp_path / "o"), "--index", "4"]) != 0
    assert "numbered 0 to 3" in capsys.readouterr().err
    assert main(["export-ranks", str(folder), "-o", str(tmp_path / "o"), "--index", "1"]) == 0
    capsys.readouterr()
    assert main(["ranks", str(tmp_path / "o"), "--json"]) != 0
    err = capsys.readouterr().err
    assert "--engine duckdb or spark" in err and "Traceback" not in err


def test_spark_engine_without_pyspark_or_java_is_one_line(tmp_path, capsys, monkeypatch):
    import importlib
    import sys

    folder = _folder(tmp_path)
    real = importlib.import_module("pyspark.sql")
    monkeypatch.setitem(sys.modules, "pyspark.sql", None)  # import pyspark.sql now raises ImportError
    assert main(["ranks", str(folder), "--engine", "spark"]) != 0
    err = capsys.readouterr().err
    assert "pip install 'vtui[spark]'" in err and len(err.splitlines()) == 1
    monkeypatch.setitem(sys.modules, "pyspark.sql", real)
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert main(["ranks", str(folder), "--engine", "spark"]) != 0
    err = capsys.readouterr().err
    assert "needs Java 17" in err and len(err.splitlines()) == 1
