"""Draw a call tree as Rich segments: the indented tree with bars, and the icicle / flame graph
(rows = depth, width = weight). Pure functions of the tree, so the benchmark can time them alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rich.segment import Segment
from rich.style import Style

from vtui.analysis.calltree.tree import CallTree, by_level, printable
from vtui.present.bars import fraction_bar
from vtui.present.names import cut_middle
from vtui.present.tree_text import indent
from vtui.ui import colours
from vtui.ui.timeline.render import DIMMED, EMPTY, LIGHT_INK, SELECTED, colour_of
from vtui.units import format_duration as fd

TEXT = Style(color=colours.TEXT, bgcolor=colours.BACKGROUND)
MUTED = Style(color=colours.MUTED, bgcolor=colours.BACKGROUND)
MATCH = Style(color=colours.MATCH, bgcolor=colours.BACKGROUND, bold=True)
BAR_WIDTH = 14
EXPAND_PCT = 2.0  # nodes with at least this share of the view open at first


@dataclass
class FlameLayout:
    x0: np.ndarray  # float64 fraction of the view's width where each node starts
    x1: np.ndarray  # ... and ends
    by_depth: list[np.ndarray]  # per depth: nodes (with width) sorted by x0


def flame_layout(tree: CallTree, weight: str) -> FlameLayout:
    """Roots side by side, heaviest first; children from their parent's left edge, heaviest first."""
    w = tree.width(weight).astype(np.float64)
    n = len(tree)
    x0 = np.zeros(n)
    x1 = np.zeros(n)
    if not n:
        return FlameLayout(x0, x1, [])
    total = float(w[tree.roots()].sum()) or 1.0
    frac = w / total
    order = np.lexsort((np.arange(n), -frac, tree.parent))  # by parent, heaviest first
    sw = frac[order]
    csum = np.cumsum(sw) - sw  # exclusive running sum, restarted per parent below
    first = np.ones(n, dtype=bool)
    first[1:] = tree.parent[order][1:] != tree.parent[order][:-1]
    group_base = np.maximum.accumulate(np.where(first, csum, 0.0))
    offset = np.empty(n)
    offset[order] = csum - group_base
    by_depth = []
    for idx in by_level(tree.depth):
        par = tree.parent[idx]
        base = np.where(par >= 0, x0[np.maximum(par, 0)], 0.0)
        x0[idx] = base + offset[idx]
        end = x0[idx] + frac[idx]
        # children that overlap each other can sum past their parent: never draw outside it
        x1[idx] = np.where(par >= 0, np.minimum(end, x1[np.maximum(par, 0)]), end)
        vis = idx[x1[idx] > x0[idx]]
        by_depth.append(vis[np.argsort(x0[vis], kind="stable")])
    return FlameLayout(x0, x1, by_depth)


def flame_segments(tree: CallTree, layout: FlameLayout, depth: int, width: int, selected: int = -1,
                   marked: np.ndarray | None = None) -> list[Segment]:
    """One icicle row: each node at ``depth`` as a block with its name, gaps in the background."""
    if depth >= len(layout.by_depth) or width <= 0:
        return [Segment(" " * max(width, 0), EMPTY)]
    nodes = layout.by_depth[depth]
    c0 = np.round(layout.x0[nodes] * width).astype(np.int64)
    c1 = np.minimum(np.round(layout.x1[nodes] * width).astype(np.int64), width)
    wide = np.flatnonzero(c1 > c0)
    out: list[Segment] = []
    at = 0
    for i in wide.tolist():  # at most `width` blocks per row
        node, a, b = int(nodes[i]), int(c0[i]), int(c1[i])
        if a < at:
            continue
        if a > at:
            out.append(Segment(" " * (a - at), EMPTY))
        name = printable(tree.names[node])
        text = (name[: b - a - 1] + "│") if b - a >= 2 else "▌"
        if node == selected:
            style = SELECTED
        elif marked is not None and not marked[node]:
            style = Style(bgcolor=DIMMED, color=colours.DIMMED_INK)
        else:
            style = Style(bgcolor=colour_of(tree.names[node]), color=LIGHT_INK)
        out.append(Segment(text.ljust(b - a), style))
        at = b
    if at < width:
        out.append(Segment(" " * (width - at), EMPTY))
    return out


