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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from vtui.commands import load_store
from vtui.commands.common import check_range, check_top
from vtui.commands.options import Options, add_options, from_namespace, opt
from vtui.errors import UsageError
from vtui.present.tabular import FORMATS

if TYPE_CHECKING:
    from vtui.commands import Loader
    from vtui.present.schema import Diff, TreeDiff

TABLES = ("metrics", "ops", "steps", "tree", "steps_by_kind", "kernels", "parity", "runs")
RUN_TABLES = ("steps_by_kind", "kernels", "parity", "runs")
SIDE_SEPARATOR = "--"
B_RUNS = "--b-runs"  # what the separator becomes for argparse (which would drop a bare "--")

HELP = "compare two traces: metrics, operator diff, steps side by side"


class DiffOptions(Options, frozen=True):
    # the command line's sides: "A B", or "A1 A2 -- B1 B2"; the tool's: a, b, more_a, more_b
    traces: Annotated[list[str], opt("trace A (the baseline) and trace B; or A's runs, then -- and B's runs",
                                     positional=True, metavar="TRACE", mcp=False)] = []
    b_runs: Annotated[list[str] | None, opt("SUPPRESS", flag=B_RUNS, several=True, metavar="TRACE", mcp=False)] = None
    a: Annotated[str | None, opt("trace A, the baseline", cli=False, mcp_required=True)] = None
    b: Annotated[str | None, opt("trace B, compared with A", cli=False, mcp_required=True)] = None
    fail_if: Annotated[list[str], opt("exit 1 when FIGURE (KIND.median, KIND.p90, tpot, ttft) of B crosses A's by N %% "
                                      "beyond noise (repeatable; -N%%: a fall)", metavar="FIGURE:+N%", mcp=False)] = []
    range_a: Annotated[str | None, opt("range of A, relative to its start (e.g. 10ms:25ms)", metavar="R",
                                       mcp_help="range of A, e.g. 100ms:")] = None
    range_b: Annotated[str | None, opt("range of B, relative to its start", metavar="R",
                                       mcp_help="range of B")] = None
    step: Annotated[str | None, opt("regex for the step slices in both (default: detected)", metavar="REGEX",
                                    mcp_help="regex for the step slices in both")] = None
    top: Annotated[int, opt("operators listed in text (default 25; --json has all)", mcp=False)] = 25
    tolerance: Annotated[float, opt("a difference within PCT %% of A is 'same' (default 5; times within 1 µs are too)",
                                    metavar="PCT", mcp=False)] = 5.0
    format: Annotated[str, opt("table (default), json (one object: metrics, ops, steps), md, or csv (one --table)",
                               choices=FORMATS, mcp=False)] = "table"
    table: Annotated[str | None, opt("only this table (any format; csv: default ops); tree: the differential call tree "
                                     "(table or json)", choices=TABLES,
                                     mcp_help="only metrics, ops, steps, tree, steps_by_kind, kernels, parity or "
                                              "runs")] = None
    json: Annotated[bool, opt("same as --format json", mcp=False)] = False
    more_a: Annotated[list[str] | None, opt("further runs of A (several runs per side)", cli=False)] = None
    more_b: Annotated[list[str] | None, opt("further runs of B", cli=False)] = None


OPTIONS = DiffOptions  # what `vtui mcp` reads for the tool's parameters


def prepare_args(args: list[str]) -> list[str]:
    """``A1 A2 -- B1 B2 [options]``: the first bare ``--`` separates the sides' runs."""
    if SIDE_SEPARATOR in args:
        k = args.index(SIDE_SEPARATOR)
        return [*args[:k], B_RUNS, *args[k + 1:]]
    return args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, DiffOptions)


def sides(opts: DiffOptions) -> tuple[list[str], list[str]]:
    """Each side's runs: the tool's a, b and more; the command line's A B, or A1 A2 -- B1 B2."""
    if opts.a is not None and opts.b is not None:
        return [opts.a, *(opts.more_a or [])], [opts.b, *(opts.more_b or [])]
    if opts.b_runs:
        return list(opts.traces), list(opts.b_runs)
    if len(opts.traces) == 2:
        return [opts.traces[0]], [opts.traces[1]]
    raise UsageError("give two traces (A B), or A's runs, then --, then B's runs (A1 A2 -- B1 B2)")


@dataclass
class Compared:
    """What the outputs are made of: the first runs' comparison and the run-against-run diff, or
    (``--table tree``) the differential call tree."""

    a_paths: list[str]
    b_paths: list[str]
    comparison: Any = None
    runs: Any = None
    gates: list[Any] | None = None
    tree: Any = None


