"""The device work a CPU slice *launched*: GPU rows paired with the runtime call that launched them,
and, for any set of CPU slices, the work whose launch call lies inside each of them.

Launches are paired by flow arrows (Kineto's ``ac2g``) first, then by the ``correlation`` arg that
the runtime call and its GPU work share (a ``cudaGraphLaunch`` / ``hipGraphLaunch`` has one
correlation for every kernel of the graph and often no flow). Attribution is by the call, never by
time overlap: in replay traces the CPU runs 100+ ms ahead of the GPU, so a step's kernels run after
the step has ended.

Public API:
- ``launch_of(store)``: per slice row, the CPU launch-call row of that device work (-1 elsewhere).
- ``device_work_launches(store)``: every device work row (sorted) with its launch-call row.
- ``launched_by(store, rows)``: (GPU rows, index into ``rows`` of the slice that launched each: the
  innermost one holding the call; for steps, the one the call starts in); ``launched_spans`` adds
  their start and end.
- ``launched_gpu_ns(store, rows)``: per row of ``rows``, the union length of the work it launched.
- ``launched_work(store, rows)``: that, with the count and the first start / last end of the work.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtui.analysis.base.stats import merge_intervals
from vtui.store.correlate import correlation_ids
from vtui.store.devices import device_work_kinds, runtime_mask
from vtui.store.store import TraceStore

_LAUNCH_OF = "launched.launch_of"


def launch_of(store: TraceStore) -> np.ndarray:
    """Per slice row: the runtime call that launched this device work; -1 for other rows and for
    work with no known launch. Computed once per store."""
    return store.memo(_LAUNCH_OF, lambda: _pair_all(store))



def device_work_launches(store: TraceStore) -> tuple[np.ndarray, np.ndarray]:
    """Device work rows (sorted) and the CPU runtime call that launched each (-1 unknown), from the
    store's one launch pairing (``launch_of``: flows, then correlation ids)."""
    rows = store.memo("device_work_rows", lambda: np.flatnonzero(device_work_kinds(store) > 0).astype(np.int64))
    return rows, launch_of(store)[rows]

def launch_of_if_known(store: TraceStore) -> np.ndarray | None:
    """``launch_of`` if already computed, else None: what a redraw may use without paying for the
    pairing (it decodes the args of every launch call and GPU op without a flow)."""
    return store.derived.get(_LAUNCH_OF)


def _pair_all(store: TraceStore) -> np.ndarray:
    s = store.slices
    launch = np.full(len(s), -1, dtype=np.int64)
    is_gpu = device_work_kinds(store) > 0
    if not is_gpu.any():
        return launch
    f = store.flows
    if len(f):
        ok = (f.src_slice >= 0) & (f.dst_slice >= 0)
        src, dst = f.src_slice[ok].astype(np.int64), f.dst_slice[ok].astype(np.int64)
        use = is_gpu[dst] & ~is_gpu[src]  # a flow between two device ops is a dependency, not a launch
        launch[dst[use]] = src[use]
    missing = np.flatnonzero(is_gpu & (launch < 0))
    if len(missing):
        calls = np.flatnonzero(runtime_mask(store))
        if len(calls):
            _pair_by_correlation(store, missing, calls, launch)
    return launch


def _pair_by_correlation(store: TraceStore, gpu_rows: np.ndarray, calls: np.ndarray, launch: np.ndarray) -> None:
    """Fill ``launch`` for ``gpu_rows`` from the calls carrying the same (source, correlation)."""
    blob = store.args_blob
    by_key: dict = {}
    src = store.slices.source
    for r, c in zip(calls.tolist(), correlation_ids(store.slices, blob, calls)):
        if c is not None:
            by_key[(int(src[r]), c)] = r
    if not by_key:
        return
    for r, c in zip(gpu_rows.tolist(), correlation_ids(store.slices, blob, gpu_rows)):
        hit = by_key.get((int(src[r]), c)) if c is not None else None
        if hit is not None:
            launch[r] = hit


def launch_table(store: TraceStore) -> np.ndarray:
    """Every paired launch as one column of a 7-row int64 table, in launch-call start order: GPU
    row, launch-call row, call start, call end, call track, GPU start, GPU end. Computed once per
    store, in memory (the columns may be memory-mapped: random gathers from them cost more)."""
    def build() -> np.ndarray:
        s = store.slices
        launch = launch_of(store)
        gpu = np.flatnonzero(launch >= 0)
        call = launch[gpu]
        table = np.empty((7, len(gpu)), dtype=np.int64)
        table[0], table[1] = gpu, call
        table[2], table[3], table[4] = s.start_ns[call], s.end_ns[call], s.track[call]
        table[5], table[6] = s.start_ns[gpu], s.end_ns[gpu]
        if len(gpu) > 1 and not bool((table[2, 1:] >= table[2, :-1]).all()):  # kernels run in launch order: often sorted
            table = table[:, np.argsort(table[2], kind="stable")]
        return table
    return store.memo("launched.table", build)


