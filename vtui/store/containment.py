"""The one nesting rule and the one self-time rule.

Nesting: a slice's parent is the latest slice before it (in (track, start, longer first, file
order) order) on its track that fully contains it (start <= its start, end >= its end). That is
the deepest slice on the open call chain that contains it — Catapult's importer rule: slices
that only partly overlap (a ``record_function`` annotation starting inside the Python
``__enter__`` frame, kernels with programmatic dependent launch) are siblings under their
common container; only their drawing needs an extra lane (see ``nesting``).

Self time: duration minus the *union* of the direct children's intervals — never negative,
never above the duration, also when children partly overlap each other.
"""

from __future__ import annotations

import numpy as np

JUMP_ROUNDS = 32  # vectorised pointer-jumping rounds before the rest is walked one by one
TOP_LEVELS = 2  # levels settled one pass each before the jumping (wide levels cost one pass)


def nesting_tolerance_ns(origin_us: float, span_ns: int) -> int:
    """How far a child's end may pass its parent's and still nest: one float64 step of the
    file's timestamps (in ns). JSON µs parsed as doubles near 1.7e15 (epoch µs) hold only
    0.25 µs steps, so a child that ends with its parent in the file can end a step after it
    here; Catapult compares with such a precision unit too. 0 where the step is far below 1 ns."""
    largest = max(abs(origin_us), abs(origin_us + span_ns / 1000.0))
    step_ns = float(np.spacing(np.float64(largest))) * 1000.0
    return 0 if step_ns < 0.25 else int(np.ceil(step_ns))


def containment_parents(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, tolerance: int = 0) -> np.ndarray:
    """Parent (row in the same arrays, or -1) of each slice; rows sorted by (track, start, longer
    first, file order), ``bounds`` the start offset of each track plus the total length.

    The parent is the latest j < i on the track with end_j >= end_i. Two vectorised passes:
    the top levels are settled level by level (a row ending after every earlier row under the
    same owner is that owner's child), which handles wide levels (a stream's kernels, a step's
    ops) at once; deeper rows then keep a candidate c with every row strictly between c and i
    ending before end_i, and jump to c's own candidate while end_c < end_i (log-depth passes).
    """
    n = len(starts)
    cand = np.arange(-1, n - 1, dtype=np.int64)
    if not n:
        return cand
    first = np.zeros(n, dtype=bool)
    track_first = np.asarray(bounds[:-1], dtype=np.int64)
    first[track_first[track_first < n]] = True
    cand[first] = -1
    # ``tolerance``: a parent may end up to that many ns before its child (timestamp rounding).
    rest = _settle_top_levels(starts, ends, first, cand, tolerance)
    active = rest[cand[rest] >= 0]
    for _ in range(JUMP_ROUNDS):
        if not len(active):
            return cand
        c = cand[active]
        move = active[_outside(ends[c], starts[active], ends[active], tolerance)]
        cand[move] = cand[cand[move]]
        active = move[cand[move] >= 0]
    # Long chains (pathologically deep or wide tracks): walk what is left in row order, so every
    # candidate met on the way is already final — the stack algorithm, amortised O(n).
    e = ends
    for i in active.tolist():
        c = int(cand[i])
        s_i, end_i = starts[i], e[i]
        while c >= 0 and (e[c] + tolerance < end_i or s_i >= e[c] < end_i):
            c = int(cand[c])
        cand[i] = c
    return cand


def _settle_top_levels(starts: np.ndarray, ends: np.ndarray, first: np.ndarray, cand: np.ndarray,
                       tolerance: int) -> np.ndarray:
    """Settle the parents of the top TOP_LEVELS levels in ``cand``; returns the rows left.

    Level by level, every unsettled row has an owner (a settled row that contains it, or the
    track). Among the rows under one owner, in order, a row that ends after all earlier ones
    is the owner's child (nothing later-started under the owner reaches its end); any other
    row lies inside the latest such child, its owner for the next level.
    """
    rows = np.arange(len(starts), dtype=np.int64)
    owner = np.full(len(starts), -1, dtype=np.int64)
    new_group = first.copy()
    for _ in range(TOP_LEVELS):
        if not len(rows):
            break
        e = ends[rows]
        reach = _running_max_by_group(e, starts[rows], new_group)
        before = np.empty_like(reach)
        before[1:] = reach[:-1]
        child = new_group | _outside(before, starts[rows], e, tolerance)
        cand[rows[child]] = owner[child]
        latest_child = np.maximum.accumulate(np.where(child, rows, -1))  # every group starts with a child
        keep = ~child
        rows, owner = rows[keep], latest_child[keep]
        new_group = np.empty(len(rows), dtype=bool)
        if len(rows):
            new_group[0] = True
            new_group[1:] = owner[1:] != owner[:-1]
    return rows


