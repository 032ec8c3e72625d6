"""Load speed and memory: vtui's load against the practical floor, medians of N runs.

The floor is reading (and gunzipping) the bytes and decoding them with msgspec into a
minimal typed Struct(gc=False) with args kept as msgspec.Raw — no columns, no index.
vtui is measured cold with 1 and 2 decoder processes (no cache), cold with the index cache
being written (what a first open costs), warm (reopen from the cache), and as the app opens a
trace for the first time (``app``: loader process, decoders, cache write, entry mapped). Each measurement
runs in a fresh process, so peak RSS is its own; decoder processes' peak is reported apart
(``child_peak``). The cache goes to a temp folder, never ~/.cache. vtui's bytecode is compiled
first, as an installed vtui has it (see ``bytecode.py``).

Each process also reports its CPU-seconds (user + system, its own and its finished children's:
decoders, the app's loader), and ``*_cpu_over_floor`` divides their median by the floor's. On a
shared machine wall time doubles when another job holds a core; CPU-seconds move far less, so
they are the figure to compare across runs (the lowest and highest 1-minute load average seen is
recorded, with the number of ``--neighbour`` processes that spun on a core while it measured).

    python benchmarks/bench_load.py                 # hf_llama_big + a synthetic 1 GB trace
    python benchmarks/bench_load.py --synthetic-mb 200 --runs 3
    python benchmarks/bench_load.py --synthetic-mb 300 --modes cold,cold1,cold2 --neighbour 0,1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.bytecode import compiled_env  # noqa: E402
from benchmarks.fresh import run_case  # noqa: E402
from benchmarks.neighbour import KINDS, load_average, neighbours  # noqa: E402

SHARED_BIG = ROOT.parent / "shared" / "traces" / "generated" / "hf_llama_big.json.gz"

MODES = ("cold", "cold1", "cold2", "first", "warm", "app")  # cold: the decoders vtui picks (idle cores)


def in_page_cache(path: Path) -> None:
    """Read the file through once, so the measured process finds it in the page cache. Here the
    kernel drops file pages nobody mapped for a minute (DAMON pageout), and the first process of a
    round then paid the disk reads and the cache's fresh pages: 180 MB of a 1 GB trace read from
    disk by the floor, measured (``read_mb``)."""
    with open(path, "rb") as fh:
        while fh.readinto(_BLOCK):
            pass


_BLOCK = bytearray(8 << 20)


# The cases (benchmarks/load_cases.py), each run in a fresh process by benchmarks/child.py.
FLOOR_CASE, LOAD_CASE = "load_cases:floor", "load_cases:vtui_load"


def _run(case: str, path: Path, *extra: str, env: dict | None = None, root: Path = ROOT) -> dict:
    in_page_cache(path)
    return run_case(case, [str(path), *extra], dict(os.environ) if env is None else env, root)


def bench(path: Path, runs: int, modes: tuple[str, ...] = MODES, settings: tuple[int, ...] = (0,),
          kind: str = "spin") -> list[dict]:
    """One result per neighbour setting. Runs interleave settings and modes, so a busy spell
    of the machine hits every mode, the floor and each setting alike."""
    raw_mb = _raw_size(path) / 1e6
    got: dict[int, dict[str, list[dict]]] = {n: {m: [] for m in ("floor", *modes)} for n in settings}
    loads: dict[int, list[float]] = {n: [] for n in settings}
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home, compiled_env() as env:
        env = {**env, "XDG_CACHE_HOME": cache_home}
        for _ in range(runs):
            for n in settings:
                with neighbours(n, kind):
                    loads[n].append(load_average())
                    got[n]["floor"].append(_run(FLOOR_CASE, path))
                    for mode in modes:
                        if mode in ("first", "app"):
                            shutil.rmtree(Path(cache_home) / "vtui", ignore_errors=True)  # a first open
                        elif mode == "warm" and "first" not in modes:
                            _run(LOAD_CASE, path, "first", env=env)  # the entry to reopen
                        got[n][mode].append(_run(LOAD_CASE, path, mode, env=env))
                    loads[n].append(load_average())
    return [{**_summary(path, raw_mb, runs, modes, n, got[n], loads[n]), "neighbour_kind": kind} for n in settings]


def _summary(path: Path, raw_mb: float, runs: int, modes: tuple[str, ...], neighbour: int,
             got: dict[str, list[dict]], loads: list[float]) -> dict:
    med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
    floor = got["floor"]
    first = got[modes[0]][0]
    result = {
        "file": path.name, "raw_mb": round(raw_mb, 1), "events": first["events"], "runs": runs,
        "neighbours": neighbour, "load_average_1min": [min(loads), max(loads)],  # lowest, highest seen
        "floor_s": round(med(floor, "seconds"), 3),
        "floor_cpu_s": round(med(floor, "cpu_s"), 3),
        "floor_peak_rss_mb": round(med(floor, "peak_rss_mb")),
        "floor_runs": [_detail(r) for r in floor],
    }
    for mode in modes:
        rows = got[mode]
        result[f"{mode}_s"] = round(med(rows, "seconds"), 3)
        result[f"{mode}_all_s"] = [round(r["seconds"], 3) for r in rows]
        result[f"{mode}_cpu_s"] = round(med(rows, "cpu_s"), 3)
        result[f"{mode}_all_cpu_s"] = [round(r["cpu_s"], 3) for r in rows]
        result[f"{mode}_cpu_over_floor"] = round(result[f"{mode}_cpu_s"] / result["floor_cpu_s"], 2)
        result[f"{mode}_wall_over_floor"] = round(result[f"{mode}_s"] / result["floor_s"], 2)
        result[f"{mode}_peak_rss_mb"] = round(med(rows, "peak_rss_mb"))
        result[f"{mode}_child_peak_mb"] = round(med(rows, "child_peak_mb"))
        result[f"{mode}_resident_mb"] = round(med(rows, "resident_mb"))
        result[f"{mode}_runs"] = [_detail(r) for r in rows]
    if "cold1" in modes and "cold2" in modes:
        result["speedup_2_over_1"] = round(result["cold1_s"] / result["cold2_s"], 2)
        result["cold2_peak_over_file"] = round(result["cold2_peak_rss_mb"] / raw_mb, 2)
        result["resident_bytes_per_event"] = round(result["cold2_resident_mb"] * 2**20 / max(first["events"], 1), 1)
    result["store_bytes_per_event"] = round(first["store_bytes_per_event"], 1)
    result["args_mb"] = round(first["args_mb"], 1)
    return result


_DETAIL = ("cpu_s", "user_s", "sys_s", "self_cpu_s", "minflt", "majflt", "nvcsw", "nivcsw", "read_mb", "peak_rss_mb",
           "child_peak_mb")


def _detail(row: dict) -> dict:
    """One run's CPU split (user/system), page faults, context switches (voluntary/involuntary),
    peak RSS, and vtui's phases (read + decode, build) where the run has them: what tells a slow
    run from a fast one of the same setting."""
    out = {k: round(row[k], 3) if isinstance(row[k], float) else row[k] for k in _DETAIL if k in row}
    if row.get("phases"):
        out["phases"] = row["phases"]
    return out


def _raw_size(path: Path) -> int:
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head != b"\x1f\x8b":
        return path.stat().st_size
    import gzip

    with gzip.open(path, "rb") as fh:
        return sum(len(b) for b in iter(lambda: fh.read(1 << 24), b""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--neighbour", default="0", metavar="N[,N...]",
                        help="N processes spinning on a core while a run measures (a busy machine); "
                             "several settings (0,1) are interleaved and each gets its own result line")
    parser.add_argument("--neighbour-kind", choices=sorted(KINDS), default="spin",
                        help="spin: a core taken, caches left alone; memory: it also streams 64 MB (as another load does)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {','.join(MODES)}")
    parser.add_argument("--synthetic-mb", type=float, default=1024)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "vtui-bench")
    parser.add_argument("files", nargs="*", type=Path)
    opts = parser.parse_args()
    files = list(opts.files)
    if not files:
        if SHARED_BIG.exists():
            files.append(SHARED_BIG)
        if opts.synthetic_mb > 0:
            sys.path.insert(0, str(ROOT))
            from benchmarks.synth import write_synthetic

            opts.cache.mkdir(parents=True, exist_ok=True)
            synth = opts.cache / f"synthetic_{int(opts.synthetic_mb)}mb.json"
            if not synth.exists():
                tmp = synth.with_suffix(".tmp")
                write_synthetic(tmp, int(opts.synthetic_mb * 1e6))
                tmp.rename(synth)
            files.append(synth)
    for f in files:
        settings = tuple(int(n) for n in opts.neighbour.split(","))
        for result in bench(f, opts.runs, tuple(opts.modes.split(",")), settings, opts.neighbour_kind):
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
