"""order_by equals np.lexsort, ties and fallbacks included."""

from __future__ import annotations

import numpy as np

from vtui.store.sorting import order_by


def test_order_by_equals_lexsort() -> None:
    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(0, 400))
        major = rng.integers(0, 5, n)
        minor = rng.integers(0, 30, n) * (10**17 if trial % 7 == 0 else 1)  # some too wide to pack
        if trial % 5 == 0:
            minor = minor - 50  # negative times
        t1 = rng.integers(-3, 3, n)
        t2 = rng.permutation(n)
        assert np.array_equal(order_by(major, minor, (t1, t2)), np.lexsort((t2, t1, minor, major))), trial
        assert np.array_equal(order_by(major, minor), np.lexsort((minor, major))), trial
