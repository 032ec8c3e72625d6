"""IntervalIndex: lanes never overlap, and a window query equals a brute-force scan."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import FIXTURES
from vtui.load.trace import load_trace


@pytest.fixture(scope="module")
def store():
    return load_trace(FIXTURES / "hf_llama_stack.json.gz")


def test_lanes_are_disjoint_and_sorted(store):
    s = store.slices
    for t in store.tracks:
        for lane in range(store.index.lane_count(t.id)):
            a, b = store.index.lane_rows(t.id, lane)
            assert (s.track[a:b] == t.id).all() and (s.lane[a:b] == lane).all()
            assert (np.diff(s.start_ns[a:b]) >= 0).all()
            assert (s.end_ns[a:b - 1] <= s.start_ns[a + 1:b]).all()


def test_partial_overlaps_are_kept_on_extra_lanes(store):
    over = [t for t in store.tracks if t.overlapping]
    assert over, "hf_llama_stack has regions that are not properly nested"
    for t in over:
        assert t.lanes > t.nested_lanes
    assert len(store.slices) == 25998  # every X event kept


def test_window_query_equals_brute_force(store):
    s = store.slices
    rng = np.random.default_rng(3)
    for t in store.tracks:
        if not t.slice_count:
            continue
        mine = s.track == t.id
        for _ in range(30):
            t0 = int(rng.integers(0, store.span_ns))
            t1 = t0 + int(rng.integers(0, store.span_ns // 20 + 1))
            got = np.sort(store.index.query(t.id, t0, t1))
            want = np.flatnonzero(mine & (s.start_ns <= t1) & (s.end_ns >= t0))
            assert np.array_equal(got, want)


def test_self_time_is_duration_minus_the_union_of_direct_children(store):
    s = store.slices
    rows = np.flatnonzero(s.parent >= 0)[:500]
    for r in np.unique(s.parent[rows]).tolist():
        kids = np.flatnonzero(s.parent == r)
        covered, reach = 0, None
        cut = np.minimum(s.end_ns[kids], s.end_ns[r])  # a child may pass its parent's end by the tolerance
        for a, b in sorted(zip(s.start_ns[kids].tolist(), cut.tolist())):
            lo = a if reach is None else max(a, reach)
            covered += max(0, b - lo)
            reach = b if reach is None else max(reach, b)
        assert store.self_ns[r] == s.dur_ns[r] - covered
