"""Small numeric helpers the insight analyses share: clipping to a range, category and name
masks over the slice table, interval unions and robust summary statistics."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from vtui.store.containment import self_time
from vtui.store.store import TraceStore

# Kineto's device-side activity (current and 2021 legacy names). Annotations mirrored onto a
# stream (gpu_user_annotation) are not GPU work and would double-count it.
GPU_KERNEL_CATS = frozenset({"kernel"})
GPU_MEMCPY_CATS = frozenset({"gpu_memcpy", "memcpy"})
GPU_MEMSET_CATS = frozenset({"gpu_memset", "memset"})
GPU_ACTIVITY_CATS = GPU_KERNEL_CATS | GPU_MEMCPY_CATS | GPU_MEMSET_CATS
CUDA_RUNTIME_CATS = frozenset({"cuda_runtime", "runtime", "cuda_driver"})
PYTHON_CATS = frozenset({"python_function"})
# Pseudo-slices a profiler writes about itself (the "PyTorch Profiler (0)" span).
PROFILER_CATS = frozenset({"trace"})


def string_mask(store: TraceStore, pred) -> np.ndarray:
    """Boolean per interned string: pred(text)."""
    return np.fromiter((bool(pred(s)) for s in store.strings), dtype=bool, count=len(store.strings))


def cat_mask(store: TraceStore, cats: frozenset[str] | set[str]) -> np.ndarray:
    """Per slice: its category (lower case) is one of ``cats``."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return string_mask(store, lambda s: s.lower() in cats)[store.slices.cat_id]


def name_mask(store: TraceStore, regex: re.Pattern[str]) -> np.ndarray:
    """Per slice: ``regex.search(name)``."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return string_mask(store, regex.search)[store.slices.name_id]


def clipped_dur(store: TraceStore, t0: int, t1: int) -> np.ndarray:
    """Duration of each slice inside [t0, t1] (0 for slices outside)."""
    s = store.slices
    return np.maximum(np.minimum(s.end_ns, t1) - np.maximum(s.start_ns, t0), 0)


def clipped_self(store: TraceStore, t0: int, t1: int) -> np.ndarray:
    """Self time inside [t0, t1]: clipped duration minus the union of the direct children's
    clipped intervals (0 for slices outside)."""
    s = store.slices
    start = np.maximum(s.start_ns, t0)
    end = np.maximum(np.minimum(s.end_ns, t1), start)
    return self_time(s.parent, start, end)


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of [start, end) intervals as sorted, disjoint intervals."""
    if not len(starts):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    st = np.asarray(starts, dtype=np.int64)[order]
    en = np.maximum.accumulate(np.asarray(ends, dtype=np.int64)[order])
    # A new run starts where the start lies after every earlier end.
    new = np.ones(len(st), dtype=bool)
    new[1:] = st[1:] > en[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(st) - 1)
    return st[first], en[last]


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
