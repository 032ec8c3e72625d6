"""The numpy nesting pass against the reference loop, on random tracks with nesting, ties,
zero-length slices, duplicates and partial overlaps."""

from __future__ import annotations

import numpy as np

from vtui.store import nesting


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
        ref = nesting._nest_loop(starts, ends, bounds)
        for name in ("depth", "parent", "lane", "overlapping", "nested_lanes"):
            assert np.array_equal(getattr(fast, name), getattr(ref, name)), (trial, name)
