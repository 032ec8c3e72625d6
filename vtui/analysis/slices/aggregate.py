"""Slice aggregation over a time range: Perfetto's area-selection "Slices" table, and more.

Per group (name, category, track or an arg value): count, total and self time clipped to the
range, average / min / max of the clipped durations, and the share of range × track time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import msgspec
import numpy as np

from vtui.errors import UsageError
from vtui.store.slicetime import TimeRange, over, range_slices
from vtui.store.store import TraceStore

GROUPINGS = ("name", "cat", "track", "shape")  # plus "arg:KEY"


@dataclass(frozen=True)
class AggRow:
    key: str
    count: int
    total_ns: int
    self_ns: int
    avg_ns: float
    min_ns: int
    max_ns: int
    pct: float  # the share of the range's wall time a slice of the group runs (their union) × 100
    group: int  # group id inside its Aggregation (see Aggregation.slices_of)

    def as_dict(self) -> dict:
        return {"name": self.key, "count": self.count, "total_ns": self.total_ns, "self_ns": self.self_ns,
                "avg_ns": round(self.avg_ns, 1), "min_ns": self.min_ns, "max_ns": self.max_ns,
                "pct": round(self.pct, 3)}


@dataclass(frozen=True)
class Aggregation:
    by: str
    t0: int
    t1: int
    tracks: int  # tracks with at least one selected slice
    slices: int
    rows: list[AggRow]
    selected: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)  # slice rows
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)  # group per row
    clipped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)

    def slices_of(self, row: AggRow) -> np.ndarray:
        """The group's slice rows, shortest to longest (clipped), found on demand (for highlight/jump)."""
        members = np.flatnonzero(self.keys == row.group)
        return self.selected[members[np.argsort(self.clipped[members], kind="stable")]]

    def with_rows(self, rows: list[AggRow]) -> Aggregation:
        return replace(self, rows=rows)


SORT_KEYS = ("total", "self", "count", "avg", "min", "max", "name")


def check_grouping(by: str) -> str:
    if by in GROUPINGS or (by.startswith("arg:") and len(by) > 4):
        return by
    raise UsageError(f"unknown grouping {by!r} (use name, cat, track, shape or arg:KEY)")


