"""``vtui tree --json``: call trees and differential call trees as nested plain data."""

from __future__ import annotations

import numpy as np

from vtui.analysis.calltree.diff import FIELDS, TreeDiff
from vtui.analysis.calltree.tree import JSON_DEPTH, CallTree


def nested_dicts(children, roots: list[int], make, max_depth: int | None = None) -> list[dict]:
    """Nested ``{"...": ..., "children": [...]}`` dicts without recursion: ``make(node, path)``
    gives a node's fields, ``children(node)`` its kept children in order."""
    limit = JSON_DEPTH if max_depth is None else min(max_depth, JSON_DEPTH)
    out: list[dict] = []
    stack: list[tuple[int, list[dict], list[str], int]] = [(r, out, [], 0) for r in reversed(roots)]
    while stack:
        node, into, path, depth = stack.pop()
        d = make(node, path)
        d["children"] = []
        into.append(d)
        if depth + 1 < limit:
            stack.extend((int(c), d["children"], d["path"], depth + 1) for c in reversed(children(node)))
    return out


def tree_dict(tree: CallTree, weight: str = "total", min_pct: float = 0.0, max_depth: int | None = None) -> dict:
    """The tree as JSON-able nested nodes (heaviest first), pruned by ``min_pct`` of the range and depth."""
    span = max(tree.range_ns, 1)
    w = tree.weight(weight)
    children = tree.kept_children(weight, min_pct)

    def make(n: int, path: list[str]) -> dict:
        return {"path": [*path, tree.names[n]], "name": tree.names[n], "count": int(tree.count[n]),
                "total_ns": int(tree.total_ns[n]), "self_ns": int(tree.self_ns[n]), "gpu_ns": int(tree.gpu_ns[n]),
                "gpu_self_ns": int(tree.gpu_self_ns[n]), "pct": round(100.0 * w[n] / span, 3)}

    g = tree.gpu
    return {"t0_ns": tree.t0, "t1_ns": tree.t1, "inverted": tree.inverted, "weight": weight, "slices": tree.slices,
            "nodes": len(tree),
            "gpu": {"present": g.present, "total_ns": g.total_ns, "attributed_ns": g.attributed_ns,
                    "outside_ns": g.outside_ns, "unknown_ns": g.unknown_ns},
            "roots": nested_dicts(children, children(-1), make, max_depth)}


def diff_dict(d: TreeDiff, min_pct: float = 0.0, max_depth: int | None = None) -> dict:
    """JSON-able nested nodes: A, B and Δ of each field, status; pruned by the larger side's % of its range."""
    vals = {f"{side}_{f}": d.value(side, f) for side in "ab" for f in FIELDS}
    span_a, span_b = max(d.a.range_ns, 1), max(d.b.range_ns, 1)
    share = np.maximum(100.0 * vals["a_total_ns"] / span_a, 100.0 * vals["b_total_ns"] / span_b)

    def children(n: int) -> list[int]:
        return [int(c) for c in d.children(n) if share[c] >= min_pct]

    def make(n: int, path: list[str]) -> dict:
        out: dict = {"path": [*path, d.names[n]], "name": d.names[n], "status": d.status(n)}
        for key, arr in vals.items():
            out[key] = int(arr[n])
        out["delta_total_ns"] = out["b_total_ns"] - out["a_total_ns"]
        out["delta_self_ns"] = out["b_self_ns"] - out["a_self_ns"]
        return out

    return {"a": {"t0_ns": d.a.t0, "t1_ns": d.a.t1, "slices": d.a.slices},
            "b": {"t0_ns": d.b.t0, "t1_ns": d.b.t1, "slices": d.b.slices},
            "roots": nested_dicts(children, children(-1), make, max_depth)}
