"""`vtui diff A B [--range-a R] [--range-b R] [--step REGEX] [--top N] [--tolerance PCT] [--format F] [--table T]`

Compares two traces (or two ranges): headline metrics with A, B, Δ, Δ% and which is better; every
operator and GPU kernel by name with count, total and mean in A and B and a status (added,
removed, faster, slower, same), sorted by |Δ total|; and step i of A next to step i of B.
"Same" means |B − A| ≤ the tolerance (default 5 %) × |A|, or, for times, ≤ 1 µs.
``--format json`` (or ``--json``) prints all three; ``md`` prints them as Markdown sections (or the
one ``--table`` names); ``csv`` prints one table (``--table``, default ``ops``), every row.
Example: vtui diff before.json.gz after.json.gz --range-a 100ms: --format csv --table ops
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from vtui.commands import add_load_arguments, load_store
from vtui.commands.common import check_range, check_top
from vtui.present.tabular import FORMATS

if TYPE_CHECKING:
    from vtui.store.slicetime import TimeRange

TABLES = ("metrics", "ops", "steps", "tree")

HELP = "compare two traces: metrics, operator diff, steps side by side"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", help="trace A (the baseline)")
    parser.add_argument("b", help="trace B (compared with A)")
    parser.add_argument("--range-a", metavar="R", help="range of A, relative to its start (e.g. 10ms:25ms)")
    parser.add_argument("--range-b", metavar="R", help="range of B, relative to its start")
    parser.add_argument("--step", metavar="REGEX", help="regex for the step slices in both (default: detected)")
    parser.add_argument("--top", type=int, default=25, help="operators listed in text (default 25; --json has all)")
    parser.add_argument("--tolerance", type=float, default=5.0, metavar="PCT",
                        help="a difference within PCT %% of A is 'same' (default 5; times within 1 µs are too)")
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default), json (one object: metrics, ops, steps), md, or csv (one --table)")
    parser.add_argument("--table", choices=TABLES,
                        help="only this table (any format; csv: default ops); tree: the differential call tree "
                             "(table or json)")
    parser.add_argument("--json", action="store_true", help="same as --format json")
    add_load_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.analysis.base.ranges import compile_regex, resolve_range
    from vtui.analysis.report.compare import compare
    from vtui.errors import UsageError
    from vtui.present.compare_json import comparison_dict
    from vtui.present.compare_text import diff_tables, diff_text
    from vtui.present.schema import dump
    from vtui.safe_text import say

    if opts.json and opts.format not in ("table", "json"):
        raise UsageError(f"--json and --format {opts.format} ask for two different outputs: give one")
    fmt = "json" if opts.json else opts.format
    if opts.step:
        compile_regex(opts.step)  # a bad regex is a usage error before two loads
    check_top(opts.top)
    check_range(opts.range_a)
    check_range(opts.range_b)
    if not 0 <= opts.tolerance < 100:
        raise UsageError("--tolerance must be a percentage from 0 to under 100")
    if opts.table == "tree" and fmt in ("csv", "md"):
        raise UsageError("--table tree is printed as a table or as json")
    store_a = load_store(opts, opts.a)
    range_a = resolve_range(store_a, opts.range_a)
    store_b = load_store(opts, opts.b)
    range_b = resolve_range(store_b, opts.range_b)
    if opts.table == "tree":
        return _tree_diff(store_a, store_b, range_a, range_b, fmt)
    c = compare(store_a, store_b, range_a, range_b, opts.step, labels=(str(opts.a), str(opts.b)),
                tolerance=opts.tolerance / 100)
    if fmt == "json":
        full = comparison_dict(c)
        say(dump("diff", {k: full[k] for k in ("a", "b", opts.table)} if opts.table else full), lossless=True)
    elif fmt in ("csv", "md"):
        say(diff_tables(c, fmt, opts.table, opts.top), lossless=fmt == "csv")
    else:
        c.a.label, c.b.label = Path(opts.a).name, Path(opts.b).name
        say(diff_text(c, opts.top, opts.table))
    return 0


def _tree_diff(store_a, store_b, range_a: TimeRange, range_b: TimeRange, fmt: str) -> int:
    """The differential call tree: per call path A, B and Δ, added and removed paths."""
    from vtui.analysis.calltree.diff import diff_trees
    from vtui.analysis.calltree.tree import build_tree
    from vtui.present.schema import dump
    from vtui.present.tree_json import diff_dict
    from vtui.present.tree_text import diff_lines
    from vtui.safe_text import say

    d = diff_trees(build_tree(store_a, range_a), build_tree(store_b, range_b))
    if fmt == "json":
        say(dump("tree-diff", diff_dict(d)), lossless=True)
    else:
        say("\n".join(diff_lines(d)))
    return 0
