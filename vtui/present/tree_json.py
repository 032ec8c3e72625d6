"""``vtui tree --json``: call trees and differential call trees as their output Structs
(``Tree``, ``TreeDiff``), built node by node without a dict in between."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec
import numpy as np

from vtui.analysis.calltree.diff import FIELDS
from vtui.analysis.calltree.diff import TreeDiff as DiffOfTrees
from vtui.analysis.calltree.handover import HandOverReport as Handover
from vtui.analysis.calltree.tree import JSON_DEPTH, CallTree
from vtui.present.schema import VERSIONS, HandOverReport, Tree, TreeGpu, TreeNode
from vtui.present.schema_diff import DiffNode, TreeDiff, TreeSide

Node = TypeVar("Node", TreeNode, DiffNode)


def nested(children: Callable[[int], list[int]], roots: list[int], make: Callable[[int, list[str]], Node],
           max_depth: int | None = None) -> list[Node]:
    """Nested nodes without recursion: ``make(node, path)`` gives a node (its ``children`` empty),
    ``children(node)`` its kept children in order."""
    limit = JSON_DEPTH if max_depth is None else min(max_depth, JSON_DEPTH)
    out: list[Node] = []
    stack: list[tuple[int, list[Node], list[str], int]] = [(r, out, [], 0) for r in reversed(roots)]
    while stack:
        node, into, path, depth = stack.pop()
        d = make(node, path)
        into.append(d)
        if depth + 1 < limit:
            stack.extend((int(c), d.children, d.path, depth + 1) for c in reversed(children(node)))
    return out


def tree_out(tree: CallTree, weight: str = "total", min_pct: float = 0.0, max_depth: int | None = None,
             handover: Handover | None = None) -> Tree:
    """The tree (heaviest first), pruned by ``min_pct`` of the range and depth; with the hand-over
    report when given."""
    span = max(tree.range_ns, 1)
    w = tree.weight(weight)
    children = tree.kept_children(weight, min_pct)
    count, total, self_ns = tree.count.tolist(), tree.total_ns.tolist(), tree.self_ns.tolist()
    gpu, gpu_self = tree.gpu_ns.tolist(), tree.gpu_self_ns.tolist()

    def make(n: int, path: list[str]) -> TreeNode:
        return TreeNode(path=[*path, tree.names[n]], name=tree.names[n], count=count[n], total_ns=total[n],
                        self_ns=self_ns[n], gpu_ns=gpu[n], gpu_self_ns=gpu_self[n],
                        pct=float(round(100.0 * w[n] / span, 3)), children=[])

    g = tree.gpu
    return Tree(schema_version=VERSIONS["tree"], t0_ns=tree.t0, t1_ns=tree.t1, inverted=tree.inverted, weight=weight,
                slices=tree.slices, nodes=len(tree),
                gpu=TreeGpu(present=g.present, total_ns=g.total_ns, attributed_ns=g.attributed_ns,
                            outside_ns=g.outside_ns, unknown_ns=g.unknown_ns),
                roots=nested(children, children(-1), make, max_depth),
                handover=None if handover is None else msgspec.convert(handover, HandOverReport, from_attributes=True))


def tree_diff_out(d: DiffOfTrees, min_pct: float = 0.0, max_depth: int | None = None) -> TreeDiff:
    """A, B and Δ of each field per call path, with its status; pruned by the larger side's % of its range."""
    vals = {f"{side}_{f}": d.value(side, f) for side in "ab" for f in FIELDS}
    span_a, span_b = max(d.a.range_ns, 1), max(d.b.range_ns, 1)
    share = np.maximum(100.0 * vals["a_total_ns"] / span_a, 100.0 * vals["b_total_ns"] / span_b)
    cols = {key: arr.tolist() for key, arr in vals.items()}

    def children(n: int) -> list[int]:
        return [int(c) for c in d.children(n) if share[c] >= min_pct]

    def make(n: int, path: list[str]) -> DiffNode:
        at = {key: col[n] for key, col in cols.items()}
        return DiffNode(path=[*path, d.names[n]], name=d.names[n], status=d.status(n), **at,
                        delta_total_ns=at["b_total_ns"] - at["a_total_ns"],
                        delta_self_ns=at["b_self_ns"] - at["a_self_ns"], children=[])

    return TreeDiff(schema_version=VERSIONS["tree-diff"], a=TreeSide(t0_ns=d.a.t0, t1_ns=d.a.t1, slices=d.a.slices),
                    b=TreeSide(t0_ns=d.b.t0, t1_ns=d.b.t1, slices=d.b.slices),
                    roots=nested(children, children(-1), make, max_depth))
