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
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANALYSES = ("analyse_steps", "analyse_ops", "analyse_gpu", "analyse_memory", "analyse_caches", "analyse_python",
            "analyse_roofline", "analyse_critical")

CHILD = r"""
import json, resource, statistics, sys
sys.path.insert(0, sys.argv[2])
from vtui.load.trace import load_trace
import vtui.analysis.report.insights as insights

def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

if __name__ == "__main__":
    store = load_trace(sys.argv[1])
    shares = {}
    for name in json.loads(sys.argv[4]):  # each analysis as compute_insights calls it, timed
        def timed(*a, _f=getattr(insights, name), _name=name, **k):
            c = cpu_s()
            out = _f(*a, **k)
            shares.setdefault(_name, []).append(cpu_s() - c)
            return out
        setattr(insights, name, timed)
    calls = []
    events = store.event_count
    for _ in range(int(sys.argv[3])):
        c = cpu_s()
        insights.compute_insights(store)
        calls.append(cpu_s() - c)
    print(json.dumps({"calls": calls, "shares": shares, "events": events}))
"""


def bench(path: Path, runs: int, calls: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home:  # never the user's ~/.cache
        env = {**os.environ, "XDG_CACHE_HOME": cache_home}
        subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[2]);"
                        "from vtui.load.trace import load_trace; load_trace(sys.argv[1])", str(path), str(ROOT)],
                       check=True, env=env)  # the cache entry
        got = []
        for _ in range(runs):
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(ROOT), str(calls), json.dumps(ANALYSES)],
                                 capture_output=True, text=True, check=True, env=env)
            got.append(json.loads(out.stdout.strip().splitlines()[-1]))
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
