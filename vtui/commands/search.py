"""`vtui search TRACE REGEX [--range A:B] [--track REGEX] [--json] [--time-limit S]`

Slices whose name matches REGEX (or whose args match, with the prefix "args:"), in time order,
with their count and summed duration. Example: vtui search trace.json.gz 'aten::.*mm' --json
"""

from __future__ import annotations

import argparse

from vtui.commands.common import add_trace_arguments, load
from vtui.errors import UsageError

HELP = "find slices by name (or args:REGEX) with count and total duration"
LIMIT = 50  # matches listed in text output
TIME_LIMIT_S = 30.0  # RE2 cannot backtrack, but args of a huge trace are gigabytes of text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument("regex", help="regular expression over names; prefix with args: to search args")
    parser.add_argument("--json", action="store_true", help="print one JSON object with every match")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, metavar="S",
                        help=f"stop the search after S seconds (default {TIME_LIMIT_S:g}; 0: no limit)")


def run(opts: argparse.Namespace) -> int:
    from vtui.analysis.slices.search import parse_query, search
    from vtui.fmt import format_duration
    from vtui.regex_guard import Budget
    from vtui.safe_text import safe_field, say, say_parts

    if opts.time_limit < 0:
        raise UsageError("--time-limit must be 0 (no limit) or more seconds")
    parse_query(opts.regex)  # a bad regex fails before the load
    store, rng, tracks = load(opts)
    result = search(store, opts.regex, rng, tracks, budget=Budget(opts.time_limit))
    if opts.json:
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
