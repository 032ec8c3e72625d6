"""Time to the app's first frame, cold (no cache entry) and warm (reopened from the cache), and
Insights on the loaded trace (the analysis the ``i`` screen runs, and the ``vtui insights`` CLI).

Insights: N processes each make N calls on the store reopened from the cache; reported are the
median of all calls and, apart, the median of the first calls (``insights_first_cpu_s``).

Each measurement is a fresh process started the way ``vtui TRACE`` starts (interpreter, imports,
the app headless), timed from before the process starts until the first frame with the trace
(the end of the first screen update that drew timeline lines); ``settled`` is one pause later,
after what the app does right after that frame (the memory rows, a second layout). CPU-seconds are that process's and its children's (loader, decoders), user + system.
Medians of N runs; the cache goes to a temp folder; vtui's bytecode is compiled first, as an
installed vtui has it (see ``bytecode.py``). Warm opens have a floor measured in the same run: a
CLI process that opens the entry (``vtui info``).

    python benchmarks/bench_app.py TRACE [--runs 3] [--warm-only]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.bytecode import compiled_env  # noqa: E402
from benchmarks.fresh import run_case  # noqa: E402


def insights_calls(trace: str, runs: str) -> dict:
    """One process: the store reopened from the cache, then ``runs`` calls of ``compute_insights``,
    each call's wall and CPU-s (this process's)."""
    import resource

    from vtui.analysis.report.insights import compute_insights
    from vtui.load.trace import load_trace

    store = load_trace(trace)  # warm: from the cache entry
    times = []
    for _ in range(int(runs)):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        compute_insights(store)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        times.append((time.perf_counter() - t, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime))
    return {"seconds": [t for t, _ in times], "cpu_s": [c for _, c in times]}


def _app_run(path: Path, env: dict) -> dict:
    start = time.time()
    got = run_case("whole_process:app_first_frame", [str(path)], env, timeout=600)
    if got["error"]:
        raise SystemExit(f"load failed: {got['error']}")
    return {"seconds": got["done"] - start, "cpu_s": got["cpu_s"],
            "settled_s": got["settled"] - start, "settled_cpu_s": got["settled_cpu_s"]}


def _cli_insights(path: Path, env: dict) -> dict:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vtui", "insights", str(path)], capture_output=True, env=env, check=True,
                   cwd=ROOT, timeout=600)
    return {"seconds": time.perf_counter() - start}


def _cli_open(path: Path, env: dict) -> dict:
    """The floor for a warm open: a CLI process that opens the entry and prints (``vtui info``)."""
    start = time.time()
    got = run_case("whole_process:cli_info", [str(path)], env, timeout=600)
    return {"seconds": time.time() - start, "cpu_s": got["cpu_s"]}


def bench(path: Path, runs: int, warm_only: bool = False) -> dict:
    med = lambda rows, k: round(statistics.median(r[k] for r in rows), 3)  # noqa: E731
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home, compiled_env() as env:
        env = {**env, "XDG_CACHE_HOME": cache_home, "PYTHONPATH": str(ROOT)}
        cold, warm, floor = [], [], []
        for k in range(runs):
            if not warm_only or k == 0:
                shutil.rmtree(Path(cache_home) / "vtui", ignore_errors=True)
                cold.append(_app_run(path, env))  # writes the entry
            warm.append(_app_run(path, env))
            floor.append(_cli_open(path, env))
        if warm_only:
            return {"file": path.name, "runs": runs,
                    "app_warm_s": med(warm, "seconds"), "app_warm_cpu_s": med(warm, "cpu_s"),
                    "app_warm_all_s": [round(r["seconds"], 2) for r in warm],
                    "app_warm_settled_s": med(warm, "settled_s"), "app_warm_settled_cpu_s": med(warm, "settled_cpu_s"),
                    "floor_cli_info_s": med(floor, "seconds"), "floor_cli_info_cpu_s": med(floor, "cpu_s"),
                    "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
        cli = [_cli_insights(path, env) for _ in range(runs)]
        procs = []
        for _ in range(runs):  # a process each: the first call comes once per process
            procs.append(run_case("bench_app:insights_calls", [str(path), str(runs)], env))
        ins = {k: [v for p in procs for v in p[k]] for k in ("seconds", "cpu_s")}
        first = [p["cpu_s"][0] for p in procs]
    return {
        "file": path.name, "runs": runs,
        "app_cold_s": med(cold, "seconds"), "app_cold_cpu_s": med(cold, "cpu_s"),
        "app_cold_all_s": [round(r["seconds"], 2) for r in cold],
        "app_warm_s": med(warm, "seconds"), "app_warm_cpu_s": med(warm, "cpu_s"),
        "app_warm_all_s": [round(r["seconds"], 2) for r in warm],
        "app_warm_settled_s": med(warm, "settled_s"), "app_warm_settled_cpu_s": med(warm, "settled_cpu_s"),
        "floor_cli_info_s": med(floor, "seconds"), "floor_cli_info_cpu_s": med(floor, "cpu_s"),
        "insights_s": round(statistics.median(ins["seconds"]), 3),
        "insights_cpu_s": round(statistics.median(ins["cpu_s"]), 3),
        # The first call after the store is opened is what a user waits for (masks not yet
        # memoised, columns not yet paged in): reported apart from the median of all calls.
        "insights_first_cpu_s": round(statistics.median(first), 3),
        "insights_first_all_cpu_s": [round(c, 3) for c in first],
        "insights_cli_s": med(cli, "seconds"),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm-only", action="store_true", help="one cold run (to write the entry), no Insights")
    opts = parser.parse_args()
    for f in opts.files:
        print(json.dumps(bench(f, opts.runs, opts.warm_only)), flush=True)


if __name__ == "__main__":
    main()
