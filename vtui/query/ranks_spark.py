"""`vtui ranks --engine spark`: the per-rank conversion as Spark tasks, then ranks.sql on Spark SQL.

Each trace file is one task (`vtui.query.rank_export.export_rank` on an executor, so vtui must be
importable there) writing its four Parquet files under a folder the driver and every executor
see; the driver then registers the four tables over the whole set and runs the same ranks.sql
the DuckDB engine runs, with the few dialect differences below, and assembles the rows into the
same `RanksReport`.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vtui.analysis.ranks.analyse import ALIGNS, RanksReport
from vtui.errors import TraceLoadError, UsageError
from vtui.query.ranks import PARQUET, _rejects, _report, sql_text, statements

if TYPE_CHECKING:
    from vtui.options import LoadOptions

# Where ranks.sql, written for DuckDB, is run differently on Spark (each checked on both engines by
# tests/core/test_ranks_spark.py):
# - the four ``read_parquet({x_files})`` views are DataFrames registered under the same names;
# - the ``rank`` blocks (exposed communication; DuckDB runs them rank by rank to bound its memory)
#   run once over every rank: the executors hold the kernels, not the driver;
# - Spark recomputes a view at each use, so each view is cached once created.
ALL_RANKS = {"rank_colls": "colls", "rank_comp": "comp", "rank_filter": "TRUE"}


def spark_statements(text: str) -> list[tuple[str, str, str]]:
    """ranks.sql's blocks as Spark runs them: (``view`` or ``name``, name, sql), the Parquet views
    left out (registered as DataFrames instead) and the ``rank`` blocks run once over all ranks."""
    out = []
    for kind, name, sql in statements(text):
        if kind == "view" and name in PARQUET:
            continue
        for key, value in ALL_RANKS.items():
            sql = sql.replace("{" + key + "}", value)
        out.append((kind.removeprefix("rank "), name, sql))
    return out


def _pyspark():
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise UsageError("--engine spark needs pyspark (and Java 17+): pip install 'vtui[spark]'") from None
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise UsageError("--engine spark needs Java 17 or later (`java` on PATH, or JAVA_HOME)")
    return SparkSession


def is_local(master: str | None) -> bool:
    return master is None or master.startswith("local")


def session(master: str | None = None, conf: dict[str, str] | None = None):
    """A SparkSession: ``master`` if given; under spark-submit, the one it was given; else ``local[*]``."""
    spark_session = _pyspark()
    builder = spark_session.builder.appName("vtui ranks")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM with its --master
    if master or not submitted:
        builder = builder.master(master or "local[*]")
    if is_local(master) and not submitted:
        # Local workers are this Python (so they import this vtui), and few partitions suit one box.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.sql.shuffle.partitions", str(2 * (os.cpu_count() or 1)))
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _export_task(item: tuple[int, str, str, LoadOptions | None]) -> tuple[int, str, str | None]:
    """One Spark task: one rank file to its Parquet folder; a rank that fails to load is said, not raised."""
    from vtui.query.rank_export import export_rank

    pos, file, out, options = item
    try:
        return pos, str(export_rank(Path(file), pos, Path(out), options)), None
    except TraceLoadError as exc:
        return pos, "", f"skipped {Path(file).name}: {exc}"


def export_on_spark(spark, path: Path, out: Path, options: LoadOptions | None = None) -> tuple[list[str], list[str]]:
    """Every trace file of ``path`` to ``out/rank-file-N`` as Spark tasks, one per file. Returns
    (folders in N order, warnings for ranks that failed to load)."""
    from vtui.query.rank_export import rank_files

    items = [(pos, str(f.resolve()), str(out.resolve()), options) for pos, f in rank_files(path)]
    done = spark.sparkContext.parallelize(items, len(items)).map(_export_task).collect()
    done.sort()
    folders = [folder for _pos, folder, why in done if why is None]
    skipped = [why for _pos, _folder, why in done if why is not None]
    if not folders:
        raise TraceLoadError(f"{path}: no rank could be loaded ({'; '.join(skipped)})")
    return folders, skipped


def run_sql_spark(spark, folders: list[str], align: str = "epoch") -> RanksReport:
    """ranks.sql on Spark over the per-rank Parquet folders, as a `RanksReport`."""
    if align not in ALIGNS:
        raise UsageError(f"--align must be one of {', '.join(ALIGNS)}")
    made: list[str] = []
    try:
        for n in PARQUET:
            spark.read.parquet(*[f"{f}/{n}.parquet" for f in folders]).createOrReplaceTempView(n)
            made.append(n)
        count, distinct, low, named = spark.sql(
            "SELECT count(*), count(DISTINCT named_rank), min(named_rank), count(named_rank) FROM meta").first()
        subs = {"rank": "named_rank", "align": align, "step_key": "name"}
        warnings = []
        if low is None or low < 0 or named != count or distinct != count:
            why = "some files name no rank" if low is None or low < 0 or named != count else "two files name the same rank"
            warnings.append(f"{why}: ranks numbered by file order")
            subs["rank"] = "pos"
        results: dict[str, list[tuple[Any, ...]]] = {}
        for kind, name, sql in spark_statements(sql_text()):
            if name == "steps" and kind == "name":  # the step alignment is known once step_shape ran
                repeated, shared, total = results["step_shape"][0]
                subs["step_key"] = "name" if total and not repeated and shared else "idx"
            text = re.sub(r"\{(\w+)\}", lambda m: subs.get(m.group(1), m.group(0)), sql)
            if kind == "view":
                spark.sql(text)
                spark.sql(f"CACHE TABLE {name}")
                made.append(name)
            else:
                results.setdefault(name, []).extend(tuple(row) for row in spark.sql(text).collect())
        results["exposed"].sort(key=lambda row: row[0])
        return _report(results, subs["step_key"], align, warnings + _rejects(results.get("rejected", [])))
    except Exception as exc:
        if isinstance(exc, UsageError) or type(exc).__module__.split(".")[0] not in ("pyspark", "py4j"):
            raise
        from vtui.query.engine import one_line

        raise UsageError(f"the ranks' SQL failed on Spark: {one_line(str(exc))[:500]}") from None
    finally:
        for name in reversed(made):
            spark.catalog.dropTempView(name)  # and its cached copy


def run_ranks_spark(path: str | os.PathLike, align: str = "epoch", master: str | None = None,
                    parquet_dir: str | os.PathLike | None = None, options: LoadOptions | None = None,
                    spark=None) -> RanksReport:
    """``vtui ranks PATH --engine spark``: the conversion as Spark tasks (skipped where PATH is already
    an export), then ranks.sql on Spark SQL. ``parquet_dir``: where the tasks write (a folder every
    executor and the driver see; needed off a local master); default a temp folder, removed after."""
    from vtui.query.rank_export import export_folders

    src = Path(path)
    exported = export_folders(src)
    if exported is not None:
        return run_sql_spark(spark or session(master), [str(f.resolve()) for f in exported], align)
    if parquet_dir is None and not is_local(master):
        raise UsageError("--engine spark on a cluster needs --parquet-dir: a folder the driver and every executor see")
    spark = spark or session(master)
    temp = None
    if parquet_dir is None:
        temp = out = Path(tempfile.mkdtemp(prefix="vtui-ranks-spark-"))
    else:
        out = Path(parquet_dir)
        out.mkdir(parents=True, exist_ok=True)
    try:
        folders, skipped = export_on_spark(spark, src, out, options)
        report = run_sql_spark(spark, folders, align)
        report.warnings[:0] = skipped
        return report
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
