"""`vtui search TRACE REGEX [--range A:B] [--track REGEX] [--json] [--time-limit S]`

Slices whose name matches REGEX (or whose args match, with the prefix "args:"), in time order,
with their count and summed duration. Example: vtui search trace.json.gz 'aten::.*mm' --json
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Annotated

from vtui.commands.common import load
from vtui.commands.options import Options, Range, Trace, Track, add_options, from_namespace, opt
from vtui.errors import UsageError

if TYPE_CHECKING:
    from vtui.analysis.slices.search import SearchResult
    from vtui.commands import Loader
    from vtui.present.schema import Search
    from vtui.store.store import TraceStore

HELP = "find slices by name (or args:REGEX) with count and total duration"
LIMIT = 50  # matches listed in text output
TIME_LIMIT_S = 30.0  # RE2 cannot backtrack, but args of a huge trace are gigabytes of text
MCP_TIME_LIMIT_S = 10.0  # an agent waits on the reply


class SearchOptions(Options, frozen=True):
    trace: Trace
    regex: Annotated[str, opt("regular expression over names; prefix with args: to search args", positional=True,
                              mcp_help="regex over slice names; prefix args: to search args")]
    range: Range = None
    track: Track = None
    json: Annotated[bool, opt("print one JSON object with every match", mcp=False)] = False
    time_limit: Annotated[float, opt(f"stop the search after S seconds (default {TIME_LIMIT_S:g}; 0: no limit)",
                                     metavar="S", mcp_default=MCP_TIME_LIMIT_S, gt=0, le=120,
                                     mcp_help="seconds before the search is stopped")] = TIME_LIMIT_S


OPTIONS = SearchOptions  # what `vtui mcp` reads for the tool's parameters


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, SearchOptions)


def analyse(opts: SearchOptions, loader: Loader | None = None) -> tuple[TraceStore, SearchResult]:
    from vtui.analysis.slices.search import parse_query, search
    from vtui.regex_guard import Budget

    if opts.time_limit < 0:
        raise UsageError("--time-limit must be 0 (no limit) or more seconds")
    parse_query(opts.regex)  # a bad regex fails before the load
    store, rng, tracks = load(opts, loader)
    return store, search(store, opts.regex, rng, tracks, budget=Budget(opts.time_limit))


def compute(opts: SearchOptions, loader: Loader | None = None) -> Search:
    from vtui.present.search_json import search_report

    return search_report(*analyse(opts, loader))


def run(ns: argparse.Namespace) -> int:
    from vtui.safe_text import safe_field, say, say_parts
    from vtui.units import format_duration

    opts = from_namespace(SearchOptions, ns)
    store, result = analyse(opts)
    if opts.json:  # the report's Struct, written a chunk of matches at a time
        from vtui.present.search_json import search_json_parts

        say_parts(search_json_parts(store, result), lossless=True)
        return 0
    s = store.slices
    rows = result.rows[:LIMIT]  # text lists LIMIT: build no more
    durs = s.durations(rows).tolist()
    matches = [{"name": store.name(r), "track": store.tracks[int(s.track[r])].label, "start_ns": int(s.start_ns[r]),
                "dur_ns": d} for r, d in zip(rows.tolist(), durs)]
    lines = [f"{result.count:,} matches, total {format_duration(result.total_ns)}"]
    for m in matches:
        lines.append(f"  {format_duration(m['start_ns']):>12}  {format_duration(m['dur_ns']):>12}  "
                     f"{safe_field(m['name'])}  [{safe_field(m['track'])}]")
    if result.count > LIMIT:
        lines.append(f"  … {result.count - LIMIT:,} more (use --json for all)")
    say("\n".join(lines))
    return 0
