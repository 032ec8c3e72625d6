"""The pattern most benchmarks share: each measurement in a fresh Python process against this
checkout, on a private cache folder (never the user's ~/.cache) whose entry for the trace is made
first, so every run reopens it warm. A case is a plain function in a benchmark's module, run in a
fresh process by ``benchmarks/child.py``; ``run_case`` returns the JSON line it prints.

``cpu_s`` is the cases' clock: CPU-seconds of their own process (user + system), which depend less on
the machine's other load than wall time does.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = Path(__file__).resolve().parent / "child.py"

def cpu_s(children: bool = False) -> float:
    """CPU-seconds (user + system) of this process, and of its finished children with ``children``."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    out = r.ru_utime + r.ru_stime
    if children:
        c = resource.getrusage(resource.RUSAGE_CHILDREN)
        out += c.ru_utime + c.ru_stime
    return out


def open_trace(trace: str) -> dict:
    """The case that makes (or finds) ``trace``'s cache entry."""
    from vtui.load.trace import load_trace

    return {"events": load_trace(trace).event_count}


def case_command(case: str, args: list[str]) -> list[str]:
    """The command line that runs ``case`` (``MODULE:FUNCTION``) with ``args`` in a fresh process."""
    return [sys.executable, str(CHILD), case, *args]


def case_env(env: dict[str, str], root: Path = ROOT) -> dict[str, str]:
    """``env`` for a case measuring the vtui of checkout ``root``."""
    return {**env, "VTUI_BENCH_ROOT": str(root)}


def run_case(case: str, args: list[str], env: dict[str, str], root: Path = ROOT, prefix: tuple[str, ...] = (),
             timeout: float | None = None) -> dict:
    """Run ``case`` (``MODULE:FUNCTION``) with ``args`` in a fresh process measuring checkout ``root``
    (run from there) and return the JSON its function returned. ``prefix``: a command the process
    runs under (``taskset -c 0``)."""
    out = subprocess.run([*prefix, *case_command(case, args)], capture_output=True, text=True, check=True,
                         env=case_env(env, root), cwd=root, timeout=timeout)
    return json.loads(out.stdout.strip().splitlines()[-1])


@contextlib.contextmanager
def warm_cache(trace: Path, root: Path = ROOT) -> Iterator[dict[str, str]]:
    """The environment for children: a private cache folder holding ``trace``'s entry."""
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home:
        env = {**os.environ, "XDG_CACHE_HOME": cache_home}
        run_case("fresh:open_trace", [str(trace)], env, root)
        yield env


def load_average() -> list[float]:
    """The 1- and 5-minute load averages, printed with every figure."""
    return [round(x, 2) for x in os.getloadavg()[:2]]
