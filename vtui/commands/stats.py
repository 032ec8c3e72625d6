"""`vtui stats TRACE [--range A:B] [--track REGEX] [--by name|cat|track|shape|arg:KEY] [--top N] [--format …]`

The slice aggregation table: count, total and self time clipped to the range, avg/min/max,
and % of range × tracks. Example: vtui stats trace.json.gz --range 10ms:25ms --by cat --top 10
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Annotated

from vtui.commands.common import check_top, load
from vtui.commands.options import Options, Range, Trace, Track, add_options, from_namespace, opt
from vtui.present.tabular import FORMATS

if TYPE_CHECKING:
    from vtui.analysis.slices.aggregate import Aggregation
    from vtui.commands import Loader
    from vtui.present.schema import Stats
    from vtui.store.slicetime import TimeRange

HELP = "the slice aggregation table over a range"


class StatsOptions(Options, frozen=True):
    trace: Trace
    range: Range = None
    track: Track = None
    by: Annotated[str, opt("group by name, cat, track, shape (name + Input Dims) or arg:KEY (default name)")] = "name"
    sort: Annotated[str, opt("total, self, count, avg, min, max or name (default total)")] = "total"
    top: Annotated[int | None, opt("only the first N rows", metavar="N", mcp=False)] = None
    format: Annotated[str, opt("output format (default table)", choices=FORMATS, mcp=False)] = "table"


OPTIONS = StatsOptions  # what `vtui mcp` reads for the tool's parameters


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, StatsOptions)


def analyse(opts: StatsOptions, loader: Loader | None = None) -> tuple[Aggregation, TimeRange]:
    from vtui.analysis.slices.aggregate import aggregate, check_grouping

    check_grouping(opts.by)  # before a possibly long load
    check_top(opts.top)
    store, rng, tracks = load(opts, loader)
    return aggregate(store, rng, tracks, by=opts.by, sort=opts.sort), rng


def report(agg: Aggregation, rng: TimeRange, top: int | None) -> Stats:
    """The rows under their context (the app exports the bare rows)."""
    from vtui.present.schema import VERSIONS, AggRowOut, Stats

    rows = agg.rows[:top] if top else agg.rows
    return Stats(schema_version=VERSIONS["stats"], by=agg.by, t0_ns=rng.t0, t1_ns=rng.t1, slices=agg.slices,
                 tracks=agg.tracks, rows=[AggRowOut(r.key, r.count, r.total_ns, r.self_ns, float(round(r.avg_ns, 1)),
                                                     r.min_ns, r.max_ns, float(round(r.pct, 3))) for r in rows])


def compute(opts: StatsOptions, loader: Loader | None = None) -> Stats:
    return report(*analyse(opts, loader), opts.top)


def run(ns: argparse.Namespace) -> int:
    from vtui.present.schema import encode
    from vtui.present.tables import aggregation_table
    from vtui.safe_text import say
    from vtui.units import format_duration

    opts = from_namespace(StatsOptions, ns)
    agg, rng = analyse(opts)
    if opts.format == "json":
        say(encode(report(agg, rng, opts.top)), lossless=True)
        return 0
    say(aggregation_table(agg, opts.top).render(opts.format), lossless=opts.format == "csv")
    if opts.format == "table":
        shown = min(len(agg.rows), opts.top or len(agg.rows))
        say(f"\n{agg.slices:,} slices on {agg.tracks} tracks in {format_duration(rng.t0)} – {format_duration(rng.t1)}"
              f" ({format_duration(rng.span_ns)}); {shown} of {len(agg.rows)} groups shown")
    return 0
