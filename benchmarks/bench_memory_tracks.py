"""Cost of the timeline's memory counter rows (``memory_series``: [memory] instants → one series
per process, device and total), built once per store when the timeline first lists its rows.

Each measurement is a fresh process (the store's memo starts empty, the mapped args cold). The
floor, measured in the same run (its own fresh processes): ``analyse_memory`` over the whole trace
(the Insights' memory pass, the same args decode).

    python benchmarks/bench_memory_tracks.py [TRACE] [--mb 200] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.fresh import run_case  # noqa: E402


def one_run(path: str, what: str) -> dict:
    from vtui.analysis.gpu.memory import analyse_memory
    from vtui.analysis.gpu.memory_tracks import memory_series
    from vtui.load.trace import load_trace

    store = load_trace(path)
    w, c = time.perf_counter(), time.process_time()
    got = memory_series(store) if what == "series" else analyse_memory(store)
    out = {f"{what}_s": time.perf_counter() - w, f"{what}_cpu_s": time.process_time() - c}
    if what == "series":
        out.update(series=len(got), samples=int(sum(len(s.times_ns) for s in got)))
    return out


def fresh(path: Path, what: str) -> dict:
    return run_case("bench_memory_tracks:one_run", [str(path), what], dict(os.environ))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="?", type=Path)
    parser.add_argument("--mb", type=float, default=200, help="size of the synthetic trace when none is given")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = args.trace
        if path is None:
            from benchmarks.synth import write_synthetic
            path = Path(tmp) / "synth.json"
            write_synthetic(path, int(args.mb * 1e6))
        fresh(path, "floor")  # writes the index cache: every measured run loads from it
        runs = []
        for _ in range(args.runs):  # alternate, so a change in the machine's load hits both alike
            runs.append({**fresh(path, "series"), **fresh(path, "floor")})
    med = {k: statistics.median(r[k] for r in runs) for k in ("series_s", "series_cpu_s", "floor_s", "floor_cpu_s")}
    print(json.dumps({"trace": str(args.trace or f"synthetic {args.mb:g} MB"), "runs": args.runs,
                      "series": runs[0]["series"], "samples": runs[0]["samples"],
                      **{f"median_{k}": round(v, 4) for k, v in med.items()},
                      "ratio_to_floor_cpu": round(med["series_cpu_s"] / max(med["floor_cpu_s"], 1e-9), 2),
                      "load_average_1min": [round(load, 2), round(os.getloadavg()[0], 2)]}))  # before, after


if __name__ == "__main__":
    main()
