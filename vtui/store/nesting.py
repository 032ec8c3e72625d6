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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from vtui.store.containment import _running_max_by_group, containment_parents, depths


@dataclass
class Nesting:
    depth: np.ndarray  # int32 nesting depth by containment (0 at the top)
    parent: np.ndarray  # int32 position of the containing parent in the input order, or -1
    lane: np.ndarray  # int32 display lane within the track
    overlapping: np.ndarray  # bool: placed on an extra lane
    nested_lanes: np.ndarray  # int32 per track segment: lanes used by nesting


VECTOR_MIN = 512  # slices in a track: from here on the numpy pass is tried first
# Slices: from here on the tree is built beside the lanes, in other threads (2.6M slices, 2 cores:
# nest 0.37 -> 0.27 s wall for +0.01 s CPU; small traces nest in milliseconds, where a thread is not
# worth it), and with ``threads`` > 1 both are cut into pieces.
THREAD_MIN = 200_000


def nest(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, tolerance: int = 0,
         track: np.ndarray | None = None, subgroup: np.ndarray | None = None, threads: int = 1) -> Nesting:
    """``bounds`` holds the start offset of each track segment plus the total length;
    ``tolerance`` (ns) how far a child may pass its parent's end (see ``nesting_tolerance_ns``);
    ``subgroup`` (with ``track``, per row; -1: none) splits a track's tree: slices of one async id
    nest only among themselves, though the track draws them all. ``threads``: over how many
    threads the lanes and the tree may each be split (the cores free for the load); the result
    is the same for any number.

    Lanes: same result as the plain stack loop (the reference in tests/core/test_nesting.py), faster: a track is cut into
    regions at the points where every earlier slice has ended (the loop's stack is empty
    there, so regions are independent); a numpy pass nests every region at once, and only the
    regions where it finds a partial overlap are redone by the stack loop. Overlapping slices
    are then packed into extra lanes over the whole track, in start order, as the loop does.
    """
    n = len(starts)
    depth = np.zeros(n, dtype=np.int32)  # the stack loop's depth, before the overlapping are packed
    overlap = np.zeros(n, dtype=bool)
    if n < THREAD_MIN:
        _lane_depths(starts, ends, bounds, depth, overlap)
        parent, tree_depth = _tree_depth(starts, ends, bounds, tolerance, track, subgroup)
    else:
        parent, tree_depth = _nest_threaded(starts, ends, bounds, tolerance, track, subgroup, threads, depth, overlap)
    lane, nested_lanes = _spill_lanes(starts, ends, bounds, depth, overlap)
    return Nesting(depth=tree_depth, parent=parent, lane=lane, overlapping=overlap, nested_lanes=nested_lanes)