def _outside(parent_end: np.ndarray, start: np.ndarray, end: np.ndarray, tolerance: int) -> np.ndarray:
    """The candidate does not contain the slice: it ends before it, beyond the tolerance; or,
    within the tolerance, the slice starts at or after its end (a sibling that follows it)."""
    if not tolerance:
        return parent_end < end
    return (parent_end + tolerance < end) | ((parent_end < end) & (start >= parent_end))


def depths(parent: np.ndarray) -> np.ndarray:
    """Nesting depth (0 at the top) from parent pointers, by pointer doubling (log depth passes)."""
    depth = (parent >= 0).astype(np.int64)
    anc = parent.astype(np.int64, copy=True)
    live = np.flatnonzero(anc >= 0)
    while len(live):
        up = anc[live]
        depth[live] += depth[up]
        anc[live] = anc[up]
        live = live[anc[live] >= 0]
    return depth.astype(np.int32)


def self_time(parent: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per row: ``ends - starts`` minus the union of its direct children's intervals.

    ``parent`` indexes rows of the same arrays (-1: none). Works on clipped intervals too (a row
    outside a range has end == start); children may come in any order.

    The arithmetic goes in place where it can: on millions of rows each temporary is tens of MB,
    and fresh memory (zeroed by the kernel on first touch) costs more than the arithmetic.
    """
    dur = np.subtract(ends, starts, dtype=np.int64)
    np.maximum(dur, 0, out=dur)
    kids = np.flatnonzero(parent >= 0)
    if not len(kids):
        return dur
    # Children in (parent, start) order. Rows usually come start-ordered within a parent, so one
    # stable sort by parent (long sorted runs: cheap) is enough; else sort by both keys.
    order = kids[np.argsort(parent[kids], kind="stable")]
    p = parent[order].astype(np.int64)
    s = starts[order].astype(np.int64)
    if ((p[1:] == p[:-1]) & (s[1:] < s[:-1])).any():
        order = kids[np.lexsort((starts[kids], parent[kids]))]
        p = parent[order].astype(np.int64)
        s = starts[order].astype(np.int64)
    del kids
    # Cut to the parent: a child may pass its parent's end by the nesting tolerance.
    np.maximum(s, starts[p], out=s)
    e = ends[order].astype(np.int64)
    del order
    np.maximum(e, s, out=e)
    parent_end = ends[p].astype(np.int64)
    np.maximum(parent_end, s, out=parent_end)
    np.minimum(e, parent_end, out=e)
    del parent_end
    first = np.empty(len(p), dtype=bool)
    first[0] = True
    np.not_equal(p[1:], p[:-1], out=first[1:])
    covered = _running_max_by_group(e, s, first)  # furthest end among the siblings up to here
    # The reach of the siblings before each child (none for a parent's first), then what the
    # child adds to the union: its end beyond max(its start, that reach).
    covered[1:] = covered[:-1]  # numpy buffers overlapping copies
    covered[first] = np.iinfo(np.int64).min
    np.maximum(covered, s, out=covered)
    np.subtract(e, covered, out=covered)
    np.maximum(covered, 0, out=covered)
    starts_at = np.flatnonzero(first)
    union = np.add.reduceat(covered, starts_at)
    owners = p[starts_at]
    dur[owners] = np.clip(dur[owners] - union, 0, dur[owners])
    return dur


def _running_max_by_group(values: np.ndarray, floor: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` that restarts at each ``first``; values >= floor's group start."""
    group = np.cumsum(first)
    group -= 1
    base = floor[first][group]  # the group's first start: values - base >= 0 within the group
    local = values - base
    span = int(local.max()) + 1
    if int(group[-1]) < (1 << 62) // span:
        group *= span  # later groups sort above every earlier key
        key = np.add(group, local, out=local)
        np.maximum.accumulate(key, out=key)
        key -= group
        key += base
        return key
    uniq, rank = np.unique(values, return_inverse=True)  # huge spans: dense ranks keep keys small
    key = group * (len(uniq) + 1) + rank.reshape(-1)
    return uniq[np.maximum.accumulate(key) - group * (len(uniq) + 1)]
