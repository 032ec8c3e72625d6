"""`vtui stats TRACE [--range A:B] [--track REGEX] [--by name|cat|track|shape|arg:KEY] [--top N] [--format …]`

The slice aggregation table: count, total and self time clipped to the range, avg/min/max,
and % of range × tracks. Example: vtui stats trace.json.gz --range 10ms:25ms --by cat --top 10
"""

from __future__ import annotations

import argparse

from vtui.commands.common import add_trace_arguments, check_top, load
from vtui.present.tabular import FORMATS

HELP = "the slice aggregation table over a range"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument("--by", default="name", help="group by name, cat, track, shape (name + Input Dims) or arg:KEY (default name)")
    parser.add_argument("--sort", default="total", help="total, self, count, avg, min, max or name (default total)")
    parser.add_argument("--top", type=int, default=None, metavar="N", help="only the first N rows")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default table)")


def run(opts: argparse.Namespace) -> int:
    from vtui.analysis.slices.aggregate import aggregate, check_grouping
    from vtui.fmt import format_duration
    from vtui.present.tables import aggregation_table
    from vtui.safe_text import say

    check_grouping(opts.by)  # before a possibly long load
    check_top(opts.top)
    store, rng, tracks = load(opts)
    agg = aggregate(store, rng, tracks, by=opts.by, sort=opts.sort)
    if opts.format == "json":  # the rows under their context and schema_version (the app exports the bare rows)
        from vtui.present.schema import dump

        rows = agg.rows[:opts.top] if opts.top else agg.rows
        say(dump("stats", {"by": agg.by, "t0_ns": rng.t0, "t1_ns": rng.t1, "slices": agg.slices, "tracks": agg.tracks,
                           "rows": [r.as_dict() for r in rows]}), lossless=True)
        return 0
    say(aggregation_table(agg, opts.top).render(opts.format), lossless=opts.format == "csv")
    if opts.format == "table":
        shown = min(len(agg.rows), opts.top or len(agg.rows))
        say(f"\n{agg.slices:,} slices on {agg.tracks} tracks in {format_duration(rng.t0)} – {format_duration(rng.t1)}"
              f" ({format_duration(rng.span_ns)}); {shown} of {len(agg.rows)} groups shown")
    return 0
