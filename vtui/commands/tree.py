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

from vtui.analysis.calltree.tree import WEIGHTS
from vtui.commands.common import add_trace_arguments, load

HELP = "the call tree / flame graph of a range, by CPU time or the GPU time each call launched"
FORMATS = ("table", "json", "folded")
TABLE_MIN_PCT = 0.5  # the table's default pruning (JSON and folded keep everything unless told)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument("--inverted", action="store_true", help="bottom-up: each name with its callers beneath it")
    parser.add_argument("--weight", choices=WEIGHTS, default="total",
                        help="order and prune by total, self or GPU time (default total; folded: self or gpu)")
    parser.add_argument("--min-pct", type=float, default=None, metavar="P",
                        help=f"hide nodes under P %% of the range (default {TABLE_MIN_PCT} in the table, 0 otherwise)")
    parser.add_argument("--depth", type=int, default=None, metavar="N", help="show N levels at most")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default table)")
    parser.add_argument("--keep-counters", action="store_true",
                        help="keep names that differ only by a counter apart (ProfilerStep#1, #2…)")
    parser.add_argument("--handover", action="store_true",
                        help="also: where Python hands over to C++, deep wrappers, GPU-less work repeated per step, syncs")
    parser.add_argument("--against", metavar="B", help="a second trace: the differential tree (same --range and --track)")


def run(opts: argparse.Namespace) -> int:
    from vtui.analysis.calltree.tree import build_tree, folded, invert
    from vtui.errors import UsageError
    from vtui.present.schema import dump
    from vtui.present.tree_json import tree_dict
    from vtui.present.tree_text import handover_lines, summary_lines, tree_lines
    from vtui.safe_text import say

    if opts.min_pct is not None and not 0 <= opts.min_pct <= 100:
        raise UsageError("--min-pct must be a percentage from 0 to 100")
    if opts.depth is not None and opts.depth < 1:
        raise UsageError("--depth must be at least 1")
    if opts.handover and (opts.format == "folded" or opts.inverted or opts.against):
        raise UsageError("--handover reads the top-down tree: use it with --format table or json, without --inverted/--against")
    if opts.against and opts.format == "folded":
        raise UsageError("--against compares two trees: use --format table or json")
    min_pct = opts.min_pct if opts.min_pct is not None else (TABLE_MIN_PCT if opts.format == "table" else 0.0)
    store, rng, tracks = load(opts)
    tree = build_tree(store, rng, tracks, merge_counters=not opts.keep_counters)
    report = None
    if opts.handover:
        from dataclasses import asdict

        from vtui.analysis.calltree.handover import analyse_handover

        report = analyse_handover(store, tree)
    if opts.inverted:
        tree = invert(tree)
    if opts.against:
        return _diff(opts, tree, min_pct)
    if opts.format == "folded":
        lines = folded(tree, "gpu" if opts.weight == "gpu" else "self")
    elif opts.format == "json":
        doc = tree_dict(tree, opts.weight, min_pct, opts.depth)
        if report is not None:
            doc["handover"] = asdict(report)
        say(dump("tree", doc, indent=1), lossless=True)  # bidi / C1 / invisible characters escaped, lossless
        return 0
    else:
        body = tree_lines(tree, opts.weight, min_pct, opts.depth)
        lines = [*body, "", *summary_lines(tree, opts.weight, len(body) - 2)]
        if report is not None:
            lines += ["", *handover_lines(report)]
    if lines:
        say("\n".join(lines))
    return 0


def _diff(opts: argparse.Namespace, tree_a, min_pct: float) -> int:
    from vtui.analysis.calltree.diff import diff_trees
    from vtui.analysis.calltree.tree import build_tree, invert
    from vtui.present.schema import dump
    from vtui.present.tree_json import diff_dict
    from vtui.present.tree_text import diff_lines, summary_lines
    from vtui.safe_text import say

    other = argparse.Namespace(**{**vars(opts), "trace": opts.against})
    store_b, rng_b, tracks = load(other)
    tree_b = build_tree(store_b, rng_b, tracks, merge_counters=not opts.keep_counters)
    if opts.inverted:
        tree_b = invert(tree_b)
    d = diff_trees(tree_a, tree_b)
    if opts.format == "json":
        say(dump("tree-diff", diff_dict(d, min_pct, opts.depth), indent=1), lossless=True)
        return 0
    body = diff_lines(d, min_pct, opts.depth)
    say("\n".join([*body, "", *summary_lines(tree_a, "total", len(body) - 2, "A: "),
                     *summary_lines(tree_b, "total", len(body) - 2, "B: ")]))
    return 0