def aggregate(store: TraceStore, rng: TimeRange | None = None, tracks: np.ndarray | None = None, by: str = "name",
              sort: str = "total", only: np.ndarray | None = None) -> Aggregation:
    """Aggregate the slices in ``rng`` (the whole trace when None) on ``tracks`` (all when None),
    grouped ``by``; ``only`` (slice rows, e.g. search matches) keeps just those slices, each with
    its own self time."""
    check_grouping(by)
    rng = over(store, rng)
    t0, t1 = rng.t0, rng.t1
    rs = rng.slices if tracks is None else range_slices(store, t0, t1, tracks)  # the one range rule
    rows, clip, self_clip = rs.rows, rs.clip, rs.self_ns
    if only is not None:
        keep = np.isin(rows, only)
        rows, clip, self_clip = rows[keep], clip[keep], self_clip[keep]
    keys, label_of = _group(store, rows, by)
    n_tracks = int(np.count_nonzero(np.bincount(store.slices.track[rows]))) if len(rows) else 0
    span = max(t1 - t0, 1)
    out: list[AggRow] = []
    if len(rows):
        size = int(keys.max()) + 1  # keys are small ids: bincount instead of sorting
        count = np.bincount(keys, minlength=size)
        total = np.bincount(keys, weights=clip, minlength=size)
        self_total = np.bincount(keys, weights=self_clip, minlength=size)
        lo = np.full(size, np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.zeros(size, dtype=np.int64)
        np.minimum.at(lo, keys, clip)
        np.maximum.at(hi, keys, clip)
        wall = covered_ns(store, rows, keys, t0, t1, size)
        for g in np.flatnonzero(count).tolist():
            tot = int(round(total[g]))
            out.append(AggRow(key=label_of(g), count=int(count[g]), total_ns=tot, self_ns=int(round(self_total[g])),
                              avg_ns=float(tot / count[g]), min_ns=int(lo[g]), max_ns=int(hi[g]),
                              pct=100.0 * float(wall[g]) / span, group=g))
    return Aggregation(by=by, t0=t0, t1=t1, tracks=n_tracks, slices=len(rows), rows=sort_rows(out, sort),
                       selected=rows, keys=keys, clipped=clip)


def covered_ns(store: TraceStore, rows: np.ndarray, keys: np.ndarray, t0: int, t1: int, size: int) -> np.ndarray:
    """Per group: the time in [t0, t1] during which at least one of its slices runs, overlaps
    (nested calls of one name, the same name on other tracks) counted once, as a wall-time share
    is read. One sort and one running maximum (offset per group so it never carries over)."""
    s = store.slices
    a, b = np.clip(s.start_ns[rows], t0, t1), np.clip(s.end_ns[rows], t0, t1)
    order = np.lexsort((a, keys))
    k, a, b = keys[order], a[order], b[order]
    first = np.ones(len(k), dtype=bool)
    first[1:] = k[1:] != k[:-1]
    rank = np.cumsum(first) - 1
    room = t1 - t0 + 1
    if int(rank[-1]) * room < 2**62:
        off = rank.astype(np.int64) * room
        reach = np.maximum.accumulate(b - t0 + off) - off + t0  # the furthest end so far in the group
    else:  # (a huge range and very many groups) the same running maximum, group by group
        reach = np.concatenate([np.maximum.accumulate(part) for part in np.split(b, np.flatnonzero(first)[1:])])
    before = np.empty_like(reach)
    before[1:] = reach[:-1]
    before[first] = a[first]  # a group's first slice: nothing covered before it
    new = np.maximum(b - np.maximum(a, before), 0)
    return np.bincount(k, weights=new, minlength=size)


def sort_rows(rows: list[AggRow], sort: str = "total", descending: bool = True) -> list[AggRow]:
    if sort not in SORT_KEYS:
        raise UsageError(f"unknown sort column {sort!r} (use {', '.join(SORT_KEYS)})")
    if sort == "name":
        return sorted(rows, key=lambda r: r.key, reverse=not descending)
    field = {"total": "total_ns", "self": "self_ns", "avg": "avg_ns", "min": "min_ns", "max": "max_ns"}.get(sort, sort)
    return sorted(rows, key=lambda r: (getattr(r, field), r.key), reverse=descending)


def _group(store: TraceStore, rows: np.ndarray, by: str) -> tuple[np.ndarray, Callable[[int], str]]:
    """Integer group key per row, and how to name a key."""
    if by == "name":
        return store.slices.name_id[rows].astype(np.int64), store.strings.__getitem__
    if by == "cat":
        return store.slices.cat_id[rows].astype(np.int64), store.strings.__getitem__
    if by == "track":
        return store.slices.track[rows].astype(np.int64), lambda t: store.tracks[t].label
    if by == "shape":
        return _by_shape(store, rows)
    key = by[4:]
    texts: dict[str, int] = {}
    out = np.empty(len(rows), dtype=np.int64)
    for i, row in enumerate(rows.tolist()):  # args decode lazily: only the selected slices
        value = store.slice_args(row).get(key)
        text = "—" if value is None else value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        out[i] = texts.setdefault(text, len(texts))
    labels = list(texts)
    return out, labels.__getitem__


def _by_shape(store: TraceStore, rows: np.ndarray) -> tuple[np.ndarray, Callable[[int], str]]:
    """An op by its recorded shapes: name, ``Input Dims`` and the tensor types (``record_shapes``);
    a slice without them is grouped by its name alone. Only the selected rows' args are decoded."""
    from vtui.analysis.base.shapes import raw_value, shape_ids

    tid, triples = shape_ids(store, rows)  # the one shapes reader (C-backed, msgspec fallback)
    pairs = np.stack([store.slices.name_id[rows].astype(np.int64), tid], axis=1) if len(rows) else np.zeros((0, 2), np.int64)
    uniq, first, out = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # groups numbered in the order first seen, as before
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    out = rank[out.reshape(-1)]
    keys = [(int(nid), triples[int(t)][0], triples[int(t)][1]) for nid, t in uniq[order].tolist()]
    labels: list[str] = []
    for nid, dims, types in keys:  # (the concrete inputs are not part of the group)
        d, t = raw_value(msgspec.Raw(dims)), raw_value(msgspec.Raw(types))
        if d is None:
            labels.append(store.strings[nid])
            continue
        shown = json.dumps(d, separators=(",", ":"))
        kinds = ",".join(x for x in (t if isinstance(t, list) else []) if isinstance(x, str) and x and x != "Scalar")
        labels.append(f"{store.strings[nid]} {shown}" + (f" ({kinds})" if kinds else ""))
    # Keys that read the same (types differing only in their scalar arguments) are one group.
    ids: dict[str, int] = {}
    remap = np.array([ids.setdefault(label, len(ids)) for label in labels], dtype=np.int64)
    return (remap[out] if len(out) else out), list(ids).__getitem__
