"""Nest slices per track into depths and pack partial overlaps into extra lanes.

Input slices are sorted by (track, start, longer first, file order). A slice that lies
within the open slice on top of the stack nests under it; one that starts inside but ends
after it partly overlaps (out of spec, but real: Python frames outliving an op, rounding,
programmatic dependent launch) and goes to an extra lane, first fit, never dropped.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np


@dataclass
class Nesting:
    depth: np.ndarray  # int32 nesting depth (overlap slices: depth within the overlap lanes)
    parent: np.ndarray  # int32 position of the parent in the input order, or -1
    lane: np.ndarray  # int32 display lane within the track
    overlapping: np.ndarray  # bool: placed on an extra lane
    nested_lanes: np.ndarray  # int32 per track segment: lanes used by nesting


VECTOR_MIN = 512  # slices in a track: from here on try the numpy pass first


def nest(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray) -> Nesting:
    """``bounds`` holds the start offset of each track segment plus the total length.

    Big tracks are nested by a numpy pass (``_nest_proper``) that is exact when the track is
    properly nested and says so when it is not; those tracks, and small ones, take the loop.
    """
    n = len(starts)
    depth = np.zeros(n, dtype=np.int32)
    parent = np.full(n, -1, dtype=np.int32)
    lane = np.zeros(n, dtype=np.int32)
    overlap = np.zeros(n, dtype=bool)
    nested_lanes = np.zeros(max(len(bounds) - 1, 0), dtype=np.int32)
    loop_segments = []
    for seg in range(len(bounds) - 1):
        lo, hi = int(bounds[seg]), int(bounds[seg + 1])
        if hi - lo >= VECTOR_MIN:
            got = _nest_proper(starts[lo:hi], ends[lo:hi])
            if got is not None:
                d, p = got
                depth[lo:hi] = d
                lane[lo:hi] = d
                parent[lo:hi] = np.where(p >= 0, p + lo, -1)
                nested_lanes[seg] = int(d.max()) + 1 if len(d) else 0
                continue
        loop_segments.append(seg)
    if loop_segments:
        # The loop, one segment at a time (they are not contiguous).
        for seg in loop_segments:
            lo, hi = int(bounds[seg]), int(bounds[seg + 1])
            sub_bounds = np.array([0, hi - lo], dtype=np.int64)
            r = _nest_loop(starts[lo:hi], ends[lo:hi], sub_bounds)
            depth[lo:hi] = r.depth
            lane[lo:hi] = r.lane
            overlap[lo:hi] = r.overlapping
            parent[lo:hi] = np.where(r.parent >= 0, r.parent + lo, -1)
            nested_lanes[seg] = r.nested_lanes[0]
    return Nesting(depth=depth, parent=parent, lane=lane, overlapping=overlap, nested_lanes=nested_lanes)


def _nest_proper(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Depth and parent of one track's slices (sorted by start, longer first), or None when
    some slice partly overlaps another (then the loop's lane packing is needed).

    With proper nesting, the slices still open at slice i are exactly the j < i with
    end_j > start_i (they form a chain), so depth_i is their count and the parent is the last
    j < i one level up. A slice ending after its parent means partial overlap: give up.
    """
    n = len(starts)
    if (ends < starts).any():
        return None
    idx = np.arange(n, dtype=np.int64)
    # j < i with end_j <= start_i: all j with end_j <= start_i, minus the zero-length slices at
    # start_i that sort at or after i (they close before i opens only in the loop's view).
    closed = np.searchsorted(np.sort(ends), starts, side="right")
    group_end = np.searchsorted(starts, starts, side="right")
    zero = ends == starts
    # First zero-length slice of each same-start group (zero-length ones sort last in a group).
    first_zero = np.where(zero, idx, n)
    first_zero = np.minimum.accumulate(first_zero[::-1])[::-1]
    first_zero = np.minimum(first_zero, group_end)
    after = group_end - np.maximum(idx, first_zero)
    depth = idx - (closed - np.maximum(after, 0))
    if (depth < 0).any():
        return None
    parent = np.full(n, -1, dtype=np.int64)
    has = depth > 0
    if has.any():
        keys = np.sort(depth * n + idx)
        q = (depth[has] - 1) * n + idx[has]
        pos = np.searchsorted(keys, q) - 1
        if (pos < 0).any():
            return None
        par = keys[pos] - (depth[has] - 1) * n
        if (par < 0).any() or (par >= idx[has]).any() or (depth[par] != depth[has] - 1).any():
            return None
        if (ends[has] > ends[par]).any() or (ends[par] <= starts[has]).any():
            return None  # partial overlap
        parent[has] = par
    return depth.astype(np.int32), parent.astype(np.int32)


def _nest_loop(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray) -> Nesting:
    n = len(starts)
    depth = [0] * n
    parent = [-1] * n
    overlap = [False] * n
    lane = [0] * n
    nested_lanes = []
    s_list = starts.tolist()
    e_list = ends.tolist()
    for seg in range(len(bounds) - 1):
        lo, hi = int(bounds[seg]), int(bounds[seg + 1])
        stack_end: list[int] = []
        stack_idx: list[int] = []
        spill: list[int] = []  # positions that partly overlap
        max_depth = -1
        for i in range(lo, hi):
            s = s_list[i]
            e = e_list[i]
            while stack_end and stack_end[-1] <= s:
                stack_end.pop()
                stack_idx.pop()
            if stack_end and e > stack_end[-1]:
                overlap[i] = True
                spill.append(i)
                continue
            d = len(stack_end)
            depth[i] = d
            lane[i] = d
            if d > max_depth:
                max_depth = d
            if d:
                parent[i] = stack_idx[-1]
            stack_end.append(e)
            stack_idx.append(i)
        base = max_depth + 1
        nested_lanes.append(base)
        if spill:
            free: list[tuple[int, int]] = []  # (end, lane) heap: reuse the lane that ends first
            used = 0
            for i in spill:  # in start order, so a lane whose end <= start stays disjoint
                if free and free[0][0] <= s_list[i]:
                    k = heapq.heappop(free)[1]
                else:
                    k = used
                    used += 1
                heapq.heappush(free, (e_list[i], k))
                lane[i] = base + k
                depth[i] = k
    return Nesting(
        depth=np.array(depth, dtype=np.int32),
        parent=np.array(parent, dtype=np.int32),
        lane=np.array(lane, dtype=np.int32),
        overlapping=np.array(overlap, dtype=bool),
        nested_lanes=np.array(nested_lanes, dtype=np.int32),
    )
