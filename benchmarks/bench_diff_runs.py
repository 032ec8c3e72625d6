"""``vtui diff``'s run-against-run engine (``vtui.analysis.diff.engine.diff_runs``: steps by kind,
kernels aligned inside matched steps, parity) on two stores reopened from the cache, in
CPU-seconds, next to the time of those two loads. The goal: the diff within 2× the loads.

Each run is a fresh process: ``load_trace`` of A and of B (warm: from their cache entries, made
first), then one ``diff_runs``. Medians over the runs; as the machine may be shared, also the median
of each run's own ratio (its diff and its loads measured in the same process, under the same load),
and the load average before and after.

Without traces, a synthetic serving trace of ``--mb`` MB is written to a temp folder (deleted
after) and diffed against itself, or with ``--renamed`` against a copy with one GEMM kernel renamed
to another vendor's name (every step pair then differs and is aligned kernel by kernel).

    python -m benchmarks diff_runs [--mb 300] [--renamed] [--runs 5]
    python -m benchmarks diff_runs A.json [B.json] [--runs 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fresh import cpu_s, load_average, run_case, warm_cache  # noqa: E402


def child(a: str, b: str) -> dict:
    """One run: A and B reopened from their cache entries, then one ``diff_runs``."""
    from vtui.analysis.diff.engine import Run, diff_runs
    from vtui.load.trace import load_trace

    c = cpu_s()
    sa, sb = load_trace(a), load_trace(b)
    load = cpu_s() - c
    c = cpu_s()
    d = diff_runs([Run(sa, "a")], [Run(sb, "b")])
    return {"diff": cpu_s() - c, "load": load, "events": sa.event_count + sb.event_count,
            "step_pairs": sum(d.kernels.step_pairs.values()), "changed": len(d.kernels.changed)}


GEMM = b"sm90_xmma_gemm_bf16bf16_bf16f32"
RENAMED = b"Cijk_Alik_Bljk_BBS_MT128x128x64"  # the same family on another vendor


def bench(a: Path, b: Path, runs: int) -> dict:
    with contextlib.ExitStack() as stack:
        env = stack.enter_context(warm_cache(a))
        if b != a:  # B's entry in the same cache folder
            run_case("fresh:open_trace", [str(b)], env)
        before = load_average()
        got = [run_case("bench_diff_runs:child", [str(a), str(b)], env) for _ in range(runs)]
    med = statistics.median
    diff_s, load_s = med(g["diff"] for g in got), med(g["load"] for g in got)
    each = sorted(g["diff"] / max(g["load"], 1e-9) for g in got)
    return {"a": a.name, "b": b.name, "mb": round((a.stat().st_size + b.stat().st_size) / 2e6, 1), "runs": runs,
            "events": got[0]["events"], "step_pairs": got[0]["step_pairs"], "changed": got[0]["changed"],
            "load_avg_before": before, "load_avg_after": load_average(),
            "diff_cpu_s": round(diff_s, 3), "two_loads_cpu_s": round(load_s, 3),
            "ratio_to_loads": round(diff_s / max(load_s, 1e-9), 2),
            "ratio_per_run_median": round(med(each), 2), "ratio_per_run_range": [round(each[0], 2), round(each[-1], 2)]}


def _renamed_copy(src: Path, dst: Path) -> None:
    with src.open("rb") as fin, dst.open("wb") as fout:
        for line in fin:
            fout.write(line.replace(GEMM, RENAMED))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, nargs="?")
    parser.add_argument("b", type=Path, nargs="?")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mb", type=float, default=60, help="size of the synthetic trace when none is given")
    parser.add_argument("--renamed", action="store_true", help="synthetic B: A with one GEMM kernel renamed")
    args = parser.parse_args()
    if args.a:
        print(json.dumps(bench(args.a, args.b or args.a, args.runs)))
        return 0
    from synth import write_synthetic

    with tempfile.TemporaryDirectory(prefix="vtui-bench-diff-") as tmp:
        a = Path(tmp) / "serve.json"
        write_synthetic(a, int(args.mb * 1e6), step_every=200)
        b = a
        if args.renamed:
            b = Path(tmp) / "serve_renamed.json"
            _renamed_copy(a, b)
        out = bench(a, b, args.runs)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
