"""Differential call tree of two traces (or ranges): per call path, A, B and Δ, with the paths
only one side has marked added / removed."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.calltree.tree import CallTree

FIELDS = ("count", "total_ns", "self_ns", "gpu_ns")


@dataclass
class TreeDiff:
    """Nodes of the union of both trees' paths, in level order (a parent before its children)."""

    names: list[str]
    parent: np.ndarray  # int64, -1 at the top
    a_node: np.ndarray  # int64 node in A, -1 where A lacks the path
    b_node: np.ndarray  # int64 node in B, -1 where B lacks the path
    a: CallTree
    b: CallTree
    _kids: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.names)

    def value(self, side: str, field: str) -> np.ndarray:
        tree, nodes = (self.a, self.a_node) if side == "a" else (self.b, self.b_node)
        vals = getattr(tree, field)
        return np.where(nodes >= 0, vals[np.maximum(nodes, 0)], 0) if len(vals) else np.zeros(len(self), dtype=np.int64)

    def status(self, node: int) -> str:
        a, b = self.a_node[node] >= 0, self.b_node[node] >= 0
        return "both" if a and b else "removed" if a else "added"

    def children(self, node: int) -> np.ndarray:
        """Child nodes (roots for -1), the largest |Δ total| first."""
        if self._kids is None:
            order = np.argsort(self.parent, kind="stable")
            delta = np.abs(self.value("b", "total_ns") - self.value("a", "total_ns"))
            self._kids = order, np.searchsorted(self.parent[order], np.arange(-1, len(self) + 1)), delta
        order, bounds, delta = self._kids
        kids = order[bounds[node + 1]: bounds[node + 2]]
        return kids[np.lexsort((kids, -delta[kids]))]


def diff_trees(a: CallTree, b: CallTree) -> TreeDiff:
    """Match A's and B's nodes by path (name under a matched parent)."""
    names: list[str] = []
    parent: list[int] = []
    a_node: list[int] = []
    b_node: list[int] = []
    index: dict[tuple[int, str], int] = {}
    of_a = np.full(len(a), -1, dtype=np.int64)  # A node -> diff node
    of_b = np.full(len(b), -1, dtype=np.int64)
    # Level order in each tree puts a parent before its children, so its diff node exists already.
    for tree, of, mine in ((a, of_a, a_node), (b, of_b, b_node)):
        for n, p in enumerate(tree.parent.tolist()):
            dp = int(of[p]) if p >= 0 else -1
            key = (dp, tree.names[n])
            d = index.get(key)
            if d is None:
                d = index[key] = len(names)
                names.append(tree.names[n])
                parent.append(dp)
                a_node.append(-1)
                b_node.append(-1)
            of[n] = d
            mine[d] = n
    return TreeDiff(names, np.array(parent, dtype=np.int64), np.array(a_node, dtype=np.int64),
                    np.array(b_node, dtype=np.int64), a, b)
