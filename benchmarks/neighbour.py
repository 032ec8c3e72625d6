"""CPU-bound neighbours for the benchmarks: N processes that spin on a core for the duration.

A user's profiling box is rarely quiet (a serving job, other users, a second vtui). A fixed
neighbour makes "busy" a setting that can be given again, next to whatever else the machine runs
(the 1-minute load average is reported with every figure for that).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


def spin() -> None:
    while True:
        pass


# A neighbour that also streams through 64 MB (past the caches): what a second load, a test run or
# a serving job does. A spinning neighbour barely touches memory, so it takes a core but leaves
# the caches be: with it vtui's user CPU stayed put (3.3-3.6 s at 1 GB) while other jobs' loads
# on the same 2 cores raised it up to 5.4 s (user CPU vs involuntary context switches: r = 0.81).
def stream() -> None:
    import numpy as np

    a = np.ones(8 << 20)
    while True:
        a += 1.0


KINDS = {"spin": spin, "memory": stream}


@contextlib.contextmanager
def neighbours(count: int, kind: str = "spin") -> Iterator[None]:
    """``count`` busy processes while the block runs (0: none), of ``kind`` (see ``KINDS``);
    stopped after, by their ids."""
    cmd = [sys.executable, str(Path(__file__).with_name("child.py")), f"neighbour:{KINDS[kind].__name__}"]  # a case
    procs = [subprocess.Popen(cmd) for _ in range(max(count, 0))]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def load_average() -> float:
    return round(os.getloadavg()[0], 2)
