"""A big synthetic Kineto trace (4 GB, 10 GB...): made in a temp folder, measured, deleted.

    python -m benchmarks big --size 4GB            # + the same figures at 1 GB, for CPU per GB
    python -m benchmarks big --size 10GB --runs 1 --dir /big/tmp
    python -m benchmarks big --size 200MB --ref 0 --no-app   # a quick check that it runs

One JSON line per size (the 1 GB reference first, then ``--size``), each measurement in a fresh
process against this checkout, on a private cache folder (never ~/.cache):

* ``floor``: read the file and decode every event with msgspec into a typed Struct with args kept
  raw (``bench_load.py``'s floor), 64 MiB of events at a time: one array of all the decoded
  objects needs ~2.7x the file in RAM (11 GB at 4 GB), which a 10 GB file cannot have.
* ``cold``: ``vtui info --no-cache FILE`` (the decoders vtui picks); wall, CPU-s (with its decoder
  processes), peak RSS of the biggest process, CPU per GB and its ratio to the reference's.
* ``first``: ``vtui info FILE`` writing the cache entry; ``warm``: the same again, reopening it.
* ``insights``: ``vtui insights FILE --json`` and ``sql``: ``vtui query FILE "SELECT name, COUNT(*),
  SUM(dur) FROM slice GROUP BY name ..."`` on the warm entry (the SQL needs ``vtui[sql]``).
* ``app_cold`` / ``app_warm``: the app to its first frame with the trace (``bench_app.py``).

The trace is read through once before each measured process (so all find it in the page cache,
see ``bench_load.in_page_cache``). The file and the cache entries are deleted at the end, also
when a step fails. Every line has the 1-minute load average before and after.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.bench_app import _app_run  # noqa: E402
from benchmarks.bench_load import in_page_cache  # noqa: E402
from benchmarks.bytecode import compiled_env  # noqa: E402
from benchmarks.fresh import run_case  # noqa: E402
from benchmarks.neighbour import load_average, neighbours  # noqa: E402
from benchmarks.synth import write_synthetic  # noqa: E402

# The cases (whole_process.measure: a command's wall, CPU-s and peak RSS; load_cases.chunked_floor),
# each run in a fresh process by benchmarks/child.py.
SQL = "SELECT name, COUNT(*) n, SUM(dur) total FROM slice GROUP BY name ORDER BY total DESC LIMIT 10"


def parse_size(text: str) -> int:
    """``4GB``, ``10GB``, ``300MB``, ``1.5G`` -> bytes (decimal units, as the trace sizes are quoted)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)b?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4GB, 300MB)")
    return int(float(m.group(1)) * 10 ** (3 * " kmgt".index(m.group(2).lower() or " ")))


def _measure(cmd: list[str], env: dict, trace: Path) -> dict:
    in_page_cache(trace)
    got = run_case("whole_process:measure", cmd, env)
    if got["rc"] != 0:
        raise SystemExit(f"failed ({got['rc']}): {' '.join(cmd)}: {got['err']}")
    del got["err"]
    return got


def _vtui(*args: str) -> list[str]:
    return [sys.executable, "-m", "vtui", *args]


def _floor(trace: Path, env: dict) -> dict:
    in_page_cache(trace)
    return run_case("load_cases:chunked_floor", [str(trace)], env)


def _has_sql(env: dict) -> bool:
    return importlib.util.find_spec("duckdb") is not None  # (the children run this interpreter)


def _med(rows: list[dict], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 3)


