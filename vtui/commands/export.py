"""`vtui export TRACE -o OUT.json [--range A:B] [--track REGEX] [--force]`

Writes the events overlapping the range, exactly as in the source, as a Chrome-trace JSON
that Perfetto and vtui open. Never writes over the input; refuses an existing file without --force.
"""

from __future__ import annotations

import argparse

from vtui.commands.common import add_trace_arguments, load

HELP = "write a range (and tracks) as a trace Perfetto opens"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument("-o", "--output", required=True, help="output .json file")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")


def run(opts: argparse.Namespace) -> int:
    from vtui.analysis.export import export_range  # noqa: PLC0415
    from vtui.atomic import check_output_path  # noqa: PLC0415

    check_output_path(opts.output, [opts.trace], opts.force)  # fail before a long load
    store, t0, t1, tracks = load(opts)
    plan = export_range(store, opts.output, t0, t1, tracks, overwrite=opts.force)
    counts = ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in plan.counts.items() if v)
    print(f"wrote {plan.events:,} events to {opts.output} ({counts or 'nothing in that range'})")
    return 0
