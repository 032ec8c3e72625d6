"""`vtui insights TRACE [--range A:B] [--step REGEX] [--json]`: where an inference run spends its time.

Steps and their phases (prefill vs per-token latency, trends), top operators, sync points, GPU busy %,
memcpy share, launch delay, idle causes and kernel precision, memory and caches, Python overhead,
and findings with hints.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Annotated, Any

from vtui.commands.common import check_top, load
from vtui.commands.options import Options, Range, Trace, add_options, from_namespace, opt

if TYPE_CHECKING:
    from vtui.commands import Loader
    from vtui.present.schema import Insights

HELP = "steps, phases, trends, operators, GPU, memory and findings with hints"


class InsightsOptions(Options, frozen=True):
    trace: Trace
    range: Range = None
    step: Annotated[str | None, opt("regex for the step slices (default: detected)", metavar="REGEX")] = None
    top: Annotated[int, opt("operators and kernels listed (default 15)", ge=1, le=1000,
                            mcp_help="operators and kernels listed")] = 15
    json: Annotated[bool, opt("print one JSON object", mcp=False)] = False
    capture: Annotated[str | None, opt(
        "vLLM's CUDA-graph capture trace of the same run: replayed graph kernels get the captured operators and "
        "shapes (default: capture_traces/ beside the trace, if any)", metavar="FILE", mcp=False)] = None
    peaks: Annotated[str, opt("the roofline's device peaks: the datasheet's (default), the measured achievable column "
                              "where vtui's table has one, or a TOML table of your own",
                              metavar="datasheet|achievable|FILE.toml", mcp=False)] = "datasheet"


OPTIONS = InsightsOptions  # what `vtui mcp` reads for the tool's parameters


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, InsightsOptions)


def analyse(opts: InsightsOptions, loader: Loader | None = None) -> Any:
    """The insights of the options' trace and range (``compute_insights``' result)."""
    from vtui.analysis.base.ranges import compile_regex
    from vtui.analysis.gpu.peaks import check_peaks_choice
    from vtui.analysis.report.insights import compute_insights
    from vtui.errors import UsageError

    if opts.step:
        compile_regex(opts.step)  # a bad regex is a usage error before the load
    check_top(opts.top)
    try:
        check_peaks_choice(opts.peaks)  # a bad file is a usage error before the load
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    store, rng, _tracks = load(opts, loader)
    capture, capture_name = load_capture(opts, loader)
    return compute_insights(store, rng, opts.step, top=opts.top, capture=capture, capture_name=capture_name,
                            peaks=opts.peaks)


def report(opts: InsightsOptions, ins: Any) -> Insights:
    from vtui.present.insights_json import insights_dict
    from vtui.present.schema import Insights, typed

    out = typed("insights", {"trace": str(opts.trace), **insights_dict(ins)})
    assert isinstance(out, Insights)
    return out


def compute(opts: InsightsOptions, loader: Loader | None = None) -> Insights:
    return report(opts, analyse(opts, loader))


def run(ns: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.present.insights_text import insights_text
    from vtui.present.schema import encode
    from vtui.safe_text import say

    opts = from_namespace(InsightsOptions, ns)
    ins = analyse(opts)
    if opts.json:
        say(encode(report(opts, ins)), lossless=True)
    else:
        say(insights_text(ins, Path(opts.trace).name))
    return 0


def load_capture(opts: Any, loader: Loader | None = None):
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
    return load_store(opts, path, loader=loader), Path(path).name
