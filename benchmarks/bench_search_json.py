"""``vtui search --json`` with many matches: CPU-seconds and peak RSS of the whole command, against
a floor measured in the same run (the same command with a regex that matches nothing: CLI start,
warm cache open, the name scan) and the table form.

Each run is a fresh process (``/usr/bin/time``-style numbers from ``wait4``), the trace reopened
from a private cache entry made first. Medians over the runs, interleaved.

    python benchmarks/bench_search_json.py TRACE [--regex .] [--runs 3] [--root DIR]

``--root``: the vtui checkout to run (another tree's code, for a before/after on one machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_once(root: Path, args: list[str], env: dict) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS bytes) of ``python -m vtui ARGS`` run from ``root``, stdout to /dev/null."""
    import time

    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen([sys.executable, "-m", "vtui", *args], cwd=root, env=env, stdout=null)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"vtui {' '.join(args)} failed")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--regex", default=".")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--root", default=str(ROOT))
    opts = ap.parse_args()
    root = Path(opts.root).resolve()
    trace = str(Path(opts.trace).resolve())
    modes = {"floor (no match)": ["search", trace, "^no such name$", "--json"],
             "table": ["search", trace, opts.regex],
             "--json": ["search", trace, opts.regex, "--json"]}
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home:  # never the user's ~/.cache
        env = {**os.environ, "XDG_CACHE_HOME": cache_home}
        run_once(root, ["info", trace], env)  # the cache entry
        got: dict[str, list[tuple[float, float, int]]] = {m: [] for m in modes}
        for _ in range(opts.runs):
            for mode, args in modes.items():
                got[mode].append(run_once(root, args, env))
    out = subprocess.run([sys.executable, "-m", "vtui", "search", trace, opts.regex], cwd=root, env=env,
                         capture_output=True, text=True).stdout.splitlines()[:1]
    print(f"{Path(trace).name}, regex {opts.regex!r}: {out[0] if out else '?'}; vtui from {root}")
    print(f"load average {os.getloadavg()[0]:.2f} / {os.getloadavg()[1]:.2f} (1 / 5 min); medians of {opts.runs}")
    floor_cpu = statistics.median(c for _, c, _ in got["floor (no match)"])
    for mode, rows in got.items():
        wall = statistics.median(w for w, _, _ in rows)
        cpu = statistics.median(c for _, c, _ in rows)
        rss = statistics.median(r for _, _, r in rows)
        print(f"  {mode:<18} {wall:6.2f} s wall  {cpu:6.2f} CPU-s ({cpu - floor_cpu:+.2f} over the floor)  "
              f"peak RSS {rss / 2**20:7.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
