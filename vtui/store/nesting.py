"""Nest slices per track (parent and depth, by containment) and lay them out in display lanes.

Input slices are sorted by (track, start, longer first, file order). The tree — parent and
depth — follows the containment rule in ``containment``. The drawing is separate: a slice
that lies within the open slice on top of the lane stack is drawn one lane below it; one that
starts inside but ends after it partly overlaps (out of spec, but real: annotations inside
Python frames, rounding, programmatic dependent launch) is drawn on an extra lane, first fit,
never dropped. So a partly overlapping slice keeps its true parent and children; only its
lane differs from its depth.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from vtui.store.build_thread import soon
from vtui.store.containment import containment_parents, depths


@dataclass
class Nesting:
    depth: np.ndarray  # int32 nesting depth by containment (0 at the top)
    parent: np.ndarray  # int32 position of the containing parent in the input order, or -1
    lane: np.ndarray  # int32 display lane within the track
    overlapping: np.ndarray  # bool: placed on an extra lane
    nested_lanes: np.ndarray  # int32 per track segment: lanes used by nesting


VECTOR_MIN = 512  # slices in a track: from here on the numpy pass is tried first
# Slices: from here on the tree is built in a thread (2.6M slices, 2 cores: nest 0.37 -> 0.27 s
# wall for +0.01 s CPU; small traces nest in milliseconds, where a thread is not worth it).
THREAD_MIN = 200_000


def nest(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, tolerance: int = 0,
         track: np.ndarray | None = None, subgroup: np.ndarray | None = None) -> Nesting:
    """``bounds`` holds the start offset of each track segment plus the total length;
    ``tolerance`` (ns) how far a child may pass its parent's end (see ``nesting_tolerance_ns``);
    ``subgroup`` (with ``track``, per row; -1: none) splits a track's tree: slices of one async id
    nest only among themselves, though the track draws them all.

    Lanes: same result as the plain stack loop (the reference in tests/core/test_nesting.py), faster: a track is cut into
    regions at the points where every earlier slice has ended (the loop's stack is empty
    there, so regions are independent); a numpy pass nests every region at once, and only the
    regions where it finds a partial overlap are redone by the stack loop. Overlapping slices
    are then packed into extra lanes over the whole track, in start order, as the loop does.
    """
    n = len(starts)
    # The tree (containment parents) does not depend on the lanes: on a big trace it is built in
    # a thread meanwhile (numpy releases the GIL in its passes; the lanes' stack loops hold it).
    tree = soon(_tree_depth, n >= THREAD_MIN, starts, ends, bounds, tolerance, track, subgroup)
    lane, overlap, nested_lanes = _lanes(starts, ends, bounds)
    parent, depth = tree()
    return Nesting(depth=depth, parent=parent, lane=lane, overlapping=overlap, nested_lanes=nested_lanes)


def _tree_depth(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, tolerance: int, track: np.ndarray | None,
                subgroup: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Containment parents (int32) and depths (see ``_tree``)."""
    parent = _tree(starts, ends, bounds, tolerance, track, subgroup)
    return parent.astype(np.int32), depths(parent)


