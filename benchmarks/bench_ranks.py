"""`vtui ranks` over synthetic rank folders, every engine: wall, CPU-s and peak RSS.

Writes folders of N synthetic ranks of ~MB each (benchmarks/ranks_synth.py: steps with
all-reduces, a slow rank, thousands of small compute kernels per step), then runs
`vtui ranks FOLDER --json --no-cache --engine E` in a fresh process per run and reports the
median of the runs: wall, CPU-seconds (user+sys of that process) and its peak RSS. Measured in
the same run: the floor (a fresh process that only reads every rank file) and a plain msgspec
decode of every file to Python objects.

    python benchmarks/bench_ranks.py [--ranks 4 8 16] [--mb 20] [--runs 3] [--dir /tmp/vtui-bench-ranks] [--json]
        [--engines python duckdb spark] [--master local[2]]

The Python engine holds every rank in one store (the app's view of a folder); the DuckDB engine
loads one rank at a time, so its peak RSS should stay flat as the number of ranks grows. The Spark
engine (`--engines spark`, Java 17+) starts a JVM with its own Python workers, so it is measured
over its whole process tree (sampled every 0.1 s: CPU-s of every process, peak of their summed
RSS — in local mode the driver and executors share that JVM). Then the two halves of the SQL
engines apart: `vtui export-ranks` (the per-rank conversion, one process, all ranks) and the SQL
alone over that export on DuckDB and on Spark; from them the per-MB costs and a labelled
extrapolation to 256 ranks of 1 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.fresh import case_command, run_case  # noqa: E402
from benchmarks.ranks_synth import rank_events, slow_rank, write_rank  # noqa: E402

STEPS = 40

def make_folder_case(folder: str, ranks: str, mb: str) -> dict:
    make_folder(Path(folder), int(ranks), float(mb))
    return {}


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


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def measure_tree(cmd: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of a process and every process it starts (a JVM, its workers),
    sampled every 0.1 s: a process's last CPU sample counts once it is gone."""
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    cpu: dict[int, float] = {}
    peak = 0
    while proc.poll() is None:
        rss = 0
        for pid in _tree(proc.pid):
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    f = fh.read().rsplit(")", 1)[1].split()
                cpu[pid] = (int(f[11]) + int(f[12])) / tick
                rss += int(f[21]) * page
            except (OSError, IndexError, ValueError):
                continue
        peak = max(peak, rss)
        time.sleep(0.1)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode()[-400:]}")
    return wall, sum(cpu.values()), peak / 2**20


def median3(cmd: list[str], runs: int, tree: bool = False) -> tuple[float, float, float]:
    got = [(measure_tree if tree else measure)(cmd) for _ in range(runs)]
    return tuple(statistics.median(x[i] for x in got) for i in range(3))  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/vtui-bench-ranks")
    ap.add_argument("--engines", nargs="+", default=["python", "duckdb"], choices=["python", "duckdb", "spark"])
    ap.add_argument("--master", default="local[2]", help="the Spark master for --engines spark")
    ap.add_argument("--json", action="store_true", help="one JSON line per folder (for benchmarks/results/)")
    ap.add_argument("--no-references", action="store_true", help="skip the read floor and the msgspec decode")
    opts = ap.parse_args()
    say = (lambda *a, **k: None) if opts.json else print
    say(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
        f"{opts.runs} fresh runs each, medians; {os.cpu_count()} cores")
    say(f"{'ranks':>5} {'MB':>7} {'run':<12} {'wall s':>7} {'CPU s':>7} {'CPU/rank':>8} {'peak MiB':>9}")
    for n in opts.ranks:
        folder = Path(opts.dir) / f"r{n}-{opts.mb:g}mb"
        # In a child: the events of a rank are big Python lists, and a parent that grew would show
        # in every measured child's peak RSS (a forked child starts with its parent's pages).
        run_case("bench_ranks:make_folder_case", [str(folder), str(n), str(opts.mb)], {**os.environ})
        size = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
        # References, each a fresh process over the same files: reading the bytes (the floor), and a plain
        # msgspec decode of each file to Python objects (what a dict-building reader pays, rank by rank).
        runs = {} if opts.no_references else {"read (floor)": case_command("whole_process:read_files", [str(folder)]),
                                               "msgspec": case_command("whole_process:decode_files", [str(folder)])}
        vtui = [sys.executable, "-m", "vtui"]
        for engine in opts.engines:
            runs[engine] = [*vtui, "ranks", str(folder), "--json", "--no-cache", "--engine", engine]
            if engine == "spark":
                runs[engine] += ["--master", opts.master]
        export = Path(opts.dir) / f"export-r{n}-{opts.mb:g}mb"
        if "duckdb" in opts.engines or "spark" in opts.engines:
            runs["export-ranks"] = [*vtui, "export-ranks", str(folder), "-o", str(export), "--no-cache"]
            for engine in ("duckdb", "spark"):
                if engine in opts.engines:
                    runs[f"{engine} SQL"] = [*vtui, "ranks", str(export), "--json", "--engine", engine]
                    if engine == "spark":
                        runs[f"{engine} SQL"] += ["--master", opts.master]
        got = {}
        for label, cmd in runs.items():
            wall, cpu, rss = got[label] = median3(cmd, opts.runs, tree=label.startswith("spark"))
            say(f"{n:>5} {size:>7.0f} {label:<12} {wall:>7.2f} {cpu:>7.2f} {cpu / n:>8.2f} {rss:>9.0f}", flush=True)
        if opts.json:
            line: dict = {"ranks": n, "mb": round(size, 1), "runs": opts.runs}
            for label, (wall, cpu, rss) in got.items():
                key = re.sub(r"\W+", "_", label).strip("_").lower()
                line.update({f"{key}_wall_s": round(wall, 3), f"{key}_cpu_s": round(cpu, 3), f"{key}_peak_rss_mb": round(rss)})
            if "export-ranks" in got:
                line["conversion_cpu_s_per_mb"] = round(got["export-ranks"][1] / size, 3)
            print(json.dumps({**line, "load_average": [round(x, 2) for x in os.getloadavg()]}), flush=True)
            continue
        if "export-ranks" in got:
            per_mb = got["export-ranks"][1] / size
            print(f"  conversion: {per_mb:.3f} CPU-s per trace MB, {got['export-ranks'][1] / n:.2f} CPU-s per {size / n:.0f} MB rank")
            print(f"  extrapolated (linear in MB, from the line above): 256 ranks x 1 GB = {256 * 1000 * per_mb / 3600:.1f} "
                  f"CPU-h of conversion; on N executor cores about {256 * 1000 * per_mb / 60:.0f}/N min")
            for label in ("duckdb SQL", "spark SQL"):
                if label in got:
                    print(f"  {label}: {got[label][1]:.2f} CPU-s for {size:.0f} MB of traces "
                          f"({got[label][1] / size:.3f} CPU-s per MB, start-up included)")
    say(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
