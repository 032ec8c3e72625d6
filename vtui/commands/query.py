"""`vtui query TRACE SQL [--format table|csv|json|md] [--time-limit S] [--max-rows N]`

SQL (DuckDB) over the trace with Perfetto's table names: slice, thread_track, thread, process,
track, counter, counter_track, flow, args (and extract_arg(arg_set_id, 'args.KEY')); and vtui's:
instant, kernel, launch, step, and Insights' finding, op, gpu_busy.
Times are ns from the trace start. A folder of ranks adds a rank column. Needs vtui[sql].
Example: vtui query trace.json.gz "SELECT name, COUNT(*) n, SUM(dur) total FROM slice GROUP BY name ORDER BY total DESC LIMIT 10"
"""

from __future__ import annotations

import argparse

from vtui.commands import add_load_arguments, load_store
from vtui.errors import UsageError
from vtui.present.tabular import FORMATS

HELP = "SQL over the trace with Perfetto's table names (slice, thread, args, …; DuckDB)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vtui.query.engine import MAX_BYTES, MAX_ROWS, TIME_LIMIT_S

    parser.add_argument("trace", help="trace file or folder (of ranks, or of vtui's Parquet export)")
    parser.add_argument("sql", help="the query, e.g. \"SELECT name, SUM(dur) FROM slice GROUP BY name\"")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default table)")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, metavar="S",
                        help=f"stop the query after S seconds (default {TIME_LIMIT_S:g}; 0: no limit)")
    parser.add_argument("--max-rows", type=int, default=MAX_ROWS, metavar="N",
                        help=f"print at most N rows (default {MAX_ROWS:,}; 0: all), and at most "
                             f"{MAX_BYTES >> 20} MB of cell text")
    add_load_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    from vtui.query.engine import MAX_BYTES, duckdb_module, run_query
    from vtui.query.present import render
    from vtui.safe_text import say

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
    source = ParquetSource(path) if rank_folders(path) else load_store(opts)
    from vtui.query import engine

    result = run_query(source, opts.sql, time_limit=opts.time_limit, max_rows=opts.max_rows or None,
                       max_bytes=engine.MAX_BYTES)
    say(render(result, opts.format), lossless=opts.format in ("csv", "json"))
    if opts.format == "table":
        more = (f" (more rows left out, past --max-rows or {MAX_BYTES >> 20} MB of text: add a LIMIT, or select "
                "fewer or shorter columns)") if result.truncated else ""
        say(f"\n{result.row_count:,} rows{more}")
    return 0