def _lanes(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Display lanes (see ``nest``): lane, overlapping mask, and nested lanes per track segment."""
    n = len(starts)
    depth = np.zeros(n, dtype=np.int32)
    overlap = np.zeros(n, dtype=bool)
    nested_lanes = np.zeros(max(len(bounds) - 1, 0), dtype=np.int32)
    def loop(lo: int, hi: int) -> None:
        # Python ints of just this region: converting whole tracks cost 200 MB at 1 GB.
        d, o = _stack_pass(starts[lo:hi].tolist(), ends[lo:hi].tolist())
        depth[lo:hi], overlap[lo:hi] = d, o

    for seg in range(len(bounds) - 1):
        lo, hi = int(bounds[seg]), int(bounds[seg + 1])
        if hi - lo <= 1:  # lane 0, no overlap: already so (a million one-slice tracks cost ~10 s here)
            continue
        if hi - lo < VECTOR_MIN:
            loop(lo, hi)
        else:
            s, e = starts[lo:hi], ends[lo:hi]
            d, _, bad = _nest_proper(s, e)
            depth[lo:hi] = d
            if bad.any():
                # Regions start where every earlier slice has ended (a reset of the loop's stack).
                prior_end = np.maximum.accumulate(e)
                reset = np.empty(hi - lo, dtype=bool)
                reset[0] = True
                reset[1:] = prior_end[:-1] <= s[1:]
                region_starts = np.flatnonzero(reset)
                region_of = np.cumsum(reset) - 1
                region_ends = np.append(region_starts[1:], hi - lo)
                for r in np.unique(region_of[bad]).tolist():
                    loop(lo + int(region_starts[r]), lo + int(region_ends[r]))
    # Per segment, in whole-array passes: lanes used by nesting (1 + the deepest slice that does not
    # overlap; 0 when none), then the overlapping slices packed above them.
    used = bounds[1:] > bounds[:-1]
    if n:
        nested_lanes[used] = np.maximum.reduceat(np.where(overlap, -1, depth), bounds[:-1][used]) + 1
    lane = depth.copy()
    spill_all = np.flatnonzero(overlap)
    spill_seg = np.searchsorted(bounds, spill_all, side="right") - 1
    cuts = np.flatnonzero(np.diff(spill_seg)) + 1  # spill_all is sorted: each segment's is one run
    for first, spill in zip([0, *cuts.tolist()], np.split(spill_all, cuts) if len(spill_all) else []):
        _pack_spill(starts, ends, spill, int(nested_lanes[spill_seg[first]]), depth, lane)
    return lane, overlap, nested_lanes


def _tree(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, tolerance: int, track: np.ndarray | None,
          subgroup: np.ndarray | None) -> np.ndarray:
    """Containment parents per track, or per (track, subgroup) where subgroups are given."""
    if subgroup is None or track is None or not (subgroup >= 0).any():
        return containment_parents(starts, ends, bounds, tolerance)
    order = np.lexsort((subgroup, track))  # stable: keeps (start, longer first, file order) within a group
    key_t, key_g = track[order], subgroup[order]
    change = np.flatnonzero((key_t[1:] != key_t[:-1]) | (key_g[1:] != key_g[:-1])) + 1
    sub_bounds = np.concatenate(([0], change, [len(order)]))
    local = containment_parents(starts[order], ends[order], sub_bounds, tolerance)
    parent = np.full(len(starts), -1, dtype=np.int64)
    parent[order] = np.where(local >= 0, order[np.maximum(local, 0)], -1)
    return parent


def _stack_pass(s_list: list[int], e_list: list[int]) -> tuple[list[int], list[bool]]:
    """The loop's lane pass over one region, from an empty stack: lane depth and partial overlap."""
    depth = [0] * len(s_list)
    overlap = [False] * len(s_list)
    stack_end: list[int] = []
    for i, (s, e) in enumerate(zip(s_list, e_list)):
        while stack_end and stack_end[-1] <= s:
            stack_end.pop()
        if stack_end and e > stack_end[-1]:
            overlap[i] = True
            continue
        depth[i] = len(stack_end)
        stack_end.append(e)
    return depth, overlap


def _pack_spill(starts: np.ndarray, ends: np.ndarray, spill: np.ndarray, base: int, depth: np.ndarray,
                lane: np.ndarray) -> None:
    """First-fit lanes for partly overlapping slices, in start order (as the loop does)."""
    free: list[tuple[int, int]] = []  # (end, lane) heap: reuse the lane that ends first
    used = 0
    s_list, e_list = starts[spill].tolist(), ends[spill].tolist()
    lanes = []
    for s, e in zip(s_list, e_list):
        if free and free[0][0] <= s:
            k = heapq.heappop(free)[1]
        else:
            k = used
            used += 1
        heapq.heappush(free, (e, k))
        lanes.append(k)
    ks = np.array(lanes, dtype=np.int32)
    depth[spill] = ks
    lane[spill] = base + ks


def _nest_proper(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Depth and parent (track-local) of one track's slices, sorted by start, longer first, and
    a mask of the slices where that cannot be trusted (a partial overlap at or before them in
    their region).

    With proper nesting, the slices still open at slice i are exactly the j < i with
    end_j > start_i (they form a chain), so depth_i is their count and the parent is the last
    j < i one level up. The first slice the loop would put on an extra lane ends after that
    parent, so it is flagged; everything before it in its region is exact.
    """
    n = len(starts)
    idx = np.arange(n, dtype=np.int64)
    if (ends < starts).any():
        return np.zeros(n, dtype=np.int32), np.full(n, -1, dtype=np.int32), np.ones(n, dtype=bool)
    # j < i with end_j <= start_i: all j with end_j <= start_i, minus the zero-length slices at
    # start_i that sort at or after i. Ends of start-sorted slices come in long sorted runs,
    # which the stable sort (timsort) merges: 0.005 s for 1.8M ends, the default sort 0.09 s.
    closed = np.searchsorted(np.sort(ends, kind="stable"), starts, side="right")
    group_end = _group_ends(starts)
    first_zero = np.where(ends == starts, idx, n)  # zero-length slices sort last in a same-start group
    first_zero = np.minimum.accumulate(first_zero[::-1])[::-1]
    first_zero = np.minimum(first_zero, group_end)
    depth = idx - (closed - (group_end - np.maximum(idx, first_zero)))
    bad = depth < 0
    depth = np.maximum(depth, 0)
    parent = np.full(n, -1, dtype=np.int64)
    if depth.any():
        order = _by_depth(depth)
        level = depth[order]
        keys = level * n + order  # ascending: depth * n + idx, sorted
        first = int(np.searchsorted(level, 1))
        # The rows with a parent, taken in that order: their search keys ascend too, and a
        # search for ascending keys runs faster (its probes stay close).
        has, up = order[first:], level[first:] - 1
        pos = np.searchsorted(keys, up * n + has) - 1
        par = keys[np.maximum(pos, 0)] - up * n
        wrong = (pos < 0) | (par < 0) | (par >= has)
        par = np.where(wrong, 0, par)
        wrong |= (depth[par] != up) | (ends[has] > ends[par]) | (ends[par] <= starts[has])
        bad[has[wrong]] = True
        parent[has] = np.where(wrong, -1, par)
    return depth.astype(np.int32), parent.astype(np.int32), bad


def _group_ends(values: np.ndarray) -> np.ndarray:
    """Per element of a sorted array, the index after its run of equal values (what
    ``searchsorted(values, values, side="right")`` gives, in one linear pass)."""
    n = len(values)
    run_end = np.append(np.flatnonzero(values[1:] != values[:-1]) + 1, n)
    return np.repeat(run_end, np.diff(run_end, prepend=0))


def _by_depth(depth: np.ndarray) -> np.ndarray:
    """``np.argsort(depth, kind="stable")`` for depths >= 0: the rows grouped by depth, in order
    within a depth. On 16-bit depths numpy's stable sort is a radix sort: 0.006 s for 1.8M rows,
    where sorting the 64-bit keys depth * n + idx took 0.1 s."""
    small = depth.astype(np.uint16) if int(depth.max(initial=0)) < 1 << 16 else depth
    return np.argsort(small, kind="stable")
