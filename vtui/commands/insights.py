"""`vtui insights TRACE [--range A:B] [--step REGEX] [--json]`: where an inference run spends its time.

Steps and their phases (prefill vs per-token latency, trends), top operators, sync points, GPU busy %,
memcpy share, launch delay, idle causes and kernel precision, memory and caches, Python overhead,
and findings with hints.
"""

from __future__ import annotations

import argparse
import json

from vtui.commands import add_load_arguments, load_store

HELP = "steps, phases, trends, operators, GPU, memory and findings with hints"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file or folder")
    parser.add_argument("--range", help="only this time range, relative to the trace start (e.g. 10ms:25ms)")
    parser.add_argument("--step", metavar="REGEX", help="regex for the step slices (default: detected)")
    parser.add_argument("--top", type=int, default=15, help="operators and kernels listed (default 15)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_load_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.analysis.insights import compute_insights, insights_dict
    from vtui.analysis.ranges import compile_regex, resolve_range
    from vtui.errors import UsageError
    from vtui.insights_text import insights_text

    if opts.step:
        compile_regex(opts.step)  # a bad regex is a usage error before the load
    if opts.top < 1:
        raise UsageError("--top must be at least 1")
    store = load_store(opts)
    t0, t1 = resolve_range(store, opts.range)
    ins = compute_insights(store, t0, t1, opts.step, top=opts.top)
    if opts.json:
        print(json.dumps({"trace": str(opts.trace), **insights_dict(ins)}, indent=2, ensure_ascii=False))
    else:
        print(insights_text(ins, Path(opts.trace).name))
    return 0
