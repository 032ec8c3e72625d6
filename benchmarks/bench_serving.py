"""What the serving and CUDA-graph figures add to ``compute_insights``: CPU-seconds of insights over
the whole trace with them, and without them (``analyse_serving`` / ``analyse_graphs`` replaced by
empty reports) as the floor, each in fresh processes on a store reopened from the cache, the two
modes alternating. Medians over the runs; the first call (which pays the launch pairing, memoised
per store) and the later ones apart.

    python benchmarks/synth.py /tmp/serve.json --mb 1024 --step-every 200
    python benchmarks/bench_serving.py /tmp/serve.json [--runs 3] [--calls 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh import cpu_s, load_average, run_case, warm_cache  # noqa: E402


def child(trace: str, calls: str, mode: str) -> dict:
    """One run: ``calls`` calls of ``compute_insights`` on a reopened store, ``mode`` "with" or
    "without" the serving and CUDA-graph analyses."""
    import vtui.analysis.report.insights as insights
    from vtui.analysis.gpu.graphs import GraphReport
    from vtui.analysis.steps.serving import ServingReport
    from vtui.load.trace import load_trace

    store = load_trace(trace)
    if mode == "without":
        insights.analyse_serving = lambda *a, **k: ServingReport(False)  # type: ignore[assignment]
        insights.analyse_graphs = lambda *a, **k: GraphReport(False)  # type: ignore[assignment]
    times, steps = [], 0
    for _ in range(int(calls)):
        c = cpu_s()
        ins = insights.compute_insights(store)
        times.append(cpu_s() - c)
        steps = len(ins.serving.steps)
    return {"calls": times, "steps": steps, "slices": len(store.slices)}


def bench(path: Path, runs: int, calls: int) -> dict:
    with warm_cache(path) as env:
        got: dict[str, list[dict]] = {"with": [], "without": []}
        for _ in range(runs):
            for mode in ("without", "with"):  # alternating: load drifts hit both modes alike
                got[mode].append(run_case("bench_serving:child", [str(path), str(calls), mode], env))
    med = statistics.median

    def first(mode: str) -> float:
        return med(g["calls"][0] for g in got[mode])

    def later(mode: str) -> float | None:
        return med(med(g["calls"][1:]) for g in got[mode]) if calls > 1 else None

    f_with, f_without = first("with"), first("without")
    out = {"file": path.name, "runs": runs, "calls": calls, "slices": got["with"][0]["slices"],
           "steps": got["with"][0]["steps"],
           "first_cpu_s": {"with": round(f_with, 3), "without": round(f_without, 3),
                           "added_pct": round(100 * (f_with - f_without) / f_without, 1)},
           "first_all_cpu_s": {m: [round(g["calls"][0], 3) for g in got[m]] for m in got}}
    if calls > 1:
        lw, lo = later("with"), later("without")
        out["later_cpu_s"] = {"with": round(lw, 3), "without": round(lo, 3), "added_pct": round(100 * (lw - lo) / lo, 1)}
    out["load_average"] = load_average()[0]
    return out


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