def measure(trace: Path, runs: int, env: dict, cache_home: str, full: bool, app: bool) -> dict:
    """The figures for one file (see the module doc); ``full``: also the cache, Insights, SQL, app."""
    gb = trace.stat().st_size / 1e9
    loads = [load_average()]
    floor, cold = [], []
    for _ in range(runs):  # interleaved: a busy spell hits both alike
        floor.append(_floor(trace, env))
        cold.append(_measure(_vtui("info", "--no-cache", str(trace)), env, trace))
    out: dict = {"file_gb": round(gb, 3), "events": floor[0]["events"], "runs": runs,
                 "floor_s": _med(floor, "seconds"), "floor_cpu_s": _med(floor, "cpu_s"),
                 "floor_peak_rss_mb": round(_med(floor, "peak_rss_mb")),
                 "cold_s": _med(cold, "seconds"), "cold_all_s": [round(r["seconds"], 2) for r in cold],
                 "cold_cpu_s": _med(cold, "cpu_s"), "cold_all_cpu_s": [round(r["cpu_s"], 2) for r in cold],
                 "cold_peak_rss_mb": round(_med(cold, "peak_rss_mb"))}
    out["cold_cpu_over_floor"] = round(out["cold_cpu_s"] / out["floor_cpu_s"], 2)
    out["cold_cpu_s_per_gb"] = round(out["cold_cpu_s"] / gb, 3)
    out["floor_cpu_s_per_gb"] = round(out["floor_cpu_s"] / gb, 3)
    out["cold_mb_per_s"] = round(gb * 1000 / out["cold_s"], 1)
    out["cold_peak_over_file"] = round(out["cold_peak_rss_mb"] * 2**20 / trace.stat().st_size, 2)
    if full:
        first = _measure(_vtui("info", str(trace)), env, trace)  # writes the entry
        warm = [_measure(_vtui("info", str(trace)), env, trace) for _ in range(max(runs, 3))]
        out.update(first_s=round(first["seconds"], 3), first_cpu_s=round(first["cpu_s"], 3),
                   warm_s=_med(warm, "seconds"), warm_cpu_s=_med(warm, "cpu_s"),
                   warm_all_s=[round(r["seconds"], 3) for r in warm],
                   cache_entry_mb=round(sum(f.stat().st_size for f in Path(cache_home).rglob("*") if f.is_file()) / 1e6))
        ins = [_measure(_vtui("insights", "--json", str(trace)), env, trace) for _ in range(runs)]
        out.update(insights_s=_med(ins, "seconds"), insights_cpu_s=_med(ins, "cpu_s"),
                   insights_peak_rss_mb=round(_med(ins, "peak_rss_mb")))
        if _has_sql(env):
            sql = [_measure(_vtui("query", "--time-limit", "0", str(trace), SQL), env, trace) for _ in range(runs)]
            out.update(sql_group_by_s=_med(sql, "seconds"), sql_group_by_cpu_s=_med(sql, "cpu_s"),
                       sql_peak_rss_mb=round(_med(sql, "peak_rss_mb")))
        else:
            out["sql_group_by_s"] = "skipped: duckdb is not installed (pip install 'vtui[sql]')"
    if full and app:
        shutil.rmtree(Path(cache_home) / "vtui", ignore_errors=True)
        in_page_cache(trace)
        cold_app = _app_run(trace, {**env, "PYTHONPATH": str(ROOT)})  # a first open: loads and writes the entry
        warm_app = [_app_run(trace, {**env, "PYTHONPATH": str(ROOT)}) for _ in range(max(runs, 3))]
        out.update(app_cold_s=round(cold_app["seconds"], 3), app_cold_cpu_s=round(cold_app["cpu_s"], 3),
                   app_warm_s=_med(warm_app, "seconds"), app_warm_cpu_s=_med(warm_app, "cpu_s"),
                   app_warm_all_s=[round(r["seconds"], 3) for r in warm_app])
    loads.append(load_average())
    out["load_average_1min"] = [min(loads), max(loads)]
    return out


def bench(size: int, ref: int, runs: int, folder: Path | None, app: bool, neighbour: int = 0) -> list[dict]:
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="vtui-bench-big-", dir=folder) as tmp, compiled_env() as env:
        cache_home = os.path.join(tmp, "cache")
        env = {**env, "XDG_CACHE_HOME": cache_home}
        with neighbours(neighbour):
            for nbytes, full in ((ref, False), (size, True)):
                if not nbytes:
                    continue
                trace = Path(tmp) / f"synthetic_{nbytes // 10**6}mb.json"
                t = time.perf_counter()
                write_synthetic(trace, nbytes)
                made = time.perf_counter() - t
                try:
                    row = {"size": f"{nbytes / 1e9:g} GB", "neighbours": neighbour, "make_s": round(made, 1),
                           **measure(trace, runs, env, cache_home, full, app)}
                finally:
                    trace.unlink(missing_ok=True)  # before the next file is made: one on disk at a time
                    shutil.rmtree(cache_home, ignore_errors=True)
                if results:
                    per_gb = results[0]["cold_cpu_s_per_gb"]
                    row["cold_cpu_per_gb_over_ref"] = round(row["cold_cpu_s_per_gb"] / per_gb, 3)
                    row["floor_cpu_per_gb_over_ref"] = round(row["floor_cpu_s_per_gb"] / results[0]["floor_cpu_s_per_gb"], 3)
                results.append(row)
                print(json.dumps(row), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=parse_size, default=parse_size("4GB"), help="of the trace (4GB, 10GB, 300MB)")
    parser.add_argument("--ref", type=parse_size, default=parse_size("1GB"),
                        help="a reference size measured first (floor and cold load only), for CPU per GB (0: none)")
    parser.add_argument("--runs", type=int, default=1, help="of the floor, cold load, Insights and SQL (warm: at least 3)")
    parser.add_argument("--dir", type=Path, default=None, help="where the file and the cache go (default: the temp folder)")
    parser.add_argument("--no-app", action="store_true", help="skip the app's first frame (cold and warm)")
    parser.add_argument("--neighbour", type=int, default=0, help="processes spinning on a core meanwhile (a busy box)")
    opts = parser.parse_args()
    free = shutil.disk_usage(opts.dir or tempfile.gettempdir()).free
    if free < 2.6 * opts.size:  # the file, the cache entry (~0.5x) and the loader's temp args file
        raise SystemExit(f"bench_big: {free / 1e9:.0f} GB free where the file goes; {opts.size / 1e9:g} GB needs "
                         f"~{2.6 * opts.size / 1e9:.0f} GB (--dir elsewhere)")
    bench(opts.size, opts.ref, opts.runs, opts.dir, not opts.no_app, opts.neighbour)


if __name__ == "__main__":
    main()
