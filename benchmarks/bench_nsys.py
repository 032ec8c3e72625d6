"""Load speed of Nsight Systems SQLite exports against the same events as a Chrome-trace JSON.

A synthetic export (benchmarks/nsys_synth.py, the documented schema) is written, and the very
same events are exported by vtui as Chrome-trace JSON; each is then loaded by vtui in a fresh
process, cold (no cache) and warm (reopened from the index cache), medians of N interleaved
runs. The nsys reader alone (SQLite → columns, no store build) is timed apart.

An export packs ~7x more events per byte than JSON, so the cold loads are compared both ways:
MB/s and events/s (wall), and CPU-s (self + children) per MB and per million events. For a big
export whose JSON would be too big to write, ``--json-launches`` makes the JSON from a smaller
export (rates, not totals, are compared).

    python benchmarks/bench_nsys.py                       # 100k launches, 3 runs
    python benchmarks/bench_nsys.py --launches 400000 --schema 2024 --runs 5
    python benchmarks/bench_nsys.py --launches 11000000 --json-launches 300000 --runs 1 --no-warm
"""

from __future__ import annotations

import argparse
import contextlib
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
from benchmarks.fresh import cpu_s, run_case  # noqa: E402


def child(trace: str, mode: str) -> dict:
    """One load: ``mode`` "reader" (the nsys reader alone), "cold" (no cache) or "warm" (the cache);
    CPU of this process and its decoders, the import of the code included."""
    c = cpu_s(children=True)
    t = time.perf_counter()
    if mode == "reader":
        from vtui.io.nsys import read_nsys
        n = len(read_nsys(trace, jobs=os.cpu_count() or 1).columns)
    else:
        from vtui.load.trace import load_trace
        n = load_trace(trace, cache=(mode == "warm")).event_count  # all cores, as the CLI loads
    dt, dc = time.perf_counter() - t, cpu_s(children=True) - c
    # VmHWM, not ru_maxrss: the latter keeps the parent's peak across fork + exec
    with open("/proc/self/status") as fh:
        hwm = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))
    return {"seconds": dt, "cpu_s": dc, "events": n, "peak_rss_mb": hwm / 1024}


def _run(path: Path, mode: str, env: dict) -> dict:
    return run_case("bench_nsys:child", [str(path), mode], env)


def bench(launches: int, schema: str, runs: int, folder: Path, json_launches: int | None = None,
          warm: bool = True) -> dict:
    sys.path.insert(0, str(ROOT))
    from benchmarks.nsys_synth import write_nsys_export
    from vtui.cli import main as vtui_main

    def export_of(n: int) -> Path:
        path = folder / f"synthetic_{n}_{schema}.sqlite"
        if not path.exists():
            write_nsys_export(path, n, schema)
        return path

    export = export_of(launches)
    as_json = export_of(json_launches or launches).with_suffix(".json")
    if not as_json.exists():
        with contextlib.redirect_stdout(sys.stderr):  # stdout is the results' JSON lines
            vtui_main(["export", str(as_json.with_suffix(".sqlite")), "-o", str(as_json), "--no-cache"])
    med = lambda rows, key="seconds": round(statistics.median(r[key] for r in rows), 3)  # noqa: E731
    got: dict[str, list[dict]] = {k: [] for k in ("reader", "nsys_cold", "json_cold", "nsys_warm", "json_warm")}
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home:
        env = {**os.environ, "XDG_CACHE_HOME": cache_home}
        for _ in range(runs):  # interleaved, so a busy spell hits every case alike
            got["reader"].append(_run(export, "reader", env))
            got["nsys_cold"].append(_run(export, "cold", env))
            got["json_cold"].append(_run(as_json, "cold", env))
            shutil.rmtree(Path(cache_home) / "vtui", ignore_errors=True)
            for path, key in ((export, "nsys_warm"), (as_json, "json_warm")) if warm else ():
                _run(path, "warm", env)  # writes the entry
                got[key].append(_run(path, "warm", env))
    result: dict = {"launches": launches, "schema": schema, "runs": runs, "events": got["nsys_cold"][0]["events"],
                    "json_events": got["json_cold"][0]["events"],
                    "sqlite_mb": round(export.stat().st_size / 1e6, 1), "json_mb": round(as_json.stat().st_size / 1e6, 1),
                    "load_average": os.getloadavg()[0]}
    for key, rows in got.items():
        if rows:
            result[f"{key}_s"] = med(rows)
            result[f"{key}_cpu_s"] = med(rows, "cpu_s")
            result[f"{key}_all_s"] = [round(r["seconds"], 3) for r in rows]
            result[f"{key}_peak_rss_mb"] = round(med(rows, "peak_rss_mb"))
    # Per byte and per event, wall and CPU; ratios > 1: the export loads faster than the JSON.
    for kind, mb, events in (("nsys", result["sqlite_mb"], result["events"]), ("json", result["json_mb"], result["json_events"])):
        wall, cpu = result[f"{kind}_cold_s"], result[f"{kind}_cold_cpu_s"]
        result[f"{kind}_mb_per_s"] = round(mb / wall, 1)
        result[f"{kind}_mevents_per_s"] = round(events / 1e6 / wall, 2)
        result[f"{kind}_cpu_s_per_100mb"] = round(cpu / mb * 100, 2)
        result[f"{kind}_cpu_s_per_mevent"] = round(cpu / events * 1e6, 3)
    result["per_byte_nsys_over_json"] = round(result["nsys_mb_per_s"] / result["json_mb_per_s"], 2)
    result["per_event_nsys_over_json"] = round(result["nsys_mevents_per_s"] / result["json_mevents_per_s"], 2)
    result["per_byte_cpu_nsys_over_json"] = round(result["json_cpu_s_per_100mb"] / result["nsys_cpu_s_per_100mb"], 2)
    result["per_event_cpu_nsys_over_json"] = round(result["json_cpu_s_per_mevent"] / result["nsys_cpu_s_per_mevent"], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, default=100_000)
    parser.add_argument("--schema", choices=["2022", "2024", "old"], default="2024")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json-launches", type=int, help="make the JSON from an export this size (default: --launches)")
    parser.add_argument("--no-warm", action="store_true", help="cold loads only (no index cache runs)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vtui-bench")
    opts = parser.parse_args()
    opts.cache.mkdir(parents=True, exist_ok=True)
    print(json.dumps(bench(opts.launches, opts.schema, opts.runs, opts.cache, opts.json_launches, not opts.no_warm)),
          flush=True)


if __name__ == "__main__":
    main()