def _nest_threaded(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, tolerance: int,
                   track: np.ndarray | None, subgroup: np.ndarray | None, threads: int, depth: np.ndarray,
                   overlap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lanes' depths (into ``depth``, ``overlap``) and the tree, in threads: the tree does not
    depend on the lanes, and numpy releases the GIL in its passes (the lanes' stack loops hold
    it). Pieces start at clean cuts (see ``_cuts``), where both are independent of what came before."""
    n = len(starts)
    pieces = _pieces(_cuts(starts, ends, bounds, tolerance, threads))
    whole_tree = len(pieces) == 1 or (subgroup is not None and track is not None and bool((subgroup >= 0).any()))
    with ThreadPoolExecutor(max(2, threads), thread_name_prefix="vtui-nest") as pool:
        if whole_tree:  # (async ids' subgroups: their tree is per id, not cut)
            tree = [pool.submit(_tree_depth, starts, ends, bounds, tolerance, track, subgroup)]
        else:
            tree = [pool.submit(_tree_piece, starts, ends, _piece_bounds(bounds, lo, hi), tolerance, lo, hi)
                    for lo, hi in pieces]
        lanes = [pool.submit(_lane_depths, starts, ends, _piece_bounds(bounds, lo, hi), depth, overlap)
                 for lo, hi in pieces]
        for done in lanes:
            done.result()
        if whole_tree:
            return tree[0].result()
        parent, tree_depth = np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int32)
        for (lo, hi), piece in zip(pieces, tree):
            parent[lo:hi], tree_depth[lo:hi] = piece.result()
        return parent, tree_depth


def _cuts(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, tolerance: int, pieces: int) -> list[int]:
    """The starts of about ``pieces`` equal row ranges, and the end (``len(starts)``): each at a
    track's start or at a clean cut, a row that starts strictly after every earlier row of its
    track ended (beyond ``tolerance``). Nothing before a clean cut contains a row after it or
    holds a lane open there, so each piece's lanes and tree are the whole's."""
    n = len(starts)
    if pieces <= 1 or n < 2 or bool((ends < starts).any()):
        return [0, n]
    first = np.zeros(n, dtype=bool)
    track_first = np.asarray(bounds[:-1], dtype=np.int64)
    first[track_first[track_first < n]] = True
    first[0] = True
    reach = _running_max_by_group(ends, starts, first)  # the furthest end so far in the track
    clean = first
    clean[1:] |= starts[1:] > reach[:-1] + tolerance
    at = np.flatnonzero(clean)
    picks = np.searchsorted(at, np.arange(1, pieces, dtype=np.int64) * n // pieces)
    return sorted({0, n, *at[picks[picks < len(at)]].tolist()})


def _pieces(cuts: list[int]) -> list[tuple[int, int]]:
    return [(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:]) if hi > lo]


def _piece_bounds(bounds: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The segment bounds within rows [lo, hi): lo, the tracks' starts inside, hi."""
    bounds = np.asarray(bounds, dtype=np.int64)
    return np.concatenate(([lo], bounds[(bounds > lo) & (bounds < hi)], [hi]))


def _tree_piece(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, tolerance: int, lo: int,
                hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents (rows of the whole) and depths of rows [lo, hi), a piece from ``_cuts``."""
    local = containment_parents(starts[lo:hi], ends[lo:hi], bounds - lo, tolerance)
    return np.where(local >= 0, local + lo, -1).astype(np.int32), depths(local)


def _tree_depth(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, tolerance: int, track: np.ndarray | None,
                subgroup: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Containment parents (int32) and depths (see ``_tree``)."""
    parent = _tree(starts, ends, bounds, tolerance, track, subgroup)
    return parent.astype(np.int32), depths(parent)


def _lane_depths(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, depth: np.ndarray,
                 overlap: np.ndarray) -> None:
    """The stack loop's depth and partial-overlap mask for the rows of the segments in ``bounds``
    (absolute rows: a piece writes only its own rows of ``depth`` and ``overlap``)."""
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


def _spill_lanes(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray, depth: np.ndarray,
                 overlap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lanes, and the lanes nesting uses per track segment, from the loop's depths and overlaps.

    Per segment, in whole-array passes: lanes used by nesting (1 + the deepest slice that does not
    overlap; 0 when none), then the overlapping slices packed above them (over the whole track)."""
    n = len(starts)
    nested_lanes = np.zeros(max(len(bounds) - 1, 0), dtype=np.int32)
    used = bounds[1:] > bounds[:-1]
    if n:
        nested_lanes[used] = np.maximum.reduceat(np.where(overlap, -1, depth), bounds[:-1][used]) + 1
    lane = depth.copy()
    spill_all = np.flatnonzero(overlap)
    spill_seg = np.searchsorted(bounds, spill_all, side="right") - 1
    cuts = np.flatnonzero(np.diff(spill_seg)) + 1  # spill_all is sorted: each segment's is one run
    for first, spill in zip([0, *cuts.tolist()], np.split(spill_all, cuts) if len(spill_all) else []):
        _pack_spill(starts, ends, spill, int(nested_lanes[spill_seg[first]]), depth, lane)
    return lane, nested_lanes


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
