"""Cold-load CPU of this tree against another (the code before a change), with the floor, in one run.

Exact nanoseconds read each ``ts``/``dur`` from its text instead of a double; its
budget was at most 5 % more load CPU than before. This runs, interleaved so a busy spell hits
each alike: the floor (msgspec decode into a minimal Struct, see bench_load), the other tree's
cold load (one decoder, no cache) and this tree's, each in a fresh process, ``--runs`` times;
with ``--pure`` also both trees with VTUI_PURE_PYTHON=1 (no C helper). Prints medians of
CPU-seconds (user + system) and wall, and the 1-minute load average before and after.

    git worktree add /tmp/base main        # the tree to compare with (build its helper in place)
    python benchmarks/bench_exact_times.py --base /tmp/base --synthetic-mb 1024 --runs 3

Measured 2026-12-01 (busy machine, load average 11.4 → 4.9), 1 GB synthetic, CPU-s medians of 3:
floor 6.56, before 19.29, after 17.84 (0.93×); peak RSS 993 → 1035 MB. 300 MB with ``--pure``:
before 5.23, after 5.03; without the helper 6.99 → 8.23 (README, Speed).
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
sys.path.insert(0, str(ROOT))
from benchmarks.bench_load import FLOOR_CASE, LOAD_CASE, _run  # noqa: E402
from benchmarks.bytecode import compiled_env  # noqa: E402
from benchmarks.fresh import run_case  # noqa: E402


def _tree_run(tree: Path, path: Path, env: dict) -> dict:
    # The case imports vtui (and the in-place helper) from the tree measured.
    return run_case(LOAD_CASE, [str(path), "cold1"], env, tree)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="the other tree (e.g. a worktree of main)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--synthetic-mb", type=float, default=1024)
    parser.add_argument("--pure", action="store_true", help="also both trees without the C helper")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vtui-bench")
    parser.add_argument("files", nargs="*", type=Path)
    opts = parser.parse_args()
    files = list(opts.files)
    if not files:
        from benchmarks.synth import write_synthetic

        opts.cache.mkdir(parents=True, exist_ok=True)
        synth = opts.cache / f"synthetic_{int(opts.synthetic_mb)}mb.json"
        if not synth.exists():
            tmp = synth.with_suffix(".tmp")
            write_synthetic(tmp, int(opts.synthetic_mb * 1e6))
            tmp.rename(synth)
        files.append(synth)
    trees = {"base": opts.base.resolve(), "new": ROOT}
    variants = [(name, tree, False) for name, tree in trees.items()]
    if opts.pure:
        variants += [(name + "_pure", tree, True) for name, tree in trees.items()]
    for path in files:
        with compiled_env() as env:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(trees["base"] / "vtui")], env=env, check=True,
                           stdout=subprocess.DEVNULL)  # as compiled_env did for this tree
            envs = {name: {**env, "VTUI_PURE_PYTHON": "1" if pure else "0"} for name, _, pure in variants}
            load_before = os.getloadavg()[0]
            rows: dict[str, list[dict]] = {"floor": [], **{name: [] for name, _, _ in variants}}
            for _ in range(opts.runs):  # interleaved
                rows["floor"].append(_run(FLOOR_CASE, path))
                for name, tree, _pure in variants:
                    rows[name].append(_tree_run(tree, path, envs[name]))
            result: dict = {"file": path.name, "events": rows["new"][0]["events"], "runs": opts.runs}
            for name, got in rows.items():
                result[f"{name}_cpu_s"] = round(statistics.median(r["cpu_s"] for r in got), 3)
                result[f"{name}_wall_s"] = round(statistics.median(r["seconds"] for r in got), 3)
                result[f"{name}_cpu_all"] = [round(r["cpu_s"], 3) for r in got]
                if "peak_rss_mb" in got[0]:
                    result[f"{name}_peak_rss_mb"] = round(statistics.median(r["peak_rss_mb"] for r in got))
            result["new_over_base_cpu"] = round(result["new_cpu_s"] / result["base_cpu_s"], 3)
            if opts.pure:
                result["new_pure_over_base_pure_cpu"] = round(result["new_pure_cpu_s"] / result["base_pure_cpu_s"], 3)
            result["load_average_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
