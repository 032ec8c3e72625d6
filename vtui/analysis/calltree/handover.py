"""Where Python hands over to C++ in a call tree (traces recorded with stacks), and three
findings the call tree makes easy: wrappers deeper than usual, work repeated in every step that
launches no GPU work, and synchronisation calls per step with the call path that makes them.

A hand-over is a call-tree node that is not a Python frame (an aten op, a runtime call, an
annotation) whose parent is one; its Python depth is the number of Python frames on its path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.base.stats import pct
from vtui.analysis.calltree.tree import CallTree, by_level
from vtui.analysis.steps.detect import find_step_rows
from vtui.store.devices import python_mask, sync_mask
from vtui.store.store import TraceStore

DEEP_EXTRA = 5  # a hand-over this many Python frames deeper than the median (and 1.5×) is "deep"
REPEAT_MIN_PCT = 1.0  # repeated GPU-less work worth a finding: this share of the steps' time
TOP = 5


@dataclass
class HandOver:
    name: str
    count: int
    total_ns: int
    python_depth: int
    path: list[str]
    self_ns: int = 0  # the hand-over node's own time (not in the calls under it)


@dataclass
class TreeFinding:
    kind: str  # "deep wrapper", "repeated without GPU work", "sync per step"
    message: str
    path: list[str]
    total_ns: int


@dataclass
class HandOverReport:
    present: bool  # the tree has Python frames
    python_self_ns: int = 0  # self time of the Python frames above the hand-overs
    op_total_ns: int = 0  # total time of the hand-over nodes (what the Python frames called)
    python_pct: float = 0.0  # python_self / (python_self + op_total)
    median_depth: float = 0.0  # Python frames above a hand-over, weighted by slice count
    handovers: list[HandOver] = field(default_factory=list)  # every one, heaviest first
    steps: int = 0
    step_name: str = ""
    findings: list[TreeFinding] = field(default_factory=list)


def node_mask(tree: CallTree, per_slice: np.ndarray) -> np.ndarray:
    """Per top-down node: the majority of its slices are in ``per_slice`` (a bool per slice)."""
    hits = per_slice[tree.rows] if len(tree.rows) else np.zeros(0, dtype=bool)
    return np.bincount(tree.row_node, weights=hits, minlength=len(tree)) * 2 > tree.count


def analyse_handover(store: TraceStore, tree: CallTree, step_regex: str | None = None) -> HandOverReport:
    if tree.inverted:
        raise ValueError("hand-overs are read from the top-down tree")
    is_py = node_mask(tree, python_mask(store))
    if not is_py.any():
        return HandOverReport(False)
    levels = by_level(tree.depth)
    py_depth = is_py.astype(np.int64)  # Python frames on each node's path, itself included
    parent_py = np.zeros(len(tree), dtype=bool)
    for idx in levels[1:]:
        py_depth[idx] += py_depth[tree.parent[idx]]
        parent_py[idx] = is_py[tree.parent[idx]]
    hand = np.flatnonzero(~is_py & parent_py)
    out = HandOverReport(True)
    above = np.zeros(len(tree), dtype=bool)  # Python frames with a hand-over beneath them (Python all the way)
    above[tree.parent[hand]] = True
    for idx in reversed(levels[1:]):
        up = idx[above[idx] & is_py[idx] & parent_py[idx]]
        above[tree.parent[up]] = True
    out.python_self_ns = int(tree.self_ns[above].sum())
    out.op_total_ns = int(tree.total_ns[hand].sum())
    out.python_pct = pct(out.python_self_ns, out.python_self_ns + out.op_total_ns)
    if len(hand):
        depths = np.repeat(py_depth[hand], tree.count[hand])
        out.median_depth = float(np.median(depths))
        order = hand[np.argsort(-tree.total_ns[hand], kind="stable")]
        out.handovers = [HandOver(tree.names[n], int(tree.count[n]), int(tree.total_ns[n]), int(py_depth[n]),
                                  tree.path(n), int(tree.self_ns[n])) for n in order.tolist()]
        limit = max(out.median_depth + DEEP_EXTRA, 1.5 * out.median_depth)
        deep = order[py_depth[order] > limit][:TOP]
        for n in deep.tolist():
            out.findings.append(TreeFinding(
                "deep wrapper", f"{tree.names[n]} is reached through {py_depth[n]} Python frames (median "
                f"{out.median_depth:g}) in {tree.count[n]:,} calls", tree.path(n), int(tree.total_ns[n])))
    _step_findings(store, tree, out, is_py, step_regex)
    return out


def _step_findings(store: TraceStore, tree: CallTree, out: HandOverReport, is_py: np.ndarray,
                   step_regex: str | None) -> None:
    """Work under the step node that runs at least once per step yet launches no GPU work; syncs per step."""
    label, _, rows = find_step_rows(store, step_regex)
    if not len(rows):
        return
    s = store.slices
    rows = rows[(s.start_ns[rows] >= tree.t0) & (s.start_ns[rows] < tree.t1)]
    if not len(rows):
        return
    at = np.minimum(np.searchsorted(tree.rows, rows), max(len(tree.rows) - 1, 0))
    found = rows[tree.rows[at] == rows] if len(tree.rows) else rows[:0]
    if not len(found):
        return
    is_step = np.zeros(len(tree), dtype=bool)
    is_step[tree.row_node[np.searchsorted(tree.rows, found)]] = True
    steps = len(rows)
    out.steps, out.step_name = steps, label
    step_time = int(s.dur_ns[rows].sum())
    under = np.zeros(len(tree), dtype=bool)  # strictly below a step node
    for idx in by_level(tree.depth)[1:]:
        par = tree.parent[idx]
        under[idx] = under[par] | is_step[par]
    sync = node_mask(tree, sync_mask(store)) & under
    repeated = under & (tree.count >= steps) & (tree.gpu_ns == 0) & ~is_py & ~sync
    repeated &= 100.0 * tree.total_ns >= REPEAT_MIN_PCT * step_time
    top_only = repeated & ~(repeated[np.maximum(tree.parent, 0)] & (tree.parent >= 0))
    if tree.gpu.present and steps >= 2:  # "every step" needs more than one
        for n in np.flatnonzero(top_only)[np.argsort(-tree.total_ns[top_only], kind="stable")][:TOP].tolist():
            out.findings.append(TreeFinding(
                "repeated without GPU work", f"{tree.names[n]} runs {tree.count[n] / steps:.1f}× per step "
                f"({pct(int(tree.total_ns[n]), step_time):.1f}% of step time) and launches no GPU work",
                tree.path(n), int(tree.total_ns[n])))
    for n in np.flatnonzero(sync)[np.argsort(-tree.count[sync], kind="stable")][:TOP].tolist():
        out.findings.append(TreeFinding(
            "sync per step", f"{tree.names[n]} {tree.count[n] / steps:.1f}× per step, called from "
            f"{' › '.join(tree.path(n)[-4:-1])}", tree.path(n), int(tree.total_ns[n])))
