"""`vtui query TRACE SQL [--format table|csv|json|md] [--time-limit S] [--max-rows N]`

SQL (DuckDB) over the trace with Perfetto's table names: slice, thread_track, thread, process,
track, counter, counter_track, flow, args (and extract_arg(arg_set_id, 'args.KEY')); and vtui's:
instant, kernel, launch, step, and Insights' finding, op, gpu_busy.
Times are ns from the trace start. A folder of ranks adds a rank column. Needs vtui[sql].
Example: vtui query trace.json.gz "SELECT name, COUNT(*) n, SUM(dur) total FROM slice GROUP BY name ORDER BY total DESC LIMIT 10"
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Annotated

from vtui.commands import load_store
from vtui.commands.options import Options, add_options, from_namespace, opt
from vtui.errors import UsageError
from vtui.present.tabular import FORMATS
from vtui.query.engine import MAX_BYTES, MAX_ROWS, TIME_LIMIT_S

if TYPE_CHECKING:
    from vtui.commands import Loader
    from vtui.present.schema import Query
    from vtui.query.engine import QueryResult

HELP = "SQL over the trace with Perfetto's table names (slice, thread, args, …; DuckDB)"


class QueryOptions(Options, frozen=True):
    trace: Annotated[str, opt("trace file or folder (of ranks, or of vtui's Parquet export)", positional=True,
                              mcp_help="path of a trace file (.json, .json.gz, nsys .sqlite) or a folder of ranks")]
    sql: Annotated[str, opt("the query, e.g. \"SELECT name, SUM(dur) FROM slice GROUP BY name\"", positional=True,
                            mcp_help="DuckDB SQL over Perfetto's tables: slice, thread_track, thread, process, track, "
                                     "counter, counter_track, flow, args (extract_arg(arg_set_id, 'args.KEY')); and "
                                     "vtui's instant, kernel, launch, step, finding, op, gpu_busy. Times in ns from the "
                                     "trace start. A folder of ranks or of vtui's Parquet export adds a rank column")]
    format: Annotated[str, opt("output format (default table)", choices=FORMATS, mcp=False)] = "table"
    time_limit: Annotated[float, opt(f"stop the query after S seconds (default {TIME_LIMIT_S:g}; 0: no limit)",
                                     metavar="S", mcp_help="seconds before the query is stopped", gt=0,
                                     le=300)] = TIME_LIMIT_S
    max_rows: Annotated[int, opt(f"print at most N rows (default {MAX_ROWS:,}; 0: all), and at most {MAX_BYTES >> 20} MB "
                                 "of cell text", metavar="N", mcp=False)] = MAX_ROWS


OPTIONS = QueryOptions  # what `vtui mcp` reads for the tool's parameters


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, QueryOptions)


def result_of(opts: QueryOptions, loader: Loader | None = None) -> QueryResult:
    from vtui.query.engine import duckdb_module, run_query

    if opts.time_limit < 0:
        raise UsageError("--time-limit must be 0 (no limit) or more seconds")
    if opts.max_rows < 0:
        raise UsageError("--max-rows must be 0 (all) or more")
    if not opts.sql.strip():
        raise UsageError("empty query")
    duckdb_module()  # the missing extra is reported before a long load
    from vtui.query.arrowcols import pyarrow

    pyarrow()
    from pathlib import Path

    from vtui.query.parquet import ParquetSource, rank_folders

    path = Path(opts.trace)
    source = ParquetSource(path) if rank_folders(path) else load_store(opts, loader=loader)
    from vtui.query import engine

    return run_query(source, opts.sql, time_limit=opts.time_limit, max_rows=opts.max_rows or None,
                     max_bytes=engine.MAX_BYTES)


def report(result: QueryResult) -> Query:
    from vtui.present.schema import VERSIONS, Query

    return Query(schema_version=VERSIONS["query"], columns=result.columns, types=result.types, rows=result.rows,
                 row_count=result.row_count, truncated=result.truncated)


def compute(opts: QueryOptions, loader: Loader | None = None) -> Query:
    return report(result_of(opts, loader))


def run(ns: argparse.Namespace) -> int:
    from vtui.present.schema import encode
    from vtui.query.present import result_table
    from vtui.safe_text import say

    opts = from_namespace(QueryOptions, ns)
    result = result_of(opts)
    if opts.format == "json":
        say(encode(report(result)), lossless=True)
        return 0
    say(result_table(result).render(opts.format), lossless=opts.format == "csv")
    if opts.format == "table":
        more = (f" (more rows left out, past --max-rows or {MAX_BYTES >> 20} MB of text: add a LIMIT, or select "
                "fewer or shorter columns)") if result.truncated else ""
        say(f"\n{result.row_count:,} rows{more}")
    return 0
