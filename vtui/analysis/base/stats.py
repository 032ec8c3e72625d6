"""Small numeric helpers the insight analyses share: interval unions, percentages and robust
summary statistics. Category and device rules live in `vtui.store.devices`, the range rule
(selection, clipped and self time) in `vtui.store.slicetime`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of [start, end) intervals as sorted, disjoint intervals."""
    if not len(starts):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    st, en = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    if not (st[1:] >= st[:-1]).all():  # often in order already (one track's rows): no sort then
        order = np.argsort(st, kind="stable")
        st, en = st[order], en[order]
    en = np.maximum.accumulate(en)
    # A new run starts where the start lies after every earlier end.
    new = np.ones(len(st), dtype=bool)
    new[1:] = st[1:] > en[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(st) - 1)
    return st[first], en[last]


def dense_unique(keys: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)``; by counting instead of sorting when the key space is small."""
    if space <= 4 * len(keys):
        present = np.zeros(space, dtype=bool)
        present[keys] = True
        ids = np.cumsum(present) - 1
        return np.flatnonzero(present), ids[keys]
    uniq, inv = np.unique(keys, return_inverse=True)
    return uniq, inv.reshape(-1)


def union_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    a, b = merge_intervals(starts, ends)
    return int((b - a).sum())


def pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


@dataclass(frozen=True)
class Stats:
    """Summary of a sample of durations (ns). p90 is numpy's default (linear) percentile."""

    count: int
    total: float
    mean: float
    median: float
    p90: float
    min: float
    max: float

    @classmethod
    def of(cls, values: np.ndarray | list[float]) -> Stats | None:
        v = np.asarray(values, dtype=np.float64)
        if not len(v):
            return None
        return cls(int(len(v)), float(v.sum()), float(v.mean()), float(np.median(v)),
                   float(np.percentile(v, 90)), float(v.min()), float(v.max()))

    def to_dict(self) -> dict[str, float]:
        return {"count": self.count, "total_ns": self.total, "mean_ns": self.mean, "median_ns": self.median,
                "p90_ns": self.p90, "min_ns": self.min, "max_ns": self.max}