def visible_rows(tree: CallTree, weight: str, expanded: set[int]) -> list[tuple[int, int]]:
    """(node, depth) of the indented tree: children of expanded nodes, heaviest first."""
    out: list[tuple[int, int]] = []
    stack = [(int(r), 0) for r in reversed(tree.sorted_children(-1, weight).tolist())]
    while stack:
        node, depth = stack.pop()
        out.append((node, depth))
        if node in expanded:
            stack.extend((int(c), depth + 1) for c in reversed(tree.sorted_children(node, weight).tolist()))
    return out


def initially_expanded(tree: CallTree, weight: str) -> set[int]:
    w = tree.width(weight)
    total = max(int(w[tree.roots()].sum()), 1) if len(tree) else 1
    return set(np.flatnonzero(100.0 * w / total >= EXPAND_PCT).tolist())


NAME_ROOM = 32  # the name keeps this many cells (or its whole length) before any number column


def name_cells(tree: CallTree, rows: list[tuple[int, int]]) -> int:
    """The cells the widest (indent + marker + name, up to NAME_ROOM) of ``rows`` asks for."""
    return max((len(indent(d)) + 2 + min(len(printable(tree.names[n])), NAME_ROOM) for n, d in rows), default=0)


def tree_row_segments(tree: CallTree, node: int, depth: int, weight: str, scale: int, width: int,
                      expanded: bool, selected: bool = False, marked: np.ndarray | None = None,
                      cut: Callable[[str, int], str] = cut_middle, want: int | None = None) -> list[Segment]:
    """One line of the indented tree: a bar (weight / ``scale``, the heaviest node shown), the
    weight and its % of the range, self, GPU, count, the name (``cut(name, cells)`` fits it: the
    view passes one that keeps the names on screen distinct).  ``want``: the cells the names need
    (the view passes one for all its rows, so that every row drops the same columns).

    The name comes first: on a narrow screen the count, the bar, total, GPU and self drop (in that
    order) until the name has NAME_ROOM cells, and a name still too long is cut in the middle."""
    w = int(tree.weight(weight)[node])
    frac = w / scale if scale > 0 else 0.0
    kids = len(tree.children(node))
    marker = ("▾ " if expanded else "▸ ") if kids else "  "
    parts = {"weight": f"{fd(w):>10} {100.0 * w / max(tree.range_ns, 1):6.1f}%"}
    if weight != "total":
        parts["total"] = f"  {'self time' if tree.inverted else 'total'} {fd(int(tree.total_ns[node])):>10}"
    if weight != "self" and not tree.inverted:
        parts["self"] = f"  self {fd(int(tree.self_ns[node])):>10}"
    if tree.gpu.present and weight != "gpu":
        parts["gpu"] = f"  GPU {fd(int(tree.gpu_ns[node])):>10}"
    parts["count"] = f"  ×{int(tree.count[node]):<7,}"
    name = printable(tree.names[node])
    lead = indent(depth) + marker
    bar = fraction_bar(frac, BAR_WIDTH) + " "
    want = len(lead) + min(len(name), NAME_ROOM) if want is None else want
    for key in ("count", "bar", "total", "gpu", "self"):
        if len(bar) + sum(len(p) for p in parts.values()) + 1 + want <= width:
            break
        if key == "bar":
            bar = ""
        else:
            parts.pop(key, None)
    cols = "".join(parts.values()) + " "
    name = cut(name, max(width - len(bar) - len(cols) - len(lead), 1))
    colour = colour_of(tree.names[node])
    if selected:
        segs = [Segment(bar + cols + lead + name, SELECTED)]
    else:
        hit = marked is not None and bool(marked[node])
        segs = [Segment(bar, Style(color=colour, bgcolor=colours.BACKGROUND)), Segment(cols, TEXT),
                Segment(lead, MUTED), Segment(name, MATCH if hit else Style(color=colour, bgcolor=colours.BACKGROUND))]
    line = Segment.adjust_line_length(segs, width, EMPTY)
    return list(line)
