"""Containment nesting and self time on synthetic tracks of the shapes real traces have.

For each shape (n slices, one track): a flat GPU stream, wide siblings under one long span,
a deep Python stack, and `with_stack` annotations that start inside their enter frame. Times
`containment_parents`, `depths` and `self_time` in CPU-seconds (median of --runs) next to a
floor measured in the same run on the same arrays: one `np.lexsort` of (ends, starts), the
cheapest thing that touches every row in order.

    python benchmarks/bench_nesting.py [--n 1000000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vtui.store.containment import containment_parents, depths, self_time


def flat(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    starts = np.cumsum(rng.integers(1, 50, n))
    return starts, starts + rng.integers(1, 40, n)  # some overlap their successor (PDL)


def wide(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    s, e = flat(n - 1, rng)
    return np.concatenate([[0], s]), np.concatenate([[int(e.max()) + 1], e])


def deep(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Stacks 60 frames deep (a Python stack), one after another."""
    depth = 60
    stacks = n // depth
    base = np.repeat(np.arange(stacks, dtype=np.int64) * 1000, depth)
    level = np.tile(np.arange(depth, dtype=np.int64), stacks)
    return base + level, base + 900 - level


def annotated(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per step: enter frame [0,10], annotation [5,990] over 20 ops, exit frame [985,995]."""
    per = 23
    steps = n // per
    local_s = np.array([0, 5] + [20 + 45 * k for k in range(20)] + [985])
    local_e = np.array([10, 990] + [60 + 45 * k for k in range(20)] + [995])
    base = np.repeat(np.arange(steps, dtype=np.int64) * 1000, per)
    return base + np.tile(local_s, steps), base + np.tile(local_e, steps)


def cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    print(f"{'shape':<10} {'rows':>9} {'floor':>8} {'parents':>8} {'depths':>8} {'self':>8}  ratio to floor")
    for name, make in (("flat", flat), ("wide", wide), ("deep", deep), ("annotated", annotated)):
        med = measure(*make(args.n, rng), args.runs)
        total = med["parents"] + med["depths"] + med["self"]
        print(f"{name:<10} {med['rows']:>9,} {med['floor']:>7.3f}s {med['parents']:>7.3f}s {med['depths']:>7.3f}s "
              f"{med['self']:>7.3f}s  {total / max(med['floor'], 1e-9):.1f}x")


def measure(s: np.ndarray, e: np.ndarray, runs: int) -> dict[str, float]:
    order = np.lexsort((s - e, s))
    s, e = s[order], e[order]
    bounds = np.array([0, len(s)])
    parent = containment_parents(s, e, bounds)
    steps = (("floor", lambda: np.lexsort((e, s))), ("parents", lambda: containment_parents(s, e, bounds)),
             ("depths", lambda: depths(parent)), ("self", lambda: self_time(parent, s, e)))
    med: dict[str, float] = {label: statistics.median(cpu(fn) for _ in range(runs)) for label, fn in steps}
    med["rows"] = len(s)
    return med


if __name__ == "__main__":
    main()
