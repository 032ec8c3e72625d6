"""`vtui tree TRACE [--range A:B] [--track RE] [--inverted] [--weight total|self|gpu] [--min-pct P] [--depth N] [--format table|json|folded] [--against B]`

The call tree of a range: slices merged by name along their call chain, with count, total and
self time clipped to the range, % of the range, and the GPU time (kernels, memcpy, memset) that
each call launched. ``--inverted``: bottom-up, every name with its callers beneath it, by self
time. ``folded``: collapsed stacks (``a;b;c 1234``, ns) for flamegraph.pl, inferno, speedscope.
``--against B``: the differential tree, A (this trace) next to B per call path. ``--handover``:
where Python frames hand over to ops, with findings (deep wrappers, GPU-less work repeated in
every step, synchronisation calls per step and where they come from).
Example: vtui tree trace.json.gz --range 100ms:200ms --weight gpu --min-pct 1
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Annotated, Any

from vtui.analysis.calltree.tree import WEIGHTS
from vtui.commands.common import load
from vtui.commands.options import Options, Range, Trace, Track, add_options, from_namespace, opt
from vtui.errors import UsageError

if TYPE_CHECKING:
    from vtui.analysis.calltree.handover import HandOverReport
    from vtui.analysis.calltree.tree import CallTree
    from vtui.commands import Loader
    from vtui.present.schema import Tree, TreeDiff

HELP = "the call tree / flame graph of a range, by CPU time or the GPU time each call launched"
FORMATS = ("table", "json", "folded")
TABLE_MIN_PCT = 0.5  # the table's default pruning (JSON and folded keep everything unless told)


class TreeOptions(Options, frozen=True):
    trace: Trace
    range: Range = None
    track: Track = None
    inverted: Annotated[bool, opt("bottom-up: each name with its callers beneath it")] = False
    weight: Annotated[str, opt("order and prune by total, self or GPU time (default total; folded: self or gpu)",
                               choices=WEIGHTS, mcp_help="total, self or gpu")] = "total"
    min_pct: Annotated[float | None, opt(f"hide nodes under P %% of the range (default {TABLE_MIN_PCT} in the table, "
                                         "0 otherwise)", metavar="P", mcp_default=1.0, ge=0, le=100,
                                         mcp_help="hide nodes under this % of the range")] = None
    depth: Annotated[int | None, opt("show N levels at most", metavar="N", mcp_default=8, ge=1, le=256,
                                     mcp_help="levels shown at most")] = None
    format: Annotated[str, opt("output format (default table)", choices=FORMATS, mcp=False)] = "table"
    keep_counters: Annotated[bool, opt("keep names that differ only by a counter apart (ProfilerStep#1, #2…)",
                                       mcp=False)] = False
    handover: Annotated[bool, opt("also: where Python hands over to C++, deep wrappers, GPU-less work repeated per "
                                  "step, syncs", mcp=False)] = False
    against: Annotated[str | None, opt("a second trace: the differential tree (same --range and --track)",
                                       metavar="B", mcp=False)] = None


OPTIONS = TreeOptions  # what `vtui mcp` reads for the tool's parameters


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, TreeOptions)


def check(opts: TreeOptions) -> None:
    if opts.min_pct is not None and not 0 <= opts.min_pct <= 100:
        raise UsageError("--min-pct must be a percentage from 0 to 100")
    if opts.depth is not None and opts.depth < 1:
        raise UsageError("--depth must be at least 1")
    if opts.handover and (opts.format == "folded" or opts.inverted or opts.against):
        raise UsageError("--handover reads the top-down tree: use it with --format table or json, without --inverted/--against")
    if opts.against and opts.format == "folded":
        raise UsageError("--against compares two trees: use --format table or json")


def build(opts: TreeOptions, trace: str, loader: Loader | None = None) -> tuple[CallTree, HandOverReport | None]:
    """The tree of ``trace`` (inverted when asked) and its hand-over report (with --handover)."""
    from vtui.analysis.calltree.tree import build_tree, invert

    store, rng, tracks = load(opts if trace == opts.trace else _other(opts, trace), loader)
    tree = build_tree(store, rng, tracks, merge_counters=not opts.keep_counters)
    handover = None
    if opts.handover:
        from vtui.analysis.calltree.handover import analyse_handover

        handover = analyse_handover(store, tree)
    return (invert(tree) if opts.inverted else tree), handover


def _other(opts: TreeOptions, trace: str) -> Any:
    import msgspec

    return msgspec.structs.replace(opts, trace=trace)


def compute(opts: TreeOptions, loader: Loader | None = None) -> Tree | TreeDiff:
    """The JSON report: the tree, or with ``against`` the differential tree."""
    from vtui.analysis.calltree.diff import diff_trees
    from vtui.present.tree_json import tree_diff_out, tree_out

    check(opts)
    min_pct = opts.min_pct if opts.min_pct is not None else 0.0
    tree, handover = build(opts, opts.trace, loader)
    if opts.against:
        return tree_diff_out(diff_trees(tree, build(opts, opts.against, loader)[0]), min_pct, opts.depth)
    return tree_out(tree, opts.weight, min_pct, opts.depth, handover)


def run(ns: argparse.Namespace) -> int:
    from vtui.analysis.calltree.tree import folded
    from vtui.present.schema import encode
    from vtui.present.tree_text import handover_lines, summary_lines, tree_lines
    from vtui.safe_text import say

    opts = from_namespace(TreeOptions, ns)
    if opts.format == "json":
        say(encode(compute(opts), indent=1), lossless=True)  # bidi / C1 / invisible characters escaped, lossless
        return 0
    check(opts)
    min_pct = opts.min_pct if opts.min_pct is not None else (TABLE_MIN_PCT if opts.format == "table" else 0.0)
    tree, report = build(opts, opts.trace)
    if opts.against:
        return _diff_text(opts, tree, min_pct)
    if opts.format == "folded":
        lines = folded(tree, "gpu" if opts.weight == "gpu" else "self")
    else:
        body = tree_lines(tree, opts.weight, min_pct, opts.depth)
        lines = [*body, "", *summary_lines(tree, opts.weight, len(body) - 2)]
        if report is not None:
            lines += ["", *handover_lines(report)]
    if lines:
        say("\n".join(lines))
    return 0


def _diff_text(opts: TreeOptions, tree_a: CallTree, min_pct: float) -> int:
    from vtui.analysis.calltree.diff import diff_trees
    from vtui.present.tree_text import diff_lines, summary_lines
    from vtui.safe_text import say

    assert opts.against is not None
    tree_b = build(opts, opts.against)[0]
    d = diff_trees(tree_a, tree_b)
    body = diff_lines(d, min_pct, opts.depth)
    say("\n".join([*body, "", *summary_lines(tree_a, "total", len(body) - 2, "A: "),
                   *summary_lines(tree_b, "total", len(body) - 2, "B: ")]))
    return 0
