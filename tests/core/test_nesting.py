"""The numpy lane pass against the reference loop, on random tracks with nesting, ties,
zero-length slices, duplicates and partial overlaps. (The tree — parent and depth — follows
the containment rule; its oracle is in test_containment.py.)"""

from __future__ import annotations

import heapq

import numpy as np

from vtui.store import nesting
from vtui.store.nesting import Nesting


def _track(rng: np.random.Generator, n: int, overlaps: bool) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []

    def fill(a: int, b: int, depth: int) -> None:
        t = a
        while t < b and len(out) < n:
            s = min(b, t + int(rng.integers(0, 5)))
            e = s if rng.random() < 0.1 else min(b, s + int(rng.integers(0, 40)))
            out.append((s, e))
            if e - s > 2 and depth < 6:
                fill(s, e, depth + 1)
            t = e + int(rng.integers(0, 3))

    fill(0, 10**6, 0)
    if overlaps:
        for _ in range(int(rng.integers(1, 40))):
            s = int(rng.integers(0, 3 * 10**4))
            out.append((s, s + int(rng.integers(1, 500))))
    out += out[: int(rng.integers(0, 10))]  # exact duplicates
    return sorted(out, key=lambda iv: (iv[0], iv[0] - iv[1]))


def test_numpy_nesting_equals_the_loop(monkeypatch) -> None:
    monkeypatch.setattr(nesting, "VECTOR_MIN", 1)
    rng = np.random.default_rng(7)
    for trial in range(60):
        tracks = [_track(rng, int(rng.integers(1, 1500)), overlaps=trial % 3 == 0) for _ in range(3)]
        starts = np.array([s for t in tracks for s, _ in t], dtype=np.int64)
        ends = np.array([e for t in tracks for _, e in t], dtype=np.int64)
        bounds = np.cumsum([0] + [len(t) for t in tracks])
        fast = nesting.nest(starts, ends, bounds)
        ref = _nest_loop(starts, ends, bounds)
        for name in ("lane", "overlapping", "nested_lanes"):
            assert np.array_equal(getattr(fast, name), getattr(ref, name)), (trial, name)


def _nest_loop(starts: np.ndarray, ends: np.ndarray, bounds: np.ndarray) -> Nesting:
    """The reference: one stack per track in start order; a slice that starts inside the open
    one but ends after it goes to an extra lane (first fit over a heap of lane ends)."""
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


def test_empty_and_one_slice_tracks_among_others_nest_as_the_loop_does() -> None:
    """Many tiny tracks (a million one-slice threads): the per-segment work is skipped or done in
    whole-array passes, with the loop's result."""
    rng = np.random.default_rng(11)
    for trial in range(40):
        sizes = rng.choice([0, 1, 1, 1, 2, 7, 60, 900], size=15).tolist()
        tracks = [_track(rng, k, overlaps=trial % 2 == 0) if k else [] for k in sizes]
        starts = np.array([s for t in tracks for s, _ in t], dtype=np.int64)
        ends = np.array([e for t in tracks for _, e in t], dtype=np.int64)
        bounds = np.cumsum([0] + [len(t) for t in tracks])
        fast = nesting.nest(starts, ends, bounds)
        ref = _nest_loop(starts, ends, bounds)
        for name in ("lane", "overlapping", "nested_lanes"):
            assert np.array_equal(getattr(fast, name), getattr(ref, name)), (trial, name)


def test_nesting_split_over_threads_equals_one_thread(monkeypatch) -> None:
    """The lanes and the tree cut into pieces at clean cuts (threads > 1) give what one pass gives:
    lanes, overlaps, nested lanes, parents and depths; with a rounding tolerance too, where a row
    that starts within the tolerance after an end must not start a piece."""
    monkeypatch.setattr(nesting, "THREAD_MIN", 0)
    rng = np.random.default_rng(5)
    split = 0
    for trial in range(24):
        tracks = [_track(rng, int(rng.integers(1, 1500)), overlaps=trial % 3 == 0) for _ in range(int(rng.integers(1, 4)))]
        starts = np.array([s for t in tracks for s, _ in t], dtype=np.int64)
        ends = np.array([e for t in tracks for _, e in t], dtype=np.int64)
        bounds = np.cumsum([0] + [len(t) for t in tracks])
        tolerance = int(rng.choice([0, 0, 1, 3]))
        one = nesting.nest(starts, ends, bounds, tolerance, threads=1)
        for threads in (2, 3, 8):
            split += len(nesting._cuts(starts, ends, bounds, tolerance, threads)) > 2
            many = nesting.nest(starts, ends, bounds, tolerance, threads=threads)
            for name in ("lane", "overlapping", "nested_lanes", "parent", "depth"):
                assert np.array_equal(getattr(many, name), getattr(one, name)), (trial, threads, name)
    assert split > 40  # the pieces were really cut


def test_a_clean_cut_needs_every_earlier_slice_ended_beyond_the_tolerance() -> None:
    # [0, 10] then [10, 10] (zero-length, at its end: contained) then [12, 20] (2 ns after: within a
    # tolerance of 3, a child that ends late; with none, the next top-level call).
    starts = np.array([0, 10, 12, 30], dtype=np.int64)
    ends = np.array([10, 10, 20, 40], dtype=np.int64)
    bounds = np.array([0, 4])
    assert nesting._cuts(starts, ends, bounds, 0, 4) == [0, 2, 3, 4]
    assert nesting._cuts(starts, ends, bounds, 3, 4) == [0, 3, 4]
