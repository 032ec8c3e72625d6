"""The nesting and self-time rules on inputs the trace-level tests do not reach: every tuning of
the vectorised passes, parent arrays in any order, intervals near the int64 range and float-step
edges. Each expectation comes from a brute-force computation in plain Python."""

from __future__ import annotations

import numpy as np
import pytest

from vtui.store import containment
from vtui.store.containment import containment_parents, depths, nesting_tolerance_ns, self_time


def _brute_parents(starts: list[int], ends: list[int], bounds: list[int], tol: int) -> list[int]:
    """The module's definition, O(n²): the latest earlier row on the track that contains the row
    (ends at or after it, or within ``tol`` after it when the row starts before that end)."""
    out = [-1] * len(starts)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        for i in range(lo, hi):
            for j in range(i - 1, lo - 1, -1):
                if ends[j] >= ends[i] or (ends[j] + tol >= ends[i] and starts[i] < ends[j]):
                    out[i] = j
                    break
    return out


def _sorted_track(rng: np.random.Generator, n: int, span: int, deep: bool) -> tuple[list[int], list[int]]:
    """Slices in (start, longer first) order: nested chains when ``deep``, else mostly flat."""
    s = np.sort(rng.integers(0, span, n))
    if deep:  # long slices starting early: many levels, partial overlaps between them
        e = s + rng.integers(0, span, n) // (1 + (s * 4) // span)
    else:
        e = s + np.where(rng.random(n) < 0.2, 0, rng.integers(0, span // 10 + 1, n))
    order = np.lexsort((s - e, s))
    return s[order].tolist(), e[order].tolist()


@pytest.mark.parametrize("top_levels", [0, 1, 3, 6])
@pytest.mark.parametrize("rounds", [0, 2])
@pytest.mark.parametrize("tol", [0, 4])
def test_parents_do_not_depend_on_the_tuning(monkeypatch, top_levels: int, rounds: int, tol: int):
    # The level-by-level settling, the pointer jumping and the row walk each give the rule's answer
    # alone or in any mix: the constants only move work between them.
    monkeypatch.setattr(containment, "TOP_LEVELS", top_levels)
    monkeypatch.setattr(containment, "JUMP_ROUNDS", rounds)
    rng = np.random.default_rng(top_levels * 10 + rounds + tol)
    for trial in range(25):
        starts, ends, bounds = [], [], [0]
        for _ in range(int(rng.integers(1, 4))):
            s, e = _sorted_track(rng, int(rng.integers(1, 60)), 1000, deep=trial % 2 == 0)
            starts += s
            ends += e
            bounds.append(len(starts))
        got = containment_parents(np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
                                  np.array(bounds), tol)
        assert got.tolist() == _brute_parents(starts, ends, bounds, tol)


def test_a_row_that_does_not_fit_in_the_first_row_is_not_its_child(monkeypatch):
    # Row 0 is a candidate like any other: a row after it that it does not contain has no parent.
    for top_levels in (0, 2):
        monkeypatch.setattr(containment, "TOP_LEVELS", top_levels)
        for rounds in (0, 3):
            monkeypatch.setattr(containment, "JUMP_ROUNDS", rounds)
            starts, ends = np.array([0, 5, 6, 7]), np.array([10, 20, 19, 8])
            assert containment_parents(starts, ends, np.array([0, 4])).tolist() == [-1, -1, 1, 2]


def _brute_depths(parent: list[int]) -> list[int]:
    out = []
    for i in range(len(parent)):
        d, p = 0, parent[i]
        while p >= 0:
            d, p = d + 1, parent[p]
        out.append(d)
    return out


def test_depths_of_parent_pointers_in_any_order():
    # A subset's local parent array (the call tree's) need not have its roots first.
    assert depths(np.array([2, 0, -1, 1])).tolist() == [1, 2, 0, 3]
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 80))
        perm = rng.permutation(n)  # a random forest: each node's parent comes earlier in perm
        parent = np.full(n, -1, dtype=np.int64)
        for k in range(1, n):
            if rng.random() < 0.8:
                parent[perm[k]] = perm[int(rng.integers(0, k))]
        got = depths(parent)
        assert got.dtype == np.int32  # the store's depth column type
        assert got.tolist() == _brute_depths(parent.tolist())


