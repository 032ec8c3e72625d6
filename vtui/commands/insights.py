"""`vtui insights TRACE [--range A:B] [--step REGEX] [--json]`: where an inference run spends its time.

Steps and their phases (prefill vs per-token latency, trends), top operators, sync points, GPU busy %,
memcpy share, launch delay, idle causes and kernel precision, memory and caches, Python overhead,
and findings with hints.
"""

from __future__ import annotations

import argparse

from vtui.commands.common import add_trace_arguments, check_top, load

HELP = "steps, phases, trends, operators, GPU, memory and findings with hints"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser, track=False)
    parser.add_argument("--step", metavar="REGEX", help="regex for the step slices (default: detected)")
    parser.add_argument("--top", type=int, default=15, help="operators and kernels listed (default 15)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(opts: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.analysis.insights import compute_insights, insights_dict
    from vtui.analysis.ranges import compile_regex
    from vtui.present.insights_text import insights_text
    from vtui.safe_text import say
    from vtui.schema import dump

    if opts.step:
        compile_regex(opts.step)  # a bad regex is a usage error before the load
    check_top(opts.top)
    store, t0, t1, _tracks = load(opts)
    ins = compute_insights(store, t0, t1, opts.step, top=opts.top)
    if opts.json:
        say(dump("insights", {"trace": str(opts.trace), **insights_dict(ins)}), lossless=True)
    else:
        say(insights_text(ins, Path(opts.trace).name))
    return 0
