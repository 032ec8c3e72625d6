"""``vtui diff``'s run-against-run engine (``vtui.analysis.diff.engine.diff_runs``: steps by kind,
kernels aligned inside matched steps, parity) on two stores reopened from the cache, in
CPU-seconds, next to the time of those two loads. The goal: the diff within 2× the loads.

Each run is a fresh process: ``load_trace`` of A and of B (warm: from their cache entries, made
first), then one ``diff_runs``. Medians over the runs; the load average is printed with them.

    python benchmarks/synth.py /tmp/serve.json --mb 300 --step-every 200
    python benchmarks/bench_diff_runs.py /tmp/serve.json [B] [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh import CPU_S, ROOT, load_average, run_child, warm_cache  # noqa: E402

CHILD = CPU_S + r"""
import json, sys
sys.path.insert(0, sys.argv[3])
from vtui.load.trace import load_trace
from vtui.analysis.diff.engine import Run, diff_runs

if __name__ == "__main__":
    c = cpu_s()
    a, b = load_trace(sys.argv[1]), load_trace(sys.argv[2])
    load = cpu_s() - c
    c = cpu_s()
    d = diff_runs([Run(a, "a")], [Run(b, "b")])
    print(json.dumps({"diff": cpu_s() - c, "load": load, "events": a.event_count + b.event_count,
                      "step_pairs": sum(d.kernels.step_pairs.values())}))
"""


def bench(a: Path, b: Path, runs: int) -> dict:
    with contextlib.ExitStack() as stack:
        env = stack.enter_context(warm_cache(a))
        if b != a:  # B's entry in the same cache folder
            import subprocess

            subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[2]); "
                            "from vtui.load.trace import load_trace; load_trace(sys.argv[1])", str(b), str(ROOT)],
                           check=True, env=env)
        got = [run_child(CHILD, [str(a), str(b), str(ROOT)], env) for _ in range(runs)]
    med = statistics.median
    diff_s, load_s = med(g["diff"] for g in got), med(g["load"] for g in got)
    return {"a": a.name, "b": b.name, "runs": runs, "events": got[0]["events"], "step_pairs": got[0]["step_pairs"],
            "load_avg_1_5_min": load_average(), "diff_cpu_s": round(diff_s, 3), "two_loads_cpu_s": round(load_s, 3),
            "ratio_to_loads": round(diff_s / max(load_s, 1e-9), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path, nargs="?")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(bench(args.a, args.b or args.a, args.runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