def owners(store: TraceStore, rows: np.ndarray, points: np.ndarray) -> np.ndarray:
    """For each slice row in ``points``: the position in ``rows`` of the innermost slice of ``rows``
    that is it or an ancestor of it (-1 where none).

    Steps (non-overlapping, one track) take a binary search; other sets climb the parent chain
    one level per pass (depth is small next to the number of points)."""
    s = store.slices
    points = np.asarray(points, dtype=np.int64)
    return _owners(store, rows, points, s.start_ns[points], s.end_ns[points], s.track[points])


def _owners(store: TraceStore, rows: np.ndarray, points: np.ndarray, p_start: np.ndarray, p_end: np.ndarray,
            p_track: np.ndarray) -> np.ndarray:
    s = store.slices
    rows = np.asarray(rows, dtype=np.int64)
    out = np.full(len(points), -1, dtype=np.int64)
    if not len(rows) or not len(points):
        return out
    order = np.argsort(s.start_ns[rows], kind="stable")
    st, en = s.start_ns[rows][order].astype(np.int64), s.end_ns[rows][order].astype(np.int64)
    track = int(s.track[rows[0]])
    if bool((s.track[rows] == track).all()) and bool((st[1:] >= en[:-1]).all()):
        k = np.searchsorted(st, p_start, side="right") - 1
        kk = np.maximum(k, 0)
        e = en[kk]
        # the call starts inside the step (a call that ends a rounding step after it still counts);
        # a zero-length step owns only what starts at its point
        ok = (k >= 0) & (p_track == track) & ((p_start < e) | (st[kk] == e))
        out[ok] = order[kk[ok]]
        return out
    pos = np.full(len(s), -1, dtype=np.int64)
    pos[rows] = np.arange(len(rows))
    cur = points.copy()
    live = np.ones(len(points), dtype=bool)
    while live.any():
        hit = live & (pos[np.maximum(cur, 0)] >= 0) & (cur >= 0)
        out[hit] = pos[cur[hit]]
        live &= ~hit & (cur >= 0)
        cur = np.where(live, s.parent[np.maximum(cur, 0)], -1)
        live &= cur >= 0
    return out


def _launched(store: TraceStore, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(GPU rows, owner position in ``rows``, GPU start, GPU end) of the work launched inside ``rows``."""
    t = launch_table(store)
    fast = _launched_in_steps(store, rows, t)
    if fast is not None:
        return fast
    own = _owners(store, rows, t[1], t[2], t[3], t[4])
    keep = own >= 0
    return t[0][keep], own[keep], t[5][keep], t[6][keep]


def _step_segments(store: TraceStore, rows: np.ndarray, t: np.ndarray):
    """Steps (time-ordered, non-overlapping, one track): the table is in call-start order, so each
    step's calls are one slice [lo, hi) of it, found by two binary searches per step (not one per
    call): the calls that *start* inside the step. (lo, hi, step ends, track), or None when
    ``rows`` are not such a set."""
    s = store.slices
    rows = np.asarray(rows, dtype=np.int64)
    if not len(rows) or not t.shape[1]:
        return None
    st, en = s.start_ns[rows].astype(np.int64), s.end_ns[rows].astype(np.int64)
    track = int(s.track[rows[0]])
    if not (bool((st[1:] >= en[:-1]).all()) and bool((s.track[rows] == track).all())):
        return None
    lo = np.searchsorted(t[2], st, side="left")
    hi = np.searchsorted(t[2], en, side="left")
    hi = np.where(en == st, np.searchsorted(t[2], en, side="right"), hi)  # a zero-length step owns its point
    return lo, np.maximum(hi, lo), en, track


def _launched_in_steps(store: TraceStore, rows: np.ndarray, t: np.ndarray):
    """``_launched`` for steps (see ``_step_segments``); None when ``rows`` are not steps."""
    seg = _step_segments(store, rows, t)
    if seg is None:
        return None
    lo, hi, en, track = seg
    n = int((hi - lo).sum())
    if not n:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, z
    own = np.repeat(np.arange(len(rows), dtype=np.int64), hi - lo)
    # positions lo..hi-1 of every step, concatenated: a running count restarted at each step's lo
    starts_at = np.cumsum(hi - lo) - (hi - lo)
    idx = np.arange(n, dtype=np.int64) - np.repeat(starts_at - lo, hi - lo)
    keep = t[4][idx] == track  # the call on the step's thread (it starts inside the step)
    if not keep.all():
        idx, own = idx[keep], own[keep]
    return t[0][idx], own, t[5][idx], t[6][idx]


def launched_by(store: TraceStore, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(device-work rows, position in ``rows`` of the slice whose subtree holds their launch call)."""
    gpu, own, _, _ = _launched(store, rows)
    return gpu, own


