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


def nest(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray) -> Nesting:
    """``bounds`` holds the start offset of each track segment plus the total length."""
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
