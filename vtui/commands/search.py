"""`vtui search TRACE REGEX [--range A:B] [--track REGEX] [--json]`

Slices whose name matches REGEX (or whose args match, with the prefix "args:"), in time order,
with their count and summed duration. Example: vtui search trace.json.gz 'aten::.*mm' --json
"""

from __future__ import annotations

import argparse
import json

from vtui.commands.common import add_trace_arguments, load

HELP = "find slices by name (or args:REGEX) with count and total duration"
LIMIT = 50  # matches listed in text output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument("regex", help="regular expression over names; prefix with args: to search args")
    parser.add_argument("--json", action="store_true", help="print one JSON object with every match")


def run(opts: argparse.Namespace) -> int:
    from vtui.analysis.search import parse_query, search  # noqa: PLC0415
    from vtui.fmt import format_duration  # noqa: PLC0415

    parse_query(opts.regex)  # a bad regex fails before the load
    store, t0, t1, tracks = load(opts)
    result = search(store, opts.regex, t0, t1, tracks)
    s = store.slices
    matches = [{"name": store.name(r), "track": store.tracks[int(s.track[r])].label, "start_ns": int(s.start_ns[r]),
                "dur_ns": int(s.dur_ns[r])} for r in result.rows.tolist()]
    if opts.json:
        print(json.dumps({"pattern": opts.regex, "in_args": result.in_args, "count": result.count,
                          "total_ns": result.total_ns, "matches": matches}, indent=2, ensure_ascii=False))
        return 0
    print(f"{result.count:,} matches, total {format_duration(result.total_ns)}")
    for m in matches[:LIMIT]:
        print(f"  {format_duration(m['start_ns']):>12}  {format_duration(m['dur_ns']):>12}  {m['name']}  [{m['track']}]")
    if result.count > LIMIT:
        print(f"  … {result.count - LIMIT:,} more (use --json for all)")
    return 0
