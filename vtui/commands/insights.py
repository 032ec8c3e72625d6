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
    parser.add_argument("--capture", metavar="FILE",
                        help="vLLM's CUDA-graph capture trace of the same run: replayed graph kernels get the "
                             "captured operators and shapes (default: capture_traces/ beside the trace, if any)")
    parser.add_argument("--peaks", metavar="datasheet|achievable|FILE.toml", default="datasheet",
                        help="the roofline's device peaks: the datasheet's (default), the measured achievable "
                             "column where vtui's table has one, or a TOML table of your own")


def run(opts: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.analysis.base.ranges import compile_regex
    from vtui.analysis.gpu.peaks import check_peaks_choice
    from vtui.analysis.report.insights import compute_insights
    from vtui.errors import UsageError
    from vtui.present.insights_json import insights_dict
    from vtui.present.insights_text import insights_text
    from vtui.present.schema import dump
    from vtui.safe_text import say

    if opts.step:
        compile_regex(opts.step)  # a bad regex is a usage error before the load
    check_top(opts.top)
    try:
        check_peaks_choice(opts.peaks)  # a bad file is a usage error before the load
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    store, rng, _tracks = load(opts)
    capture, capture_name = load_capture(opts)
    ins = compute_insights(store, rng, opts.step, top=opts.top, capture=capture, capture_name=capture_name,
                           peaks=opts.peaks)
    if opts.json:
        say(dump("insights", {"trace": str(opts.trace), **insights_dict(ins)}), lossless=True)
    else:
        say(insights_text(ins, Path(opts.trace).name))
    return 0


def load_capture(opts: argparse.Namespace):
    """(capture store or None, its file name): ``--capture``, else the first trace in a
    ``capture_traces/`` folder beside the trace (TraceLens's layout for vLLM)."""
    from pathlib import Path

    from vtui.analysis.gpu.graphs import find_capture_traces
    from vtui.commands import load_store

    path = getattr(opts, "capture", None)
    if path is None:
        found = find_capture_traces(Path(opts.trace))
        if not found:
            return None, ""
        path = str(found[0])
    return load_store(opts, path), Path(path).name
