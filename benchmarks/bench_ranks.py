"""Issue 27: `vtui ranks` over synthetic rank folders, both engines: wall, CPU-s and peak RSS.

Writes folders of N synthetic ranks of ~MB each (benchmarks/ranks_synth.py: steps with
all-reduces, a slow rank, thousands of small compute kernels per step), then runs
`vtui ranks FOLDER --json --no-cache --engine E` in a fresh process per run and reports the
median of the runs: wall, CPU-seconds (user+sys of that process) and its peak RSS. Measured in
the same run: the floor (a fresh process that only reads every rank file) and a plain msgspec
decode of every file to Python objects.

    python benchmarks/bench_ranks.py [--ranks 4 8 16] [--mb 20] [--runs 3] [--dir /tmp/vtui-bench-ranks]

The Python engine holds every rank in one store (the app's view of a folder); the DuckDB engine
loads one rank at a time, so its peak RSS should stay flat as the number of ranks grows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.ranks_synth import rank_events, slow_rank, write_rank  # noqa: E402

STEPS = 40
# References, each a fresh process over the same files: reading the bytes (the floor), and a plain
# msgspec decode of each file to Python objects (what a dict-building reader pays, rank by rank).
FLOOR = "import sys, pathlib\nfor f in sorted(pathlib.Path(sys.argv[1]).iterdir()): f.read_bytes()\n"
DECODE = ("import msgspec, sys, pathlib\n"
          "for f in sorted(pathlib.Path(sys.argv[1]).iterdir()): msgspec.json.decode(f.read_bytes())\n")


def make_folder(folder: Path, ranks: int, mb: float) -> None:
    if folder.is_dir() and len(list(folder.glob("*.json"))) == ranks:
        return
    folder.mkdir(parents=True, exist_ok=True)
    filler = max(1, int(mb * 1e6 / 135 / STEPS))  # ~135 bytes per filler kernel event
    for r in range(ranks):
        ev = rank_events(r, ranks, STEPS, slow_rank(ranks // 2), filler=filler)
        write_rank(folder, f"bench_rank{r}.json", ev, r, ranks)


def measure(cmd: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one fresh process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def median3(cmd: list[str], runs: int) -> tuple[float, float, float]:
    got = [measure(cmd) for _ in range(runs)]
    return tuple(statistics.median(x[i] for x in got) for i in range(3))  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/vtui-bench-ranks")
    opts = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
          f"{opts.runs} fresh runs each, medians; {os.cpu_count()} cores")
    print(f"{'ranks':>5} {'MB':>7} {'run':<12} {'wall s':>7} {'CPU s':>7} {'CPU/rank':>8} {'peak MiB':>9}")
    for n in opts.ranks:
        folder = Path(opts.dir) / f"r{n}-{opts.mb:g}mb"
        # In a child: the events of a rank are big Python lists, and a parent that grew would show
        # in every measured child's peak RSS (a forked child starts with its parent's pages).
        subprocess.run([sys.executable, "-c", f"from benchmarks.bench_ranks import make_folder; from pathlib import Path; "
                        f"make_folder(Path({str(folder)!r}), {n}, {opts.mb})"], cwd=ROOT, check=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        size = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
        runs = {"read (floor)": [sys.executable, "-c", FLOOR, str(folder)],
                "msgspec": [sys.executable, "-c", DECODE, str(folder)]}
        for engine in ("python", "duckdb"):
            runs[engine] = [sys.executable, "-m", "vtui", "ranks", str(folder), "--json", "--no-cache", "--engine", engine]
        for label, cmd in runs.items():
            wall, cpu, rss = median3(cmd, opts.runs)
            print(f"{n:>5} {size:>7.0f} {label:<12} {wall:>7.2f} {cpu:>7.2f} {cpu / n:>8.2f} {rss:>9.0f}", flush=True)
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