def launched_spans(store: TraceStore, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``launched_by`` with each one's start and end (from the launch table: no gather from the columns)."""
    return _launched(store, rows)


def grouped_union_ns(groups: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int) -> np.ndarray:
    """Per group 0..n-1: the length of the union of its [start, end) intervals (overlaps once).

    One pass for all groups: each group is shifted by group × (span + 1), so a running maximum of
    the ends never crosses from one group into the next."""
    out = np.zeros(n, dtype=np.int64)
    if not len(groups):
        return out
    g = np.asarray(groups, dtype=np.int64)
    st, en = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    if len(g) > 1 and bool((g[1:] >= g[:-1]).all()) and bool((st[1:] >= en[:-1]).all()):
        # in order and no two intervals overlap (one stream, work in launch order): the union is the sum
        return np.rint(np.bincount(g, weights=en - st, minlength=n)).astype(np.int64)
    base = int(st.min())
    width = int(en.max()) - base + 1
    if width * (n + 1) >= 2**62:  # would overflow: one group at a time
        order = np.lexsort((st, g))
        g, st, en = g[order], st[order], en[order]
        bounds = np.flatnonzero(np.diff(g)) + 1
        for a, b in zip(np.r_[0, bounds].tolist(), np.r_[bounds, len(g)].tolist()):
            ua, ub = merge_intervals(st[a:b], en[a:b])
            out[int(g[a])] = int((ub - ua).sum())
        return out
    shift = g * width - base
    ua, ub = merge_intervals(st + shift, en + shift)
    # float64 sums are exact up to 2^53 ns (104 days)
    return np.rint(np.bincount(ua // width, weights=ub - ua, minlength=n)).astype(np.int64)


def launched_gpu_ns(store: TraceStore, rows: np.ndarray) -> np.ndarray:
    """Per row of ``rows``: the union length of the device work launched from inside it."""
    return launched_work(store, rows).busy_ns


@dataclass
class LaunchedWork:
    """Per CPU slice of a set: the device work launched from inside it (-1 first/last: none)."""

    busy_ns: np.ndarray  # int64 union length of that work (overlaps once)
    count: np.ndarray  # int64 device ops
    first_ns: np.ndarray  # int64 earliest start of that work
    last_ns: np.ndarray  # int64 latest end

    @property
    def span_ns(self) -> np.ndarray:
        """First start to last end: the slice's work as the GPU ran it (0 where none)."""
        return np.where(self.count > 0, self.last_ns - self.first_ns, 0)


def _work_of_clean_steps(store: TraceStore, rows: np.ndarray) -> LaunchedWork | None:
    """The common case in one pass per figure over a view of the table: steps whose calls tile one
    stretch of it (every call there on the steps' thread, inside its step) and whose work does not
    overlap (one stream, in launch order). None otherwise."""
    t = launch_table(store)
    seg = _step_segments(store, rows, t)
    if seg is None:
        return None
    lo, hi, en, track = seg
    full = hi > lo
    if not full.any():
        return None
    lo_f, hi_f = lo[full], hi[full]
    if not bool((lo_f[1:] == hi_f[:-1]).all()):
        return None  # calls between steps: the general path
    a, b = int(lo_f[0]), int(hi_f[-1])
    view = t[:, a:b]
    if not (bool((view[4] == track).all()) and bool((view[5, 1:] >= view[6, :-1]).all())):
        return None
    n = len(rows)
    heads = lo_f - a
    sums = np.add.reduceat(view[6] - view[5], heads)
    busy = np.zeros(n, dtype=np.int64)
    first = np.full(n, -1, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    busy[full], first[full], last[full] = sums, np.minimum.reduceat(view[5], heads), np.maximum.reduceat(view[6], heads)
    return LaunchedWork(busy, (hi - lo).astype(np.int64), first, last)


def launched_work(store: TraceStore, rows: np.ndarray) -> LaunchedWork:
    """Per row of ``rows``: count, union, first start and last end of the device work it launched."""
    clean = _work_of_clean_steps(store, rows)
    if clean is not None:
        return clean
    _, own, st, en = _launched(store, rows)
    n = len(rows)
    count = np.bincount(own, minlength=n).astype(np.int64)
    first = np.full(n, -1, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    if not len(own):
        return LaunchedWork(np.zeros(n, dtype=np.int64), count, first, last)
    if len(own) > 1 and not bool((own[1:] >= own[:-1]).all()):  # steps in time order: usually sorted already
        order = np.argsort(own, kind="stable")
        own, st, en = own[order], st[order], en[order]
    heads = np.concatenate(([0], np.flatnonzero(np.diff(own)) + 1))
    first[own[heads]] = np.minimum.reduceat(st, heads)
    last[own[heads]] = np.maximum.reduceat(en, heads)
    return LaunchedWork(grouped_union_ns(own, st, en, n), count, first, last)
