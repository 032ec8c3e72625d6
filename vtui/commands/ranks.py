"""`vtui ranks FOLDER [--json] [--format table|csv|md] [--align epoch|collective] [--engine python|duckdb|spark [--master URL] [--parquet-dir DIR]]`

Many ranks side by side: per step each rank's duration and the skew; NCCL/RCCL collectives matched
across ranks (latency, skew, last rank, algbw/busbw, each rank's wait); the straggler; the
communication the compute does not hide. FOLDER may also be a `vtui export-ranks` output (duckdb
and spark engines). Example: vtui ranks profiles/ --align collective
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Annotated

from vtui.commands.options import Options, add_options, from_namespace, opt

if TYPE_CHECKING:
    from vtui.analysis.ranks.analyse import RanksReport
    from vtui.commands import Loader
    from vtui.present.schema import Ranks

HELP = "ranks side by side: step skew, collectives, stragglers, exposed communication"
FORMATS = ("table", "csv", "md")


class RanksOptions(Options, frozen=True):
    trace: Annotated[str, opt("folder of per-rank traces (or one trace)", positional=True,
                              mcp_help="folder of per-rank traces")]
    json: Annotated[bool, opt("print one JSON object", mcp=False)] = False
    format: Annotated[str, opt("output format (default table)", choices=FORMATS, mcp=False)] = "table"
    align: Annotated[str, opt("clocks: each rank's epoch time (default), or the end of the first common collective",
                              choices=("epoch", "collective"), mcp_help="epoch or collective")] = "epoch"
    engine: Annotated[str, opt("python: one store of all ranks; duckdb: rank by rank to Parquet, then SQL (vtui[sql]); "
                               "spark: one Spark task per rank to Parquet, then the SQL on Spark (vtui[spark], Java 17+)",
                               choices=("python", "duckdb", "spark"), mcp=False)] = "python"
    master: Annotated[str | None, opt("spark: local[N], spark://HOST:PORT, yarn … (default: spark-submit's, else "
                                      "local[*])", metavar="URL", mcp=False)] = None
    parquet_dir: Annotated[str | None, opt(
        "spark: where the tasks write each rank's Parquet, a folder the driver and every executor see (default: a "
        "temp folder; needed off a local master)", metavar="DIR", mcp=False)] = None


OPTIONS = RanksOptions  # what `vtui mcp` reads for the tool's parameters


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, RanksOptions)


def analyse(opts: RanksOptions, loader: Loader | None = None) -> RanksReport:
    from pathlib import Path

    from vtui.query.rank_export import export_folders

    exported = export_folders(Path(opts.trace))
    if exported is not None and opts.engine == "python":
        from vtui.errors import UsageError

        raise UsageError(f"{opts.trace} is a `vtui export-ranks` folder: read it with --engine duckdb or spark")
    if opts.engine == "spark":
        from vtui.commands import load_options
        from vtui.query.ranks_spark import run_ranks_spark

        return run_ranks_spark(opts.trace, opts.align, master=opts.master, parquet_dir=opts.parquet_dir,
                               options=load_options(opts))
    if opts.engine == "duckdb":
        from vtui.commands import load_options
        from vtui.query.ranks import _libs, run_ranks, run_sql

        _libs()  # a clear line before any load when duckdb or pyarrow is missing
        options = load_options(opts)
        if exported is not None:
            return run_sql(exported, opts.align)
        return run_ranks(opts.trace, opts.align, cache=options.cache, options=options)
    from vtui.analysis.ranks.analyse import analyse_ranks
    from vtui.analysis.ranks.tables import rank_tables
    from vtui.commands import load_store

    store = load_store(opts, loader=loader)
    report, _matched = analyse_ranks(rank_tables(store), opts.align)
    # the ranks that failed to load, said as the duckdb engine says them
    report.warnings[:0] = [w for w in store.warnings if w.startswith("skipped ")]
    return report


def report_of(opts: RanksOptions, report: RanksReport) -> Ranks:
    """Through ``typed``: the three engines' figures become the schema's types (a whole-number
    bandwidth from SQL is printed as a float, as the schema says)."""
    import msgspec

    from vtui.present.schema import Ranks, typed

    out = typed("ranks", {"trace": str(opts.trace), "engine": opts.engine, **msgspec.to_builtins(report)})
    assert isinstance(out, Ranks)
    return out


def compute(opts: RanksOptions, loader: Loader | None = None) -> Ranks:
    return report_of(opts, analyse(opts, loader))


def run(ns: argparse.Namespace) -> int:
    from vtui.present.ranks_text import ranks_text
    from vtui.present.schema import encode
    from vtui.safe_text import say

    opts = from_namespace(RanksOptions, ns)
    report = analyse(opts)
    if opts.json:
        say(encode(report_of(opts, report)), lossless=True)
    else:
        say(ranks_text(report, opts.format), lossless=opts.format == "csv")
    return 0
