"""Load speed and memory: vtui's load against the practical floor, medians of N runs.

The floor is reading (and gunzipping) the bytes and decoding them with msgspec into a
minimal typed Struct(gc=False) with args kept as msgspec.Raw — no columns, no index.
Each measurement runs in a fresh process so peak RSS is its own.

    python benchmarks/bench_load.py                 # hf_llama_big + a synthetic 1 GB trace
    python benchmarks/bench_load.py --synthetic-mb 200 --runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_BIG = ROOT.parent / "shared" / "traces" / "generated" / "hf_llama_big.json.gz"

FLOOR = r"""
import gzip, json, resource, sys, time
from typing import Any
import msgspec

class Ev(msgspec.Struct, gc=False):
    ph: str = ""
    name: str = ""
    cat: str = ""
    ts: float = 0.0
    dur: float = 0.0
    pid: Any = None
    tid: Any = None
    args: msgspec.Raw = msgspec.Raw(b"")

class Doc(msgspec.Struct, gc=False):
    traceEvents: list[Ev]

path = sys.argv[1]
t = time.perf_counter()
data = open(path, "rb").read()
if data[:2] == b"\x1f\x8b":
    data = gzip.decompress(data)
events = msgspec.json.decode(data, type=Doc).traceEvents
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "events": len(events),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

VTUI = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from vtui.store.load import load_trace
t = time.perf_counter()
store = load_trace(sys.argv[1])
dt = time.perf_counter() - t
import resource
print(json.dumps({"seconds": dt, "events": store.event_count, "slices": len(store.slices),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "store_bytes_per_event": store.nbytes / max(store.event_count, 1),
                  "args_blob_mb": len(store.args_blob) / 1e6}))
"""


def _run(code: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", code, str(path), str(ROOT)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(path: Path, runs: int) -> dict:
    floor = [_run(FLOOR, path) for _ in range(runs)]
    mine = [_run(VTUI, path) for _ in range(runs)]
    med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
    raw_mb = _raw_size(path) / 1e6
    result = {
        "file": path.name,
        "raw_mb": round(raw_mb, 1),
        "events": mine[0]["events"],
        "runs": runs,
        "floor_s": round(med(floor, "seconds"), 3),
        "vtui_s": round(med(mine, "seconds"), 3),
        "ratio": round(med(mine, "seconds") / med(floor, "seconds"), 2),
        "floor_peak_rss_mb": round(med(floor, "peak_rss_mb")),
        "vtui_peak_rss_mb": round(med(mine, "peak_rss_mb")),
        "vtui_peak_over_file": round(med(mine, "peak_rss_mb") / raw_mb, 2),
        "store_bytes_per_event": round(mine[0]["store_bytes_per_event"], 1),
        "args_blob_mb": round(mine[0]["args_blob_mb"], 1),
        "vtui_all_s": [round(r["seconds"], 3) for r in mine],
        "floor_all_s": [round(r["seconds"], 3) for r in floor],
    }
    return result


def _raw_size(path: Path) -> int:
    if path.read_bytes()[:2] != b"\x1f\x8b":
        return path.stat().st_size
    import gzip

    with gzip.open(path, "rb") as fh:
        return sum(len(b) for b in iter(lambda: fh.read(1 << 24), b""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
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
        print(json.dumps(bench(f, opts.runs)), flush=True)


if __name__ == "__main__":
    main()