def _brute_self(parent: list[int], starts: list[int], ends: list[int]) -> list[int]:
    """Duration minus the length of the union of the children's intervals cut to the parent, by
    walking the sorted cut intervals (Python ints: no overflow)."""
    out = []
    for i in range(len(parent)):
        lo, hi = starts[i], max(ends[i], starts[i])
        cut = sorted((max(starts[k], lo), min(ends[k], hi)) for k in range(len(parent)) if parent[k] == i)
        union, reach = 0, None
        for a, b in cut:
            if b <= a:
                continue
            if reach is None or a >= reach:
                union, reach = union + b - a, b
            elif b > reach:
                union, reach = union + b - reach, b
        out.append(hi - lo - union)
    return out


def _random_forest(rng: np.random.Generator, n: int, span: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Any parent pointers, children in any order, intervals that may pass their parent's or be empty."""
    parent = np.where(rng.random(n) < 0.7, rng.integers(0, n, n), -1)
    parent[parent == np.arange(n)] = -1
    starts = rng.integers(0, span, n)
    ends = starts + np.where(rng.random(n) < 0.2, 0, rng.integers(0, span // 3 + 1, n))
    return parent.astype(np.int64), starts.astype(np.int64), ends.astype(np.int64)


def test_self_time_of_any_parent_array_equals_the_brute_union():
    rng = np.random.default_rng(17)
    for _ in range(60):
        parent, starts, ends = _random_forest(rng, int(rng.integers(1, 50)), 200)
        assert self_time(parent, starts, ends).tolist() == _brute_self(parent.tolist(), starts.tolist(), ends.tolist())


def test_self_time_with_a_zero_length_first_child_after_a_wider_group():
    # Parent 0's child spans 1000 ns; parent 1's first child is empty at its start, the second
    # covers half of it: 50 ns of self time, not one ns more.
    parent = np.array([-1, -1, 0, 1, 1])
    starts = np.array([0, 2000, 0, 2000, 2000])
    ends = np.array([1000, 2100, 1000, 2000, 2050])
    assert self_time(parent, starts, ends).tolist() == [0, 50, 1000, 0, 50]
    assert _brute_self(parent.tolist(), starts.tolist(), ends.tolist()) == [0, 50, 1000, 0, 50]


def test_self_time_and_parents_with_intervals_near_the_int64_range():
    # Spans past 2**62 ns take the dense-rank path for the running maximum.
    big = 1 << 62
    rng = np.random.default_rng(23)
    for _ in range(20):
        parent, starts, ends = _random_forest(rng, int(rng.integers(2, 30)), 1000)
        starts, ends = starts * (big // 1000), ends * (big // 1000) + rng.integers(0, 5, len(ends))
        assert self_time(parent, starts, ends).tolist() == _brute_self(parent.tolist(), starts.tolist(), ends.tolist())
    starts = [0, 0, 1 << 60, 1 << 61, big, big + 5, 3 << 61]
    ends = [big + 10, 1 << 61, (1 << 61) - 1, big, big + 10, big + 8, 3 << 61]
    got = containment_parents(np.array(starts), np.array(ends), np.array([0, 4, len(starts)]))
    assert got.tolist() == _brute_parents(starts, ends, [0, 4, len(starts)], 0) == [-1, 0, 1, 0, -1, 4, -1]


def test_tolerance_uses_the_last_timestamp_across_a_power_of_two():
    # Doubles just below 2**50 µs are 0.125 µs apart, from 2**50 on 0.25 µs: the trace's last
    # timestamp (origin + span) sets the step, even when the origin is below the boundary.
    origin = float(2**50 - 1000)
    assert nesting_tolerance_ns(origin, 999_000) == 125
    assert nesting_tolerance_ns(origin, 1_000_000) == 250
    assert nesting_tolerance_ns(float(2**50), 0) == 250
