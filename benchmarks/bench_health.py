"""Trace health's cost beside a cold load: in a fresh process, the CPU-seconds of ``load_trace``
without the cache, then of ``analyse_health`` on that store (launch pairing included, as the
first analysis to ask pays it). Medians over the runs; the budget is ≤ 5 % of the cold load.

    python benchmarks/bench_health.py [TRACE | --synthetic MB] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.fresh import cpu_s, run_case  # noqa: E402


def child(trace: str) -> dict:
    """One run: a cold load without the cache, then ``analyse_health`` on that store."""
    from vtui.analysis.health.report import analyse_health
    from vtui.load.trace import load_trace

    c = cpu_s()
    store = load_trace(trace, cache=False)
    load = cpu_s() - c
    c = cpu_s()
    items = analyse_health(store).items
    return {"load_cpu_s": load, "health_cpu_s": cpu_s() - c, "items": [i.key for i in items]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?")
    ap.add_argument("--synthetic", type=int, default=100, help="MB of a synthetic Kineto trace when no TRACE")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="vtui-bench-health-") as tmp:
        path = Path(args.trace) if args.trace else Path(tmp) / "synthetic.json"
        if not args.trace:
            from benchmarks.synth import write_synthetic

            write_synthetic(path, args.synthetic << 20, step_every=50)
        env = {**os.environ, "XDG_CACHE_HOME": tmp}
        runs = [run_case("bench_health:child", [str(path)], env) for _ in range(args.runs)]
    load = statistics.median(r["load_cpu_s"] for r in runs)
    health = statistics.median(r["health_cpu_s"] for r in runs)
    print(json.dumps({"trace": str(args.trace or f"synthetic {args.synthetic} MB"), "runs": args.runs,
                      "load_cpu_s": round(load, 3), "health_cpu_s": round(health, 3),
                      "health_pct_of_load": round(100 * health / load, 2), "items": runs[0]["items"],
                      "loadavg": os.getloadavg()}))


if __name__ == "__main__":
    main()
