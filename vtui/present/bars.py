"""Block-glyph bars and sparklines: the one place that turns numbers into bar characters."""

from __future__ import annotations

import numpy as np

EIGHTHS = " ▏▎▍▌▋▊▉█"  # a cell filled by 0..8 eighths, left to right
SPARK = "▁▂▃▄▅▆▇█"  # eight levels, lowest to highest
_TIPS = ("",) + tuple(EIGHTHS[1:8])  # the part-cell at a bar's tip; nothing for a whole number of cells


def scaled_bar(value: float | None, top: float, width: int) -> str:
    """A bar of ``width`` cells at ``top``, rounded to the nearest eighth; empty for nothing or no scale."""
    if not value or top <= 0:
        return ""
    eighths = int(round(width * 8 * value / top))
    return "█" * (eighths // 8) + _TIPS[eighths % 8]


def step_bars(durations: np.ndarray, width: int) -> list[str]:
    """One bar per step, scaled to the longest."""
    top = float(durations.max()) if len(durations) else 0.0
    return [scaled_bar(d, top, width) for d in durations.tolist()]


def fraction_bar(fraction: float, width: int) -> str:
    """A left-aligned bar for a share in [0, 1], padded to ``width``; the tip rounds down to an eighth."""
    cells = max(0.0, min(1.0, fraction)) * width
    full = int(cells)
    tip = EIGHTHS[int((cells - full) * 8)] if full < width else ""
    return ("█" * full + tip).ljust(width)


def sparkline(values: np.ndarray, lo: float | None = None, hi: float | None = None) -> str:
    """One glyph per value on the scale ``lo``..``hi`` (the values' own range by default)."""
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return ""
    lo = float(v.min()) if lo is None else lo
    hi = float(v.max()) if hi is None else hi
    if hi <= lo:
        return SPARK[0] * len(v)
    idx = np.clip(((v - lo) / (hi - lo) * (len(SPARK) - 1)).round().astype(int), 0, len(SPARK) - 1)
    return "".join(SPARK[i] for i in idx.tolist())


def shared_sparklines(a: np.ndarray, b: np.ndarray) -> tuple[str, str]:
    """Two series on one scale, so the higher one looks higher."""
    both = np.concatenate([np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)])
    if not len(both):
        return "", ""
    lo, hi = float(both.min()), float(both.max())
    return sparkline(a, lo, hi), sparkline(b, lo, hi)
