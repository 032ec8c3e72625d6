"""Scale in tracks: a trace of 1,000,000 threads with one slice each, opened
cold (load + index-cache write, as a first open) and warm (reopen from the cache), against the
msgspec floor of the same file. Medians of N fresh processes, CPU-seconds (user + system), the
1-minute load average before and after (the machine is shared: say so with every figure).

    python benchmarks/bench_many_tracks.py                   # 1,000,000 tracks, 3 runs
    python benchmarks/bench_many_tracks.py --tracks 100000 --runs 5
    python benchmarks/bench_many_tracks.py --root /path/to/other/checkout   # the same for another vtui
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.bench_load import FLOOR_CASE, LOAD_CASE  # noqa: E402
from benchmarks.bytecode import compiled_env  # noqa: E402
from benchmarks.fresh import run_case  # noqa: E402
from benchmarks.many_tracks_synth import bench_arguments  # noqa: E402


def _run(case: str, path: Path, root: Path, *extra: str, env: dict | None = None) -> dict:
    return run_case(case, [str(path), *extra], dict(os.environ) if env is None else env, root)


def bench(path: Path, runs: int, root: Path) -> dict:
    med = lambda rows, k: round(statistics.median(r[k] for r in rows), 3)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home, compiled_env() as env:
        env = {**env, "XDG_CACHE_HOME": cache_home, "PYTHONPATH": str(root)}
        load_before = os.getloadavg()[0]
        floor, cold, warm = [], [], []
        for _ in range(runs):  # interleaved: a busy spell hits every mode alike
            floor.append(_run(FLOOR_CASE, path, root))
            shutil.rmtree(Path(cache_home) / "vtui", ignore_errors=True)
            cold.append(_run(LOAD_CASE, path, root, "first", env=env))  # loads and writes the entry
            warm.append(_run(LOAD_CASE, path, root, "warm", env=env))
        load_after = os.getloadavg()[0]
    floor_cpu = med(floor, "cpu_s")
    return {
        "file": path.name, "mb": round(path.stat().st_size / 1e6, 1), "root": str(root), "runs": runs,
        "floor_s": med(floor, "seconds"), "floor_cpu_s": floor_cpu,
        "cold_s": med(cold, "seconds"), "cold_cpu_s": med(cold, "cpu_s"),
        "cold_cpu_over_floor": round(med(cold, "cpu_s") / floor_cpu, 1),
        "cold_peak_rss_mb": round(med(cold, "peak_rss_mb")),
        "warm_s": med(warm, "seconds"), "warm_all_s": [round(r["seconds"], 3) for r in warm],
        "warm_cpu_s": med(warm, "cpu_s"), "warm_cpu_over_floor": round(med(warm, "cpu_s") / floor_cpu, 2),
        "warm_peak_rss_mb": round(med(warm, "peak_rss_mb")),
        "load_average_1min": [round(load_before, 2), round(load_after, 2)],
    }


def main() -> None:
    opts, path = bench_arguments(__doc__ or "", ROOT)
    print(json.dumps(bench(path, opts.runs, opts.root.resolve())), flush=True)


if __name__ == "__main__":
    main()
