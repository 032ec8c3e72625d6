"""`vtui diff A B [--range-a R] [--range-b R] [--step REGEX] [--top N] [--tolerance PCT] [--format F] [--table T]
[--fail-if FIGURE:+N%]...`, or several runs per side: `vtui diff A1 A2 A3 -- B1 B2 [options]`

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

TABLES = ("metrics", "ops", "steps", "tree", "steps_by_kind", "kernels", "parity", "runs")
RUN_TABLES = ("steps_by_kind", "kernels", "parity", "runs")
SIDE_SEPARATOR = "--"
B_RUNS = "--b-runs"  # what the separator becomes for argparse (which would drop a bare "--")

HELP = "compare two traces: metrics, operator diff, steps side by side"


def prepare_args(args: list[str]) -> list[str]:
    """``A1 A2 -- B1 B2 [options]``: the first bare ``--`` separates the sides' runs."""
    if SIDE_SEPARATOR in args:
        k = args.index(SIDE_SEPARATOR)
        return [*args[:k], B_RUNS, *args[k + 1:]]
    return args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", metavar="TRACE",
                        help="trace A (the baseline) and trace B; or A's runs, then -- and B's runs")
    parser.add_argument(B_RUNS, nargs="+", metavar="TRACE", help=argparse.SUPPRESS)
    parser.add_argument("--fail-if", action="append", default=[], metavar="FIGURE:+N%",
                        help="exit 1 when FIGURE (KIND.median, KIND.p90, tpot, ttft) of B crosses A's by N %% "
                             "beyond noise (repeatable; -N%%: a fall)")
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

    from vtui.analysis.base.ranges import compile_regex
    from vtui.analysis.diff.engine import diff_runs
    from vtui.analysis.diff.gate import GateSpecError, check, parse_gate
    from vtui.analysis.report.compare import compare
    from vtui.errors import UsageError
    from vtui.present.compare_json import comparison_dict
    from vtui.present.compare_text import diff_tables, diff_text
    from vtui.present.diff_runs_json import runs_dict
    from vtui.present.diff_runs_text import gate_lines, runs_lines
    from vtui.present.schema import dump
    from vtui.safe_text import say

    if opts.b_runs:
        a_paths, b_paths = list(opts.traces), list(opts.b_runs)
    elif len(opts.traces) == 2:
        a_paths, b_paths = [opts.traces[0]], [opts.traces[1]]
    else:
        raise UsageError("give two traces (A B), or A's runs, then --, then B's runs (A1 A2 -- B1 B2)")
    try:
        gates = [parse_gate(text) for text in opts.fail_if]
    except GateSpecError as exc:
        raise UsageError(str(exc)) from None
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
    if opts.table in ("tree", *RUN_TABLES) and fmt in ("csv", "md"):
        raise UsageError(f"--table {opts.table} is printed as a table or as json")
    runs_a = [_run(opts, path, opts.range_a) for path in a_paths]
    runs_b = [_run(opts, path, opts.range_b) for path in b_paths]
    store_a, range_a = runs_a[0].store, runs_a[0].range
    store_b, range_b = runs_b[0].store, runs_b[0].range
    assert range_a is not None and range_b is not None
    if opts.table == "tree":
        return _tree_diff(store_a, store_b, range_a, range_b, fmt)
    c = compare(store_a, store_b, range_a, range_b, opts.step, labels=(str(a_paths[0]), str(b_paths[0])),
                tolerance=opts.tolerance / 100)
    d = diff_runs(runs_a, runs_b, opts.step, tolerance=opts.tolerance / 100)
    results = [check(d, g) for g in gates]
    if fmt == "json":
        full = {**comparison_dict(c), **runs_dict(d, results)}
        say(dump("diff", {k: full[k] for k in ("a", "b", opts.table, *(("gate",) if results else ()))}
                 if opts.table else full), lossless=True)
    elif fmt in ("csv", "md"):
        say(diff_tables(c, fmt, opts.table, opts.top), lossless=fmt == "csv")
    elif opts.table in RUN_TABLES:
        say("\n".join(runs_lines(d, opts.top, opts.table)))
    else:
        c.a.label, c.b.label = Path(a_paths[0]).name, Path(b_paths[0]).name
        text = diff_text(c, opts.top, opts.table)
        say(text if opts.table else "\n".join([text, "", *runs_lines(d, opts.top)]))
    breaches = gate_lines(results)
    if breaches:
        import sys

        sys.stdout.flush()
        for line in breaches:
            print(line, file=sys.stderr)
        return 1
    return 0


def _run(opts: argparse.Namespace, path: str, text_range: str | None):
    from vtui.analysis.base.ranges import resolve_range
    from vtui.analysis.diff.engine import Run

    store = load_store(opts, path)
    return Run(store, str(path), resolve_range(store, text_range))


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
