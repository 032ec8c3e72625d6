"""`vtui ranks FOLDER [--json] [--format table|csv|md] [--align epoch|collective] [--engine python|duckdb|spark [--master URL] [--parquet-dir DIR]]`

Many ranks side by side: per step each rank's duration and the skew; NCCL/RCCL collectives matched
across ranks (latency, skew, last rank, algbw/busbw, each rank's wait); the straggler; the
communication the compute does not hide. FOLDER may also be a `vtui export-ranks` output (duckdb
and spark engines). Example: vtui ranks profiles/ --align collective
"""

from __future__ import annotations

import argparse

from vtui.commands import add_load_arguments

HELP = "ranks side by side: step skew, collectives, stragglers, exposed communication"
FORMATS = ("table", "csv", "md")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="folder of per-rank traces (or one trace)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default table)")
    parser.add_argument("--align", choices=("epoch", "collective"), default="epoch",
                        help="clocks: each rank's epoch time (default), or the end of the first common collective")
    parser.add_argument("--engine", choices=("python", "duckdb", "spark"), default="python",
                        help="python: one store of all ranks; duckdb: rank by rank to Parquet, then SQL (vtui[sql]); "
                             "spark: one Spark task per rank to Parquet, then the SQL on Spark (vtui[spark], Java 17+)")
    parser.add_argument("--master", metavar="URL",
                        help="spark: local[N], spark://HOST:PORT, yarn … (default: spark-submit's, else local[*])")
    parser.add_argument("--parquet-dir", metavar="DIR",
                        help="spark: where the tasks write each rank's Parquet, a folder the driver and every executor "
                             "see (default: a temp folder; needed off a local master)")
    add_load_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    from pathlib import Path

    import msgspec

    from vtui.present.ranks_text import ranks_text
    from vtui.present.schema import dump
    from vtui.query.rank_export import export_folders
    from vtui.safe_text import say

    exported = export_folders(Path(opts.trace))
    if exported is not None and opts.engine == "python":
        from vtui.errors import UsageError

        raise UsageError(f"{opts.trace} is a `vtui export-ranks` folder: read it with --engine duckdb or spark")
    if opts.engine == "spark":
        from vtui.commands import load_options
        from vtui.query.ranks_spark import run_ranks_spark

        report = run_ranks_spark(opts.trace, opts.align, master=opts.master, parquet_dir=opts.parquet_dir,
                                 options=load_options(opts))
    elif opts.engine == "duckdb":
        from vtui.commands import load_options
        from vtui.query.ranks import _libs, run_ranks, run_sql

        _libs()  # a clear line before any load when duckdb or pyarrow is missing
        options = load_options(opts)
        if exported is not None:
            report = run_sql(exported, opts.align)
        else:
            report = run_ranks(opts.trace, opts.align, cache=options.cache, options=options)
    else:
        from vtui.analysis.ranks.analyse import analyse_ranks
        from vtui.analysis.ranks.tables import rank_tables
        from vtui.commands import load_store

        store = load_store(opts)
        report, _matched = analyse_ranks(rank_tables(store), opts.align)
        # the ranks that failed to load, said as the duckdb engine says them
        report.warnings[:0] = [w for w in store.warnings if w.startswith("skipped ")]
    if opts.json:
        say(dump("ranks", {"trace": str(opts.trace), "engine": opts.engine, **msgspec.to_builtins(report)}),
            lossless=True)
    else:
        say(ranks_text(report, opts.format), lossless=opts.format == "csv")
    return 0