def output_format(opts: DiffOptions) -> str:
    if opts.json and opts.format not in ("table", "json"):
        raise UsageError(f"--json and --format {opts.format} ask for two different outputs: give one")
    return "json" if opts.json else opts.format


def analyse(opts: DiffOptions, fmt: str, loader: Loader | None = None) -> Compared:
    from vtui.analysis.base.ranges import compile_regex
    from vtui.analysis.diff.engine import diff_runs
    from vtui.analysis.diff.gate import GateSpecError, check, parse_gate
    from vtui.analysis.report.compare import compare

    a_paths, b_paths = sides(opts)
    try:
        gates = [parse_gate(text) for text in opts.fail_if]
    except GateSpecError as exc:
        raise UsageError(str(exc)) from None
    if opts.step:
        compile_regex(opts.step)  # a bad regex is a usage error before two loads
    check_top(opts.top)
    check_range(opts.range_a)
    check_range(opts.range_b)
    if not 0 <= opts.tolerance < 100:
        raise UsageError("--tolerance must be a percentage from 0 to under 100")
    if opts.table in ("tree", *RUN_TABLES) and fmt in ("csv", "md"):
        raise UsageError(f"--table {opts.table} is printed as a table or as json")
    runs_a = [_run(opts, path, opts.range_a, loader) for path in a_paths]
    runs_b = [_run(opts, path, opts.range_b, loader) for path in b_paths]
    store_a, range_a = runs_a[0].store, runs_a[0].range
    store_b, range_b = runs_b[0].store, runs_b[0].range
    assert range_a is not None and range_b is not None
    if opts.table == "tree":
        from vtui.analysis.calltree.diff import diff_trees
        from vtui.analysis.calltree.tree import build_tree

        return Compared(a_paths, b_paths, tree=diff_trees(build_tree(store_a, range_a), build_tree(store_b, range_b)))
    c = compare(store_a, store_b, range_a, range_b, opts.step, labels=(str(a_paths[0]), str(b_paths[0])),
                tolerance=opts.tolerance / 100)
    d = diff_runs(runs_a, runs_b, opts.step, tolerance=opts.tolerance / 100)
    return Compared(a_paths, b_paths, c, d, [check(d, g) for g in gates])


def report(opts: DiffOptions, got: Compared) -> Diff | TreeDiff:
    from vtui.present.compare_json import comparison_parts
    from vtui.present.diff_runs_json import runs_parts
    from vtui.present.schema import VERSIONS, Diff
    from vtui.present.tree_json import tree_diff_out

    if got.tree is not None:
        return tree_diff_out(got.tree)
    full = {**comparison_parts(got.comparison), **runs_parts(got.runs, got.gates)}
    keys = ("a", "b", opts.table, *(("gate",) if got.gates else ())) if opts.table else tuple(full)
    return Diff(schema_version=VERSIONS["diff"], **{k: full[k] for k in keys})


def compute(opts: DiffOptions, loader: Loader | None = None) -> Diff | TreeDiff:
    """The JSON report (with ``--table tree``, the differential call tree)."""
    return report(opts, analyse(opts, "json", loader))


def run(ns: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.present.compare_text import diff_tables, diff_text
    from vtui.present.diff_runs_text import gate_lines, runs_lines
    from vtui.present.schema import encode
    from vtui.present.tree_text import diff_lines
    from vtui.safe_text import say

    opts = from_namespace(DiffOptions, ns)
    fmt = output_format(opts)
    got = analyse(opts, fmt)
    c, d = got.comparison, got.runs
    if fmt == "json":
        say(encode(report(opts, got)), lossless=True)
    elif got.tree is not None:
        say("\n".join(diff_lines(got.tree)))
    elif fmt in ("csv", "md"):
        say(diff_tables(c, fmt, opts.table, opts.top), lossless=fmt == "csv")
    elif opts.table in RUN_TABLES:
        say("\n".join(runs_lines(d, opts.top, opts.table)))
    else:
        c.a.label, c.b.label = Path(got.a_paths[0]).name, Path(got.b_paths[0]).name
        text = diff_text(c, opts.top, opts.table)
        say(text if opts.table else "\n".join([text, "", *runs_lines(d, opts.top)]))
    breaches = gate_lines(got.gates or [])
    if breaches:
        import sys

        sys.stdout.flush()
        for line in breaches:
            print(line, file=sys.stderr)
        return 1
    return 0


def _run(opts: DiffOptions, path: str, text_range: str | None, loader: Loader | None):
    from vtui.analysis.base.ranges import resolve_range
    from vtui.analysis.diff.engine import Run

    store = load_store(opts, path, loader=loader)
    return Run(store, str(path), resolve_range(store, text_range))
