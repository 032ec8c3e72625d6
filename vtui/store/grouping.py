"""One integer group id per distinct tuple of small non-negative int columns."""

from __future__ import annotations

import numpy as np


def group_key(*cols: np.ndarray) -> np.ndarray:
    """int64 key per row, equal exactly where all columns are equal (mixed radix)."""
    key = np.zeros(len(cols[0]), dtype=np.int64)
    radix = 1
    for col in cols:
        size = int(col.max(initial=0)) + 1
        if radix * size >= 1 << 62:  # too wide for one int64: fall back to a row-wise unique
            stacked = np.stack([c.astype(np.int64) for c in cols], axis=1)
            return np.unique(stacked, axis=0, return_inverse=True)[1].ravel().astype(np.int64)
        key = key * size + col.astype(np.int64)
        radix *= size
    return key
