"""A figure of one side (one or several runs) and how far the difference between two sides can be
trusted: a two-level bootstrap with a fixed seed, numpy only.

A side's figure is the median over its runs of each run's statistic (one run: that run's). The
bootstrap resamples the runs (with replacement), then the steps inside each chosen run, so the
interval is as wide as the run-to-run noise and the step-to-step noise together: with one run per
side it is the plain bootstrap over steps; with several, a difference that only one run shows
does not come out significant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEED = 20240531  # fixed: the same inputs give the same interval, run after run
RESAMPLES = 1000
MAX_CELLS = 4_000_000  # resamples × steps drawn per run at once (memory bound for long runs)
LEVEL = 0.95
MIN_SAMPLES = 3  # steps per side below which no interval is given
NOISE_NS = 1_000  # a difference of medians under 1 µs (a Chrome trace's resolution) is never significant


@dataclass(frozen=True)
class SideFigure:
    n: int  # steps over all runs
    runs: int
    median_ns: float
    p90_ns: float
    spread_ns: float  # interquartile range of the pooled steps
    run_medians: list[float]  # per run (several runs: their spread is the run-to-run noise)

    @property
    def run_spread_pct(self) -> float | None:
        """(max − min) of the run medians as % of the side's median; None with one run."""
        if len(self.run_medians) < 2 or self.median_ns <= 0:
            return None
        return 100.0 * (max(self.run_medians) - min(self.run_medians)) / self.median_ns


@dataclass(frozen=True)
class Difference:
    delta_pct: float | None  # (B − A) ÷ A of the side figures
    ci_pct: tuple[float, float] | None  # bootstrap interval of delta_pct
    significant: bool  # the interval excludes 0 and the medians differ by more than NOISE_NS


def side_figure(runs: list[np.ndarray]) -> SideFigure | None:
    """The figures of one side from its runs' samples (empty runs are left out); None without any."""
    runs = [np.asarray(r, dtype=np.float64) for r in runs if len(r)]
    if not runs:
        return None
    pooled = np.concatenate(runs)
    q25, q75 = np.percentile(pooled, [25, 75])
    medians = [float(np.median(r)) for r in runs]
    return SideFigure(len(pooled), len(runs), float(np.median(medians)),
                      float(np.median([np.percentile(r, 90) for r in runs])), float(q75 - q25), medians)


def _sorted_positions(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``r`` sorted, and each sample's position in that order (as small an int as fits)."""
    order = np.argsort(r, kind="stable")
    n = len(r)
    pos = np.empty(n, dtype=np.int16 if n < 2**15 else np.int32 if n < 2**31 else np.int64)
    pos[order] = np.arange(n)
    return r[order], pos


def _resampled_medians(ranked: np.ndarray, pos: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Per row of ``idx`` (draws from the samples): ``np.median`` of the drawn samples, exactly.
    The k-th smallest of the drawn samples is the sorted sample at the k-th smallest drawn position,
    so the selection runs on small ints, and at one rank (the other middle one of an even count is
    the largest below it)."""
    p = pos[idx]
    half = idx.shape[1] // 2
    p.partition(half, axis=1)
    upper = ranked[p[:, half]]
    if idx.shape[1] % 2:
        return upper
    return (ranked[p[:, :half].max(axis=1)] + upper) / 2


def _boot_side(runs: list[np.ndarray], rng: np.random.Generator, resamples: int, q: float) -> np.ndarray:
    """Per resample: the median over resampled runs of each resampled run's ``q``-th percentile."""
    per_run = np.empty((len(runs), resamples))
    for k, r in enumerate(runs):
        n = len(r)
        ranked, pos = _sorted_positions(r)
        chunk = max(1, MAX_CELLS // max(n, 1))
        for lo in range(0, resamples, chunk):
            hi = min(resamples, lo + chunk)
            idx = rng.integers(0, n, size=(hi - lo, n))
            per_run[k, lo:hi] = (_resampled_medians(ranked, pos, idx) if q == 50
                                 else np.percentile(r[idx], q, axis=1, overwrite_input=True))
    if len(runs) == 1:
        return per_run[0]
    pick = rng.integers(0, len(runs), size=(resamples, len(runs)))
    return np.median(per_run[pick, np.arange(resamples)[:, None]], axis=1)


def difference(a_runs: list[np.ndarray], b_runs: list[np.ndarray], resamples: int = RESAMPLES,
               level: float = LEVEL, seed: int = SEED, q: float = 50) -> Difference:
    """B against A: Δ% of the side figures (the median, or the ``q``-th percentile: 90 for p90),
    its bootstrap interval and whether it is significant."""
    a_runs = [np.asarray(r, dtype=np.float64) for r in a_runs if len(r)]
    b_runs = [np.asarray(r, dtype=np.float64) for r in b_runs if len(r)]
    fa, fb = side_figure(a_runs), side_figure(b_runs)
    if fa is None or fb is None or fa.median_ns <= 0:
        return Difference(None, None, False)
    va, vb = (fa.median_ns, fb.median_ns) if q == 50 else (fa.p90_ns, fb.p90_ns) if q == 90 else (
        float(np.median([np.percentile(r, q) for r in a_runs])), float(np.median([np.percentile(r, q) for r in b_runs])))
    if va <= 0:
        return Difference(None, None, False)
    delta = 100.0 * (vb - va) / va
    if fa.n < MIN_SAMPLES or fb.n < MIN_SAMPLES:
        return Difference(delta, None, False)
    rng = np.random.default_rng(seed)
    ba, bb = _boot_side(a_runs, rng, resamples, q), _boot_side(b_runs, rng, resamples, q)
    ok = ba > 0
    ratios = 100.0 * (bb[ok] - ba[ok]) / ba[ok]
    if not len(ratios):
        return Difference(delta, None, False)
    tail = (1 - level) / 2 * 100
    lo, hi = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    beyond = abs(vb - va) > NOISE_NS
    return Difference(delta, (lo, hi), bool(beyond and (lo > 0 or hi < 0)))
