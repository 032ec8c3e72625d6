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

SPIN = "while True: pass"


@contextlib.contextmanager
def neighbours(count: int) -> Iterator[None]:
    """``count`` spinning processes while the block runs (0: none); stopped after, by their ids."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(max(count, 0))]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def load_average() -> float:
    return round(os.getloadavg()[0], 2)
