"""The call tree as text: an indented table with bars (``vtui tree``), and the differential tree."""

from __future__ import annotations

import numpy as np

from vtui.analysis.calltree.diff import TreeDiff
from vtui.analysis.calltree.handover import HandOverReport
from vtui.analysis.calltree.tree import CallTree, printable
from vtui.present.bars import fraction_bar
from vtui.units import format_duration as fd

BAR_WIDTH = 12
NAME_WIDTH = 120  # longer names are cut (a 100,000-character name is one line, not a page)
INDENT = 2
MAX_INDENT = 40  # deeper rows say their depth instead of indenting further (a 10,000-deep chain stays readable)


def short(name: str, width: int = NAME_WIDTH) -> str:
    name = printable(name)
    return name if len(name) <= width else name[: width - 1] + "…"


def indent(depth: int) -> str:
    if depth <= MAX_INDENT:
        return " " * (INDENT * depth)
    return " " * (INDENT * MAX_INDENT) + f"{depth}› "


def walk(children, roots: list[int], max_depth: int | None) -> list[tuple[int, int]]:
    """(node, depth) in depth-first order, without recursion (trees can be thousands deep)."""
    out = []
    stack = [(r, 0) for r in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        out.append((node, depth))
        if max_depth is None or depth + 1 < max_depth:
            stack.extend((int(c), depth + 1) for c in reversed(children(node)))
    return out


def tree_lines(tree: CallTree, weight: str = "total", min_pct: float = 0.0, max_depth: int | None = None) -> list[str]:
    span = max(tree.range_ns, 1)
    w = tree.weight(weight)
    children = tree.kept_children(weight, min_pct)

    # the weight first (with its % of the range and a bar), then the other measures
    measures = [("total", "self time" if tree.inverted else "total", tree.total_ns)]
    if not tree.inverted:  # inverted, "self" is where a caller chain ends: not worth a column
        measures.append(("self", "self", tree.self_ns))
    if tree.gpu.present:
        measures.append(("gpu", "GPU", tree.gpu_ns))
    first = next((m for m in measures if m[2] is w), measures[0])
    others = [m for m in measures if m is not first]
    head = [first[1], "% range", ""] + [m[1] for m in others] + ["count", "call path"]
    rows = []
    for node, depth in walk(children, children(-1), max_depth):
        frac = w[node] / span
        cells = [fd(int(w[node])), f"{100.0 * frac:.1f}%", fraction_bar(frac, BAR_WIDTH)] + [fd(int(m[2][node])) for m in others]
        cells += [f"{int(tree.count[node]):,}", indent(depth) + short(tree.names[node])]
        rows.append(cells)
    return _columns(head, rows)


def _columns(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(head)]
    last = len(head) - 1

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in (2, last) else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def summary_lines(tree: CallTree, weight: str, shown: int, label: str = "") -> list[str]:
    kind = "bottom-up (callers beneath each name, by self time)" if tree.inverted else "top-down"
    out = [f"{label}{kind} call tree of {tree.slices:,} slices in {fd(tree.t0)} – {fd(tree.t1)} "
           f"({fd(tree.range_ns)}); weight {weight}; {shown:,} of {len(tree):,} nodes shown"]
    g = tree.gpu
    if g.present:
        out.append(f"GPU work in range {fd(g.total_ns)}: attributed to calls {fd(g.attributed_ns)}, "
                   f"launched outside the range/tracks {fd(g.outside_ns)}, launch unknown {fd(g.unknown_ns)}")
    return out


def diff_lines(d: TreeDiff, min_pct: float = 0.0, max_depth: int | None = None) -> list[str]:
    a_tot, b_tot = d.value("a", "total_ns"), d.value("b", "total_ns")
    share = np.maximum(100.0 * a_tot / max(d.a.range_ns, 1), 100.0 * b_tot / max(d.b.range_ns, 1))

    def children(n: int) -> list[int]:
        return [int(k) for k in d.children(n) if share[k] >= min_pct]

    rows = []
    for node, depth in walk(children, children(-1), max_depth):
        a, b = int(a_tot[node]), int(b_tot[node])
        rel = f"{100.0 * (b - a) / a:+.1f}%" if a else "new"
        rows.append([fd(a), fd(b), ("+" if b >= a else "−") + fd(abs(b - a)), rel, d.status(node),
                     indent(depth) + short(d.names[node])])
    head = ["A total", "B total", "Δ", "Δ%", "status", "call path"]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(head)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i >= 4 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def handover_lines(r: HandOverReport) -> list[str]:
    if not r.present:
        return ["Python → C++ hand-over: no Python frames (record with with_stack=True)"]
    out = [f"Python → C++ hand-over: {fd(r.python_self_ns)} in Python frames above the ops vs {fd(r.op_total_ns)} "
           f"in the ops they call ({r.python_pct:.1f}% Python); median {r.median_depth:g} Python frames above an op"]
    for h in r.handovers[:8]:
        out.append(f"  {fd(h.total_ns):>10}  ×{h.count:<6,} {h.python_depth:>3} frames  {short(h.name, 60)}"
                   f"  ← {short(h.path[-2], 60) if len(h.path) > 1 else ''}")
    if r.steps:
        out.append(f"steps: {r.steps} ({r.step_name})")
    for f in r.findings:
        out.append(f"[{f.kind}] {short(f.message, 200)}")
    return out
