"""Trends over a sequence of step durations: staircase, spikes, gaps, slow first step.

Pure functions over numpy arrays (ns). The first step is kept apart: in inference it is the
prefill (time to first token), so it is judged against the others, never mixed into them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MAD_SIGMA = 1.4826  # MAD -> standard deviation for normal data
SPIKE_SIGMAS = 5.0  # a spike is this many robust sigmas above the median...
SPIKE_MIN_RATIO = 1.5  # ...and at least this multiple of the median (tiny MADs flag noise otherwise)
STAIRCASE_RISE = 0.25  # fitted rise over the run, as a fraction of the median step
STAIRCASE_R = 0.6  # and the fit must explain the trend (Pearson r)
SLOW_FIRST_RATIO = 3.0  # warm-up: first step >= 3x the median of the others
GAP_SHARE = 0.10  # gaps worth a finding: >= 10% of the steps' envelope


@dataclass
class Trend:
    trend: str  # "flat", "staircase", "decreasing", "spiky", "n/a" (too few steps)
    slope_ns_per_step: float
    r: float  # Pearson correlation of duration with step index (steps after the first)
    rise_pct: float  # fitted last minus fitted first, % of the median step
    spikes: list[int] = field(default_factory=list)  # step indices (0 = first step)
    spike_threshold_ns: float = 0.0
    slow_first: bool = False
    first_ratio: float = 0.0  # first step / median of the others
    gap_total_ns: int = 0
    gap_max_ns: int = 0
    gap_pct: float = 0.0  # of the envelope (first start to last end)


def own_starts(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Where each step's own time begins: its start, or the end of the steps before it when it
    began while their device work still ran (the CPU ran ahead). That stretch is theirs: counted
    again, a loop whose queue grows looks like a staircase and every time is too long."""
    starts, ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
    if len(starts) < 2:
        return starts
    out = starts.copy()
    before = np.maximum.accumulate(ends)[:-1]
    out[1:] = np.minimum(np.maximum(starts[1:], before), ends[1:])
    return out


def fit_slope(values: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of values against their index, and Pearson r (0 when undefined)."""
    n = len(values)
    if n < 2:
        return 0.0, 0.0
    x = np.arange(n, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    xc, yc = x - x.mean(), y - y.mean()
    sxx, syy = float((xc * xc).sum()), float((yc * yc).sum())
    slope = float((xc * yc).sum() / sxx)
    r = float((xc * yc).sum() / np.sqrt(sxx * syy)) if syy > 0 else 0.0
    return slope, r


def spike_threshold(values: np.ndarray) -> float:
    med = float(np.median(values))
    mad = float(np.median(np.abs(values - med)))
    return max(med + SPIKE_SIGMAS * MAD_SIGMA * mad, SPIKE_MIN_RATIO * med)


def analyse_trend(starts: np.ndarray, ends: np.ndarray) -> Trend:
    """Verdicts over steps given as start/end arrays in time order."""
    starts, ends = np.asarray(starts), np.asarray(ends)
    durs = (ends - starts).astype(np.float64)
    rest = durs[1:]
    out = Trend("n/a", 0.0, 0.0, 0.0)
    if len(durs) >= 2:
        _gaps(out, starts, ends)
        med = float(np.median(rest))
        out.first_ratio = float(durs[0] / med) if med > 0 else 0.0
        out.slow_first = med > 0 and durs[0] >= SLOW_FIRST_RATIO * med
    if len(rest) >= 3:
        _shape(out, rest, first_index=1)
    return out


def analyse_series(starts: np.ndarray, ends: np.ndarray) -> Trend:
    """Verdicts over steps of one kind (every step judged alike: no first step kept apart, since
    the prefill is a kind of its own here); ``slow_first`` and ``first_ratio`` stay unset."""
    starts, ends = np.asarray(starts), np.asarray(ends)
    durs = (ends - starts).astype(np.float64)
    out = Trend("n/a", 0.0, 0.0, 0.0)
    if len(durs) >= 2:
        _gaps(out, starts, ends)
    if len(durs) >= 3:
        _shape(out, durs, first_index=0)
    return out


def _gaps(out: Trend, starts: np.ndarray, ends: np.ndarray) -> None:
    """Idle time between consecutive steps, and its share of their envelope."""
    gaps = np.maximum(starts[1:] - ends[:-1], 0)
    envelope = int(ends.max() - starts.min())
    out.gap_total_ns, out.gap_max_ns = int(gaps.sum()), int(gaps.max())
    out.gap_pct = 100.0 * out.gap_total_ns / envelope if envelope > 0 else 0.0


def _shape(out: Trend, durs: np.ndarray, first_index: int) -> None:
    """Slope, spikes (indices counted from ``first_index``) and the verdict over ``durs``."""
    med = float(np.median(durs))
    out.slope_ns_per_step, out.r = fit_slope(durs)
    rise = out.slope_ns_per_step * (len(durs) - 1)
    out.rise_pct = 100.0 * rise / med if med > 0 else 0.0
    out.spike_threshold_ns = spike_threshold(durs)
    out.spikes = [int(i) + first_index for i in np.flatnonzero(durs > out.spike_threshold_ns)]
    if rise >= STAIRCASE_RISE * med and out.r >= STAIRCASE_R:
        out.trend = "staircase"
    elif -rise >= STAIRCASE_RISE * med and out.r <= -STAIRCASE_R:
        out.trend = "decreasing"
    else:
        out.trend = "spiky" if out.spikes else "flat"
