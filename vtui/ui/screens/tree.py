"""The call tree screen (key `F`): the range's call tree as an indented tree with bars, or as an
icicle / flame graph; zoom into a node with enter (esc / backspace back along the breadcrumbs),
`w` switches the weight (total / self / GPU), `I` inverts, `/` marks matching names, `t` shows
the node's longest slice in the timeline."""

from __future__ import annotations

import numpy as np
from rich.segment import Segment
from textual.app import ComposeResult
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer, Static

from vtui.analysis.calltree.tree import WEIGHTS, CallTree, build_tree, invert, printable, zoom
from vtui.errors import UsageError
from vtui.present.names import cut_middle, distinct_cuts
from vtui.regex_guard import UserRegex, compile_user
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore
from vtui.ui.keys import bindings
from vtui.ui.screens.computed import ComputedScreen
from vtui.ui.screens.flame import (
    FlameLayout,
    flame_layout,
    flame_segments,
    initially_expanded,
    name_cells,
    tree_row_segments,
    visible_rows,
)
from vtui.ui.screens.modals import PromptScreen
from vtui.ui.timeline.render import EMPTY
from vtui.ui.trace_text import visible
from vtui.units import format_duration as fd


class CallTreeView(Widget, can_focus=True):
    """Draws one CallTree (the current zoom) as a tree or an icicle; keeps the selected node."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.calltree: CallTree | None = None
        self.weight = "total"
        self.flame = False
        self.selected = -1
        self.expanded: set[int] = set()
        self.marked: np.ndarray | None = None  # bool per node: names matching the search
        self.top = 0
        self._rows: list[tuple[int, int]] | None = None
        self._layout: FlameLayout | None = None
        self._cuts: dict = {}  # cells -> {name: its cut, distinct}; "want" -> name_cells of the rows

    # ---- state -------------------------------------------------------------------------------
    def show_tree(self, tree: CallTree, weight: str, flame: bool, marked: np.ndarray | None = None) -> None:
        self.calltree, self.weight, self.flame, self.marked = tree, weight, flame, marked
        self.expanded = initially_expanded(tree, weight)
        roots = tree.sorted_children(-1, weight)
        self.selected = int(roots[0]) if len(roots) else -1
        self.top = 0
        self._invalidate()

    def _invalidate(self) -> None:
        self._rows = None
        self._cuts = {}
        self._layout = None
        self._keep_visible()
        self.refresh()

    def _cut(self, name: str, cells: int) -> str:
        """``name`` cut to ``cells``, distinct from every other name of the tree's open rows."""
        if len(name) <= cells:
            return name
        if cells not in self._cuts:
            names = sorted({printable(self.calltree.names[n]) for n, _ in self.rows()})
            self._cuts[cells] = dict(zip(names, distinct_cuts(names, cells)))
        return self._cuts[cells].get(name) or cut_middle(name, cells)

    def _want(self) -> int:
        """The cells the open rows' names need: one answer for all rows, so their columns line up."""
        if "want" not in self._cuts:
            self._cuts["want"] = name_cells(self.calltree, self.rows())
        return self._cuts["want"]

    def rows(self) -> list[tuple[int, int]]:
        if self._rows is None:
            self._cuts = {}
            self._rows = visible_rows(self.calltree, self.weight, self.expanded) if self.calltree is not None else []
        return self._rows

    def geometry(self) -> FlameLayout:
        if self._layout is None:
            self._layout = flame_layout(self.calltree, self.weight)
        return self._layout

    def _line_of_selection(self) -> int:
        if self.flame:
            return int(self.calltree.depth[self.selected]) if self.selected >= 0 else 0
        for i, (node, _) in enumerate(self.rows()):
            if node == self.selected:
                return i
        return 0

    def _keep_visible(self) -> None:
        if self.calltree is None:
            return
        height = max(self.size.height, 1)
        line = self._line_of_selection()
        if line < self.top:
            self.top = line
        elif line >= self.top + height:
            self.top = line - height + 1
        total = len(self.geometry().by_depth) if self.flame else len(self.rows())
        self.top = max(0, min(self.top, max(total - height, 0)))

    def select_node(self, node: int) -> None:
        if self.calltree is None or node < 0:
            return
        # in the tree, open the way down to it
        p = int(self.calltree.parent[node])
        opened = False
        while p >= 0:
            if p not in self.expanded:
                self.expanded.add(p)
                opened = True
            p = int(self.calltree.parent[p])
        self.selected = node
        if opened:
            self._rows = None
        self._keep_visible()
        self.refresh()

    # ---- moves -----------------------------------------------------------------------------------
    def move_by(self, key: str) -> None:
        """up / down / left / right / home / end / pageup / pagedown."""
        if self.calltree is None or self.selected < 0:
            return
        if self.flame:
            self._move_flame(key)
        else:
            self._move_tree(key)

    def _move_tree(self, key: str) -> None:
        rows = self.rows()
        nodes = [n for n, _ in rows]
        i = nodes.index(self.selected) if self.selected in nodes else 0
        page = max(self.size.height - 1, 1)
        if key in ("up", "down", "pageup", "pagedown", "home", "end"):
            step = {"up": -1, "down": 1, "pageup": -page, "pagedown": page, "home": -len(rows), "end": len(rows)}[key]
            self.select_node(nodes[max(0, min(len(nodes) - 1, i + step))])
        elif key == "right":
            if len(self.calltree.children(self.selected)) and self.selected not in self.expanded:
                self.expanded.add(self.selected)
                self._invalidate()
            elif len(self.calltree.children(self.selected)):
                self.select_node(int(self.calltree.sorted_children(self.selected, self.weight)[0]))
        elif key == "left":
            if self.selected in self.expanded:
                self.expanded.discard(self.selected)
                self._invalidate()
            elif self.calltree.parent[self.selected] >= 0:
                self.select_node(int(self.calltree.parent[self.selected]))

    def _move_flame(self, key: str) -> None:
        t, lay = self.calltree, self.geometry()
        node = self.selected
        if key == "up" and t.parent[node] >= 0:
            self.select_node(int(t.parent[node]))
        elif key == "down":
            kids = [k for k in t.sorted_children(node, self.weight).tolist() if lay.x1[k] > lay.x0[k]]
            if kids:
                self.select_node(int(kids[0]))
        elif key in ("left", "right"):
            row = lay.by_depth[int(t.depth[node])]
            at = np.flatnonzero(row == node)
            if len(at):
                j = int(at[0]) + (1 if key == "right" else -1)
                if 0 <= j < len(row):
                    self.select_node(int(row[j]))

    def toggle_flame(self) -> None:
        self.flame = not self.flame
        self.top = 0
        self._invalidate()

    # ---- drawing -------------------------------------------------------------------------------------
    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        if self.calltree is None:
            return 1
        return len(self.geometry().by_depth) if self.flame else len(self.rows())

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        t = self.calltree
        if t is None or not len(t):
            text = "no slices in this range" if t is not None and y == 0 else ""
            return Strip([Segment(text.ljust(width)[:width], EMPTY)], width)
        line = self.top + y
        if self.flame:
            segs = flame_segments(t, self.geometry(), line, width, self.selected, self.marked)
            return Strip(segs, width)
        rows = self.rows()
        if line >= len(rows):
            return Strip.blank(width, EMPTY)
        node, depth = rows[line]
        scale = int(t.weight(self.weight)[t.roots()].max())
        segs = tree_row_segments(t, node, depth, self.weight, scale, width, node in self.expanded,
                                 node == self.selected, self.marked, cut=self._cut, want=self._want())
        return Strip(segs, width)


