"""CLI commands at 1,000,000 tracks: ``vtui info`` (a line per track), ``vtui stats
--track REGEX`` (the filter over every track's label) and ``vtui query`` over the track, thread,
process, thread_track and counter_track tables, each in a fresh process reopening a warm cache
entry, against a floor in the same run (a fresh process that imports vtui and reopens the same entry:
what every command pays before its own work). Medians of N runs, CPU-seconds (user + system of the
process and its children), the 1-minute load average before and after (the machine is shared).

    python benchmarks/bench_many_tracks_cli.py                      # 1,000,000 tracks, 3 runs
    python benchmarks/bench_many_tracks_cli.py --root /other/checkout --tracks 100000
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.bytecode import compiled_env  # noqa: E402
from benchmarks.fresh import case_command, case_env  # noqa: E402
from benchmarks.many_tracks_synth import bench_arguments  # noqa: E402

TRACK_SQL = ("SELECT (SELECT COUNT(*) FROM track), (SELECT COUNT(*) FROM thread_track),"
             " (SELECT COUNT(*) FROM thread JOIN process USING (upid)), (SELECT COUNT(*) FROM counter_track)")


def _cpu_of(cmd: list[str], env: dict, cwd: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench(path: Path, runs: int, root: Path) -> dict:
    cases = {
        "floor_reopen": case_command("whole_process:reopen", [str(path)]),
        "info": [sys.executable, "-m", "vtui", "info", str(path)],
        "stats_track": [sys.executable, "-m", "vtui", "stats", str(path), "--track", "thread 9"],
        "query_tracks": [sys.executable, "-m", "vtui", "query", str(path), TRACK_SQL],
    }
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home, compiled_env() as env:
        env = case_env({**env, "XDG_CACHE_HOME": cache_home, "PYTHONPATH": str(root)}, root)
        subprocess.run(cases["floor_reopen"], env=env, cwd=root, check=True,
                       stdout=subprocess.DEVNULL)  # writes the entry
        load_before = os.getloadavg()[0]
        cpu: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(runs):  # interleaved: a busy spell hits every case alike
            for k, cmd in cases.items():
                cpu[k].append(_cpu_of(cmd, env, root))
        load_after = os.getloadavg()[0]
    med = {k: round(statistics.median(v), 3) for k, v in cpu.items()}
    return {"file": path.name, "root": str(root), "runs": runs, **{f"{k}_cpu_s": v for k, v in med.items()},
            **{f"{k}_over_floor": round(med[k] / med["floor_reopen"], 2) for k in ("info", "stats_track", "query_tracks")},
            "load_average_1min": [round(load_before, 2), round(load_after, 2)]}


def main() -> None:
    opts, path = bench_arguments(__doc__ or "", ROOT)
    print(json.dumps(bench(path, opts.runs, opts.root.resolve())), flush=True)


if __name__ == "__main__":
    main()
