"""The pattern most benchmarks share: each measurement in a fresh Python process against this
checkout, on a private cache folder (never the user's ~/.cache) whose entry for the trace is made
first, so every run reopens it warm. A child prints one JSON line last; ``run_child`` returns it.

``CPU_S`` is the child's clock: CPU-seconds of its own process (user + system), which depend less on
the machine's other load than wall time does.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CPU_S = '''
import resource

def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
'''

_WARM = "import sys; sys.path.insert(0, sys.argv[2]); from vtui.load.trace import load_trace; load_trace(sys.argv[1])"


@contextlib.contextmanager
def warm_cache(trace: Path) -> Iterator[dict[str, str]]:
    """The environment for children: a private cache folder holding ``trace``'s entry."""
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home:
        env = {**os.environ, "XDG_CACHE_HOME": cache_home}
        subprocess.run([sys.executable, "-c", _WARM, str(trace), str(ROOT)], check=True, env=env)
        yield env


def run_child(code: str, args: list[str], env: dict[str, str]) -> dict:
    """Run ``code`` as ``python -c code TRACE ROOT ...`` style (``args`` as given) and return the JSON
    of its last line of output."""
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def load_average() -> list[float]:
    """The 1- and 5-minute load averages, printed with every figure."""
    return [round(x, 2) for x in os.getloadavg()[:2]]
