"""`vtui ranks FOLDER [--json] [--format table|csv|md] [--align epoch|collective] [--engine python|duckdb]`

Many ranks side by side: per step each rank's duration and the skew; NCCL/RCCL collectives matched
across ranks (latency, skew, last rank, algbw/busbw, each rank's wait); the straggler; the
communication the compute does not hide. Example: vtui ranks profiles/ --align collective
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
    parser.add_argument("--engine", choices=("python", "duckdb"), default="python",
                        help="python: one store of all ranks; duckdb: rank by rank to Parquet, then SQL (vtui[sql])")
    add_load_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    import msgspec

    from vtui.present.ranks_text import ranks_text
    from vtui.present.schema import dump
    from vtui.safe_text import say

    if opts.engine == "duckdb":
        from vtui.commands import load_options
        from vtui.query.ranks import _libs, run_ranks

        _libs()  # a clear line before any load when duckdb or pyarrow is missing
        options = load_options(opts)
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
