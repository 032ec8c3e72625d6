"""Slice aggregation over a time range: Perfetto's area-selection "Slices" table, and more.

Per group (name, category, track or an arg value): count, total and self time clipped to the
range, average / min / max of the clipped durations, and the share of range × track time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vtui.analysis.selection import clipped_durations, slice_rows
from vtui.errors import UsageError
from vtui.store.store import TraceStore

GROUPINGS = ("name", "cat", "track")  # plus "arg:KEY"


@dataclass(frozen=True)
class AggRow:
    key: str
    count: int
    total_ns: int
    self_ns: int
    avg_ns: float
    min_ns: int
    max_ns: int
    pct: float  # total / (range length × tracks with slices in the selection) × 100
    rows: np.ndarray  # slice rows of the group (for highlighting and jumping)

    def as_dict(self) -> dict:
        return {"name": self.key, "count": self.count, "total_ns": self.total_ns, "self_ns": self.self_ns,
                "avg_ns": round(self.avg_ns, 1), "min_ns": self.min_ns, "max_ns": self.max_ns,
                "pct": round(self.pct, 3)}


@dataclass(frozen=True)
class Aggregation:
    by: str
    t0: int
    t1: int
    tracks: int  # tracks with at least one selected slice (the % denominator)
    slices: int
    rows: list[AggRow]


SORT_KEYS = ("total", "self", "count", "avg", "min", "max", "name")


def check_grouping(by: str) -> str:
    if by in GROUPINGS or (by.startswith("arg:") and len(by) > 4):
        return by
    raise UsageError(f"unknown grouping {by!r} (use name, cat, track or arg:KEY)")


def aggregate(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None, by: str = "name",
              sort: str = "total") -> Aggregation:
    """Aggregate the slices in [t0, t1] on ``tracks`` (all when None), grouped ``by``."""
    check_grouping(by)
    rows = slice_rows(store, t0, t1, tracks)
    clip = clipped_durations(store, rows, t0, t1)
    self_clip = clip - _children_clipped(store, rows, clip)
    keys, label_of = _group(store, rows, by)
    n_tracks = len(np.unique(store.slices.track[rows]))
    denom = max(t1 - t0, 1) * max(n_tracks, 1)
    out: list[AggRow] = []
    if len(rows):
        uniq, inverse = np.unique(keys, return_inverse=True)
        count = np.bincount(inverse, minlength=len(uniq))
        total = np.bincount(inverse, weights=clip, minlength=len(uniq))
        self_total = np.bincount(inverse, weights=self_clip, minlength=len(uniq))
        order = np.lexsort((clip, inverse))  # by group, then clipped duration
        bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
        for g in range(len(uniq)):
            members = order[bounds[g] : bounds[g + 1]]
            tot = int(round(total[g]))
            out.append(AggRow(key=label_of(int(uniq[g])), count=int(count[g]), total_ns=tot, self_ns=int(round(self_total[g])),
                              avg_ns=float(tot / count[g]), min_ns=int(clip[members[0]]), max_ns=int(clip[members[-1]]),
                              pct=100.0 * tot / denom, rows=rows[members]))
    return Aggregation(by=by, t0=t0, t1=t1, tracks=n_tracks, slices=len(rows), rows=sort_rows(out, sort))


def sort_rows(rows: list[AggRow], sort: str = "total", descending: bool = True) -> list[AggRow]:
    if sort not in SORT_KEYS:
        raise UsageError(f"unknown sort column {sort!r} (use {', '.join(SORT_KEYS)})")
    if sort == "name":
        return sorted(rows, key=lambda r: r.key, reverse=not descending)
    field = {"total": "total_ns", "self": "self_ns", "avg": "avg_ns", "min": "min_ns", "max": "max_ns"}.get(sort, sort)
    return sorted(rows, key=lambda r: (getattr(r, field), r.key), reverse=descending)


def _children_clipped(store: TraceStore, rows: np.ndarray, clip: np.ndarray) -> np.ndarray:
    """Per selected row, the clipped time of its direct children (children of a selected
    slice that overlap the range are themselves selected: they lie inside their parent)."""
    if not len(rows):
        return np.zeros(0, dtype=np.int64)
    parent = store.slices.parent[rows]
    pos = np.searchsorted(rows, parent)
    pos = np.minimum(pos, len(rows) - 1)
    is_child = (parent >= 0) & (rows[pos] == parent)
    sums = np.bincount(pos[is_child], weights=clip[is_child], minlength=len(rows))
    return np.rint(sums).astype(np.int64)


def _group(store: TraceStore, rows: np.ndarray, by: str) -> tuple[np.ndarray, Callable[[int], str]]:
    """Integer group key per row, and how to name a key."""
    if by == "name":
        return store.slices.name_id[rows], store.strings.__getitem__
    if by == "cat":
        return store.slices.cat_id[rows], store.strings.__getitem__
    if by == "track":
        return store.slices.track[rows], lambda t: store.tracks[t].label
    key = by[4:]
    texts: dict[str, int] = {}
    out = np.empty(len(rows), dtype=np.int64)
    for i, row in enumerate(rows.tolist()):  # args decode lazily: only the selected slices
        value = store.slice_args(row).get(key)
        text = "—" if value is None else value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        out[i] = texts.setdefault(text, len(texts))
    labels = list(texts)
    return out, labels.__getitem__
