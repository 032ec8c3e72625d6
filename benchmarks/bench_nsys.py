"""Load speed of Nsight Systems SQLite exports against the same events as a Chrome-trace JSON.

A synthetic export (benchmarks/nsys_synth.py, the documented schema) is written, and the very
same events are exported by vtui as Chrome-trace JSON; each is then loaded by vtui in a fresh
process, cold (no cache) and warm (reopened from the index cache), medians of N interleaved
runs. The nsys reader alone (SQLite → columns, no store build) is timed apart.

    python benchmarks/bench_nsys.py                       # 100k launches, 3 runs
    python benchmarks/bench_nsys.py --launches 400000 --schema 2024 --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LOAD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[2])
mode = sys.argv[3]
t = time.perf_counter()
if mode == "reader":
    from vtui.io.nsys import read_nsys
    n = len(read_nsys(sys.argv[1], jobs=os.cpu_count() or 1).columns)
else:
    from vtui.load.trace import load_trace
    n = load_trace(sys.argv[1], cache=(mode == "warm")).event_count  # all cores, as the CLI loads
dt = time.perf_counter() - t
# VmHWM, not ru_maxrss: the latter keeps the parent's peak across fork + exec
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"seconds": dt, "events": n, "peak_rss_mb": hwm / 1024}))
"""


def _run(path: Path, mode: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", LOAD, str(path), str(ROOT), mode], capture_output=True, text=True,
                         check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(launches: int, schema: str, runs: int, folder: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    from benchmarks.nsys_synth import write_nsys_export
    from vtui.cli import main as vtui_main

    export = folder / f"synthetic_{launches}_{schema}.sqlite"
    as_json = export.with_suffix(".json")
    if not export.exists():
        write_nsys_export(export, launches, schema)
    if not as_json.exists():
        vtui_main(["export", str(export), "-o", str(as_json), "--no-cache"])
    med = lambda rows: round(statistics.median(r["seconds"] for r in rows), 3)  # noqa: E731
    peak = lambda rows: round(statistics.median(r["peak_rss_mb"] for r in rows))  # noqa: E731
    got: dict[str, list[dict]] = {k: [] for k in ("reader", "nsys_cold", "json_cold", "nsys_warm", "json_warm")}
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home:
        env = {**os.environ, "XDG_CACHE_HOME": cache_home}
        for _ in range(runs):  # interleaved, so a busy spell hits every case alike
            got["reader"].append(_run(export, "reader", env))
            got["nsys_cold"].append(_run(export, "cold", env))
            got["json_cold"].append(_run(as_json, "cold", env))
            shutil.rmtree(Path(cache_home) / "vtui", ignore_errors=True)
            for path, key in ((export, "nsys_warm"), (as_json, "json_warm")):
                _run(path, "warm", env)  # writes the entry
                got[key].append(_run(path, "warm", env))
    result: dict = {"launches": launches, "schema": schema, "runs": runs, "events": got["nsys_cold"][0]["events"],
                    "sqlite_mb": round(export.stat().st_size / 1e6, 1), "json_mb": round(as_json.stat().st_size / 1e6, 1)}
    for key, rows in got.items():
        result[f"{key}_s"] = med(rows)
        result[f"{key}_all_s"] = [round(r["seconds"], 3) for r in rows]
        result[f"{key}_peak_rss_mb"] = peak(rows)
    result["cold_nsys_over_json"] = round(result["nsys_cold_s"] / result["json_cold_s"], 2)
    result["nsys_mb_per_s"] = round(result["sqlite_mb"] / result["nsys_cold_s"], 1)
    result["json_mb_per_s"] = round(result["json_mb"] / result["json_cold_s"], 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=100_000)
    parser.add_argument("--schema", choices=["2022", "2024", "old"], default="2024")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vtui-bench")
    opts = parser.parse_args()
    opts.cache.mkdir(parents=True, exist_ok=True)
    print(json.dumps(bench(opts.launches, opts.schema, opts.runs, opts.cache)), flush=True)


if __name__ == "__main__":
    main()
