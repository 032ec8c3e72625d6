"""How a cold load scales with cores: wall time pinned to 1 and 2 cores (``taskset``) with 1 and 2
decoders, each phase's seconds, and the model for N cores that follows from them.

    python -m benchmarks cores                      # a synthetic 1 GB trace (made once, kept in --cache)
    python -m benchmarks cores FILE --runs 3
    python -m benchmarks cores --synthetic-mb 200 --runs 1   # a quick check that it runs

Settings, each a fresh process of ``load_trace(FILE, cache=False, jobs=J)`` under
``taskset -c CPUS``, interleaved run by run: ``c1j1`` (core 0, 1 decoder), ``c2j1`` (cores 0-1,
1 decoder: what the build's threads alone gain), ``c2j2`` (cores 0-1, 2 decoders). The child marks
its phases (wall seconds, in process): ``decode`` (the event array read into columns: the part the
decoders split), of it ``join`` (absorbing the ranges other processes decoded, in order: serial),
``build`` (the store from the columns) and in it ``lanes`` and ``tree`` (the nesting: split by
track pieces across the build's threads), ``gathers`` (the slices into their final order) and
``bind`` (the flow events to their slices), ``times`` (the ts/dur validity and the shift to
the origin) and ``x_slices`` (the X events' rows and ends), split too, and ``flow_chains`` (on a thread of its own beside the rest of the build);
each phase also as CPU-s (``cpu``); ``startup`` is the process start and imports (the parent's
wall minus the load).

The model (Amdahl, in CPU-seconds: a busy machine stretches wall time, not CPU; on a quiet core
the two agree): on one core everything runs one after the other, so ``T(1) = S + P`` with ``P`` =
decode + lanes + tree + gathers + bind + times + x_slices (the parts split over N decoders /
build threads)
and ``S`` = the rest (startup and imports, reading the file, the rest of the build);
``T(N) = S + J + P / N`` with ``J`` the join's CPU measured with 2 decoders (reading the ranges' columns back and absorbing
them). ``model`` gives S, J, P, the serial share and the predicted speedup for 2, 4, 8 and 16
cores (``predicted_N``; ``beside_N`` with the flow chains hidden on their thread), next to the
measured one for 2 (``measured_speedup_2``: c1j1's wall over c2j2's, which a busy machine
lowers). Without ``taskset`` (not Linux) only the settings with all cores are run. Every line
has the 1-minute load average: ratios are what a busy machine keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.bench_load import in_page_cache  # noqa: E402
from benchmarks.bytecode import compiled_env  # noqa: E402
from benchmarks.fresh import run_case  # noqa: E402
from benchmarks.neighbour import load_average  # noqa: E402

SETTINGS = {"c1j1": ("0", 1), "c2j1": ("0,1", 1), "c2j2": ("0,1", 2)}
PHASES = ("load_s", "startup_s", "decode", "join", "absorb", "build", "lanes", "tree", "gathers", "bind", "times",
          "x_slices", "flow_chains", "flows", "sorts")


def run_one(trace: Path, cpus: str | None, jobs: int, env: dict) -> dict:
    in_page_cache(trace)
    prefix = () if cpus is None else ("taskset", "-c", cpus)
    t = time.perf_counter()
    got = run_case("load_cases:cores_load", [str(trace), str(jobs)], env, prefix=prefix)
    wall = time.perf_counter() - t
    got["wall_s"] = wall
    got["startup_s"] = wall - got["load_s"]
    return got


SPLIT = ("decode_cpu", "lanes_cpu", "tree_cpu", "gathers_cpu", "bind_cpu", "times_cpu", "x_slices_cpu")  # split over N decoders / threads


def model(one: dict, join: float) -> dict:
    """Amdahl in CPU-seconds (what a busy machine leaves comparable; on a quiet core wall = CPU):
    ``one`` is the one-core, one-decoder run's, ``join`` the join's CPU with two decoders.
    ``predicted_N``: the flow chains counted as serial; ``beside_N``: hidden on their own thread
    beside the main one (from 2 cores on), as they are while the rest of the build is longer."""
    total = one["cpu_s"]
    parallel = sum(one.get(k, 0.0) for k in SPLIT)
    serial = total - parallel
    beside = one.get("flow_chains_cpu", 0.0)
    out = {"total_cpu_s": round(total, 3), "serial_cpu_s": round(serial, 3), "join_cpu_s": round(join, 3),
           "parallel_cpu_s": round(parallel, 3), "flow_chains_cpu_s": round(beside, 3),
           "serial_share": round((serial + join) / (total + join), 3)}
    for n in (2, 4, 8, 16):
        out[f"predicted_{n}"] = round(total / (serial + join + parallel / n), 2)
        out[f"beside_{n}"] = round(total / (serial - beside + join + parallel / n), 2)
    return out


def bench(trace: Path, runs: int) -> dict:
    pinnable = shutil.which("taskset") is not None and hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2
    settings = SETTINGS if pinnable else {"all_j1": (None, 1), "all_j2": (None, 2)}
    got: dict[str, list[dict]] = {k: [] for k in settings}
    loads = [load_average()]
    with compiled_env() as env:
        for _ in range(runs):  # interleaved: a busy spell hits every setting alike
            for name, (cpus, jobs) in settings.items():
                got[name].append(run_one(trace, cpus, jobs, env))
                loads.append(load_average())
    med = lambda rows, k: round(statistics.median(r.get(k, 0.0) for r in rows), 3)  # noqa: E731
    out: dict = {"file": trace.name, "mb": round(trace.stat().st_size / 1e6), "events": got[next(iter(got))][0]["events"],
                 "runs": runs, "load_average_1min": [min(loads), max(loads)]}
    for name, rows in got.items():
        out[name] = {"wall_s": med(rows, "wall_s"), "all_wall_s": [round(r["wall_s"], 2) for r in rows],
                     "cpu_s": med(rows, "cpu_s"), "all_cpu_s": [round(r["cpu_s"], 2) for r in rows],
                     "wall": {k: med(rows, k) for k in PHASES},
                     "cpu": {k: med(rows, k + "_cpu") for k in PHASES if k not in ("load_s", "startup_s")}}
    first, last = next(iter(got)), list(got)[-1]
    out["measured_speedup_2"] = round(out[first]["wall_s"] / out[last]["wall_s"], 2)
    one = {k: statistics.median(r.get(k, 0.0) for r in got[first]) for k in ("cpu_s", "flow_chains_cpu", *SPLIT)}
    out["model"] = model(one, statistics.median(r.get("join_cpu", 0.0) for r in got[last]))
    out.update(summary(out))
    return out


def summary(out: dict) -> dict:
    """Top-level figures for the README's generated table (its rows read one level of nesting)."""
    flat = {f"{name}_wall_s": out[name]["wall_s"] for name in out if isinstance(out[name], dict) and "wall_s" in out[name]}
    model = out["model"]
    for n in (2, 4, 8, 16):
        flat[f"model_speedup_{n}_over_1"] = model[f"predicted_{n}"]
        flat[f"model_beside_{n}_over_1"] = model[f"beside_{n}"]
    flat["serial_share_over_total"] = model["serial_share"]
    return flat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--synthetic-mb", type=float, default=1024)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vtui-bench")
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
    for f in files:
        print(json.dumps(bench(f, opts.runs)), flush=True)


if __name__ == "__main__":
    main()