class CallTreeScreen(ComputedScreen[int | None]):
    """Closes with the slice row to show in the timeline (``t``), or None."""

    KEY_SCOPE = "tree"  # its section of the help
    BINDINGS = bindings("tree")
    TITLE_WIDGET = "#ct-title"
    STATUS_WIDGET = "#ct-status"
    FAILED = "could not build the call tree"
    COMPUTING = "Computing the call tree…"

    def __init__(self, store: TraceStore, rng: TimeRange, tracks: np.ndarray | None = None, title: str = "") -> None:
        super().__init__()
        self.store, self.range, self.tracks = store, over(store, rng), tracks
        self.title_text = title
        self.weight = "total"
        self.inverted = False
        self.flame = False
        self.pattern: UserRegex | None = None
        self.base: dict[bool, CallTree] = {}  # top-down (False) and bottom-up (True)
        self.stack: list[CallTree] = []  # zoom levels: the first is the base tree
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="ct-title", markup=False)
        yield Static("", id="ct-crumbs", markup=False)
        yield CallTreeView(id="ct-view")
        yield Static(self.COMPUTING, id="ct-status", markup=False)
        yield Footer()

    def compute(self) -> CallTree:
        return build_tree(self.store, self.range, self.tracks)

    def show_error(self, message: str) -> None:
        self.error = message
        super().show_error(message)

    def show(self, tree: CallTree) -> None:
        self.base[False] = tree
        self.stack = [tree]
        self._show()
        self.query_one(CallTreeView).focus()

    # ---- state -> widgets ---------------------------------------------------------------------------
    @property
    def view(self) -> CallTreeView:
        return self.query_one(CallTreeView)

    @property
    def current(self) -> CallTree | None:
        return self.stack[-1] if self.stack else None

    def _marks(self, tree: CallTree) -> np.ndarray | None:
        if self.pattern is None:
            return None
        return self.pattern.mask(tree.names)

    def _show(self) -> None:
        tree = self.current
        if tree is None:
            return
        self.view.show_tree(tree, self.weight, self.flame, self._marks(tree))
        self.refresh_title()
        self._refresh_status()

    def _scope(self) -> str:
        return "whole trace" if self.range.whole else f"range {fd(self.range.t0)} – {fd(self.range.t1)}"

    def title_line(self) -> str:
        kind = "bottom-up" if self.inverted else "top-down"
        view = "flame graph" if self.flame else "tree"
        find = f" · /{printable(self.pattern.pattern)}/" if self.pattern else ""
        return (f"Call tree · {self.title_text} · {self._scope()} ({fd(self.range.span_ns)}) · {kind} · {view} · "
                f"weight {self.weight}{find}")

    def refresh_title(self) -> None:
        """The title line and, below it, the zoom's breadcrumbs."""
        super().refresh_title()
        crumbs = ["all"] + [printable(t.names[int(t.roots()[0])]) for t in self.stack[1:]] if self.stack else ["all"]
        text = " › ".join(c if len(c) <= 40 else c[:39] + "…" for c in crumbs)
        self.query_one("#ct-crumbs", Static).update(text + ("   (esc / backspace: back)" if len(crumbs) > 1 else ""))

    def _refresh_status(self) -> None:
        tree, node = self.current, self.view.selected
        if tree is None:
            return
        lines = []
        if node >= 0:
            span = max(self.range.span_ns, 1)
            gpu = f" · GPU {fd(int(tree.gpu_ns[node]))} (direct {fd(int(tree.gpu_self_ns[node]))})" if tree.gpu.present else ""
            lines.append(f"{printable(tree.names[node])[:120]} · ×{int(tree.count[node]):,} · total "
                         f"{fd(int(tree.total_ns[node]))} ({100.0 * tree.total_ns[node] / span:.1f}% of range) · self "
                         f"{fd(int(tree.self_ns[node]))}{gpu}")
        else:
            lines.append("no slices in this range")
        g = tree.gpu
        if g.present:
            lines.append(f"GPU work in range {fd(g.total_ns)}: attributed {fd(g.attributed_ns)} · launched outside "
                         f"range/tracks {fd(g.outside_ns)} · launch unknown {fd(g.unknown_ns)}")
        else:
            lines.append(f"{tree.slices:,} slices · {len(tree):,} call paths · no GPU work in this trace")
        self.query_one("#ct-status", Static).update("\n".join(lines))

    # ---- actions --------------------------------------------------------------------------------------
    def action_move(self, key: str) -> None:
        self.view.move_by(key)
        self._refresh_status()

    def action_zoom(self) -> None:
        tree, node = self.current, self.view.selected
        if tree is None or node < 0:
            return
        if len(tree.roots()) == 1 and node == int(tree.roots()[0]) and len(self.stack) > 1:
            return  # already the root of this zoom
        self.stack.append(zoom(tree, node))
        self._show()

    def action_back(self) -> None:
        if len(self.stack) > 1:
            self.stack.pop()
            self._show()
        else:
            self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_toggle_view(self) -> None:
        self.flame = not self.flame
        self.view.toggle_flame()
        self.refresh_title()

    def action_weight(self) -> None:
        tree = self.current
        choices = [w for w in WEIGHTS if w != "gpu" or (tree is not None and tree.gpu.present)]
        self.weight = choices[(choices.index(self.weight) + 1) % len(choices)] if self.weight in choices else "total"
        keep = self.view.selected
        self._show()
        self.view.select_node(keep)
        self._refresh_status()

    def action_invert(self) -> None:
        if False not in self.base:
            return
        self.inverted = not self.inverted
        if self.inverted and True not in self.base:
            self.base[True] = invert(self.base[False])
        self.stack = [self.base[self.inverted]]
        self._show()

    def action_search(self) -> None:
        self.app.push_screen(PromptScreen("Mark call-tree nodes whose name matches (regex; empty clears)",
                                          "aten::.*mm|Linear", self.pattern.pattern if self.pattern else ""),
                             self._search_done)

    def _search_done(self, text: str | None) -> None:
        if text is None:
            return
        try:
            self.pattern = compile_user(text) if text.strip() else None
        except UsageError as exc:
            self.notify(visible(str(exc)), severity="error", markup=False)
            return
        tree = self.current
        if tree is None:
            return
        self.view.marked = self._marks(tree)
        self.view.refresh()
        self.refresh_title()
        if self.pattern is not None:
            self.action_next_match()

    def action_next_match(self) -> None:
        tree, marks = self.current, self.view.marked
        if tree is None or marks is None or not marks.any():
            self.notify("No marked node (press / to find)", timeout=2)
            return
        hits = np.flatnonzero(marks)
        heavy = hits[np.lexsort((hits, -tree.width(self.weight)[hits]))]  # heaviest first, then the next
        at = np.flatnonzero(heavy == self.view.selected)
        self.view.select_node(int(heavy[(int(at[0]) + 1) % len(heavy)] if len(at) else heavy[0]))
        self._refresh_status()

    def action_handover(self) -> None:
        """The range's hand-over findings (read from the top-down tree, whatever is shown)."""
        if False not in self.base:
            self.notify("The call tree is still being built", timeout=2)
            return
        from vtui.ui.screens.handover_view import HandOverScreen

        self.app.push_screen(HandOverScreen(self.store, self.base[False], f"{self.title_text} · {self._scope()}"))

    def action_timeline(self) -> None:
        tree, node = self.current, self.view.selected
        if tree is None or node < 0:
            return
        row = tree.longest_slice(node)
        if row < 0:
            self.notify("No slice for this node", timeout=2)
            return
        self.dismiss(row)
