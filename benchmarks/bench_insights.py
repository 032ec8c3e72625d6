"""Insights (``compute_insights`` over the whole trace) on a store reopened from the cache: the first
call and the later ones, and each analysis's share of them, in CPU-seconds.

Each run is a fresh process: ``load_trace`` (warm: from the cache entry, made first if missing),
then ``--calls`` calls. Per analysis: its CPU time inside the first call and the median of its
time in the later calls. Medians over the runs.

    python benchmarks/bench_insights.py TRACE [--runs 3] [--calls 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh import cpu_s, run_case, warm_cache  # noqa: E402

ANALYSES = ("analyse_steps", "analyse_ops", "analyse_gpu", "analyse_memory", "analyse_caches", "analyse_python",
            "analyse_roofline", "analyse_critical")

def child(trace: str, calls: str) -> dict:
    """One run: ``calls`` calls of ``compute_insights`` on a reopened store, each analysis timed as
    ``compute_insights`` calls it."""
    import vtui.analysis.report.insights as insights
    from vtui.load.trace import load_trace

    store = load_trace(trace)
    shares: dict[str, list[float]] = {}
    for name in ANALYSES:
        def timed(*a, _f=getattr(insights, name), _name=name, **k):  # type: ignore[no-untyped-def]
            c = cpu_s()
            out = _f(*a, **k)
            shares.setdefault(_name, []).append(cpu_s() - c)
            return out
        setattr(insights, name, timed)
    times = []
    events = store.event_count
    for _ in range(int(calls)):
        c = cpu_s()
        insights.compute_insights(store)
        times.append(cpu_s() - c)
    return {"calls": times, "shares": shares, "events": events}


def bench(path: Path, runs: int, calls: int) -> dict:
    with warm_cache(path) as env:  # never the user's ~/.cache
        got = [run_case("bench_insights:child", [str(path), str(calls)], env) for _ in range(runs)]
    med = statistics.median
    later = [med(g["calls"][1:]) for g in got] if calls > 1 else []
    events = got[0]["events"]
    first = med(g["calls"][0] for g in got)
    return {
        "file": path.name, "runs": runs, "calls": calls, "events": events,
        "load_avg_1_5_min": [round(x, 2) for x in os.getloadavg()[:2]],
        "first_cpu_s": round(first, 3),
        "first_us_per_event": round(1e6 * first / max(events, 1), 3),
        "first_all_cpu_s": [round(g["calls"][0], 3) for g in got],
        # The roofline and the critical path against the rest of the same first call, per run.
        "first_with_vs_without_roofline_critical": round(med(
            g["calls"][0] / max(g["calls"][0] - g["shares"]["analyse_roofline"][0] - g["shares"]["analyse_critical"][0], 1e-9)
            for g in got), 3),
        "later_cpu_s": round(med(later), 3) if later else None,
        "first_by_analysis_cpu_s": {n[8:]: round(med(g["shares"][n][0] for g in got), 3) for n in ANALYSES},
        "later_by_analysis_cpu_s": ({n[8:]: round(med(med(g["shares"][n][1:]) for g in got), 3) for n in ANALYSES}
                                    if calls > 1 else None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3)
    opts = parser.parse_args()
    for f in opts.files:
        print(json.dumps(bench(f, opts.runs, opts.calls)), flush=True)


if __name__ == "__main__":
    main()
