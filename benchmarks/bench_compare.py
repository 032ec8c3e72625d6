"""``vtui diff``'s analysis (``compare`` of two whole traces) on stores reopened from the cache, in
CPU-seconds, next to a floor measured in the same process: one selection of the whole trace
(``range_slices`` and its self time), which ``compare`` needs at least once per side.

Each run is a fresh process: ``load_trace`` twice (warm: from the cache entry, made first if
missing), then one ``compare``. Medians over the runs; the load average is printed with them.

    python benchmarks/bench_compare.py TRACE [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh import cpu_s, load_average, run_case, warm_cache  # noqa: E402


def child(trace: str) -> dict:
    """One run: two stores and a floor store reopened from the cache, then the floor and ``compare``."""
    from vtui.analysis.report.compare import compare
    from vtui.load.trace import load_trace
    from vtui.store.slicetime import range_slices

    a, b, floor_store = load_trace(trace), load_trace(trace), load_trace(trace)
    c = cpu_s()
    _ = range_slices(floor_store, 0, int(floor_store.span_ns)).self_ns
    floor = cpu_s() - c
    c = cpu_s()
    compare(a, b)
    return {"compare": cpu_s() - c, "floor": floor, "events": a.event_count}


def bench(path: Path, runs: int) -> dict:
    with warm_cache(path) as env:
        got = [run_case("bench_compare:child", [str(path)], env) for _ in range(runs)]
    med = statistics.median
    compare_s, floor_s = med(g["compare"] for g in got), med(g["floor"] for g in got)
    return {"file": path.name, "runs": runs, "events": got[0]["events"],
            "load_avg_1_5_min": load_average(),
            "compare_cpu_s": round(compare_s, 3), "floor_one_selection_cpu_s": round(floor_s, 3),
            "ratio_to_floor": round(compare_s / max(floor_s, 1e-9), 2),
            "all_compare_cpu_s": [round(g["compare"], 3) for g in got]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(bench(args.trace, args.runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
