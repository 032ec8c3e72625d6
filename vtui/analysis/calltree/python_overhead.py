"""Python overhead in traces recorded with stacks (``python_function`` slices): how deep the
Python call stacks go, how much time is spent in Python frames themselves rather than in the
operators they call, and the hottest frames by self time."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.base.stats import pct
from vtui.store.devices import cpu_op_mask, python_mask
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore


@dataclass
class PythonReport:
    present: bool
    frames: int = 0
    max_depth: int = 0  # Python frames on the deepest stack
    mean_depth: float = 0.0
    python_self_ns: int = 0
    op_self_ns: int = 0
    python_pct: float = 0.0  # of Python self + op self time: what the interpreter itself costs
    hottest: list[tuple[str, int, int]] = field(default_factory=list)  # (frame, self ns, count)


def python_depths(store, is_py: np.ndarray) -> np.ndarray:
    """Per slice: how many Python frames are on its stack, itself included (0 for non-Python)."""
    s = store.slices
    out = np.zeros(len(s), dtype=np.int64)
    if not len(s):
        return out
    for level in range(int(s.depth.max()) + 1):  # parents sit one level up, so are done first
        rows = np.flatnonzero(s.depth == level)
        par = s.parent[rows]
        inherited = np.where(par >= 0, out[np.maximum(par, 0)], 0)
        out[rows] = inherited + is_py[rows]
    return out


def analyse_python(store: TraceStore, rng: TimeRange | None = None, top: int = 10) -> PythonReport:
    """Python frames in ``rng`` (the whole trace when None)."""
    is_py = python_mask(store)
    rs = over(store, rng).slices
    py = rs.mask(is_py)
    if not len(py):
        return PythonReport(False)
    py_rows, self_ = rs.rows[py], rs.self_ns
    depth = python_depths(store, is_py.astype(np.int64))[py_rows]
    out = PythonReport(True, len(py_rows), int(depth.max()), float(depth.mean()))
    out.python_self_ns = int(self_[py].sum())
    out.op_self_ns = int(self_[rs.mask(cpu_op_mask(store))].sum())
    out.python_pct = pct(out.python_self_ns, out.python_self_ns + out.op_self_ns)
    names = store.slices.name_id[py_rows]
    uniq, inv = np.unique(names, return_inverse=True)
    sums = np.bincount(inv, weights=self_[py], minlength=len(uniq))
    counts = np.bincount(inv, minlength=len(uniq))
    for k in np.argsort(-sums, kind="stable")[:top].tolist():
        out.hottest.append((store.strings[int(uniq[k])], int(sums[k]), int(counts[k])))
    return out
