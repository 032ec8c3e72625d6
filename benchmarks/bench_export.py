"""Range export on a warm cache entry: 1 % and 10 % of a trace, each in fresh processes.

Each run is a new Python that opens the trace's cache entry and exports the middle ``FRAC`` of
its span (``export_range``); it reports the export's own CPU-s and wall time, and the parent
takes the whole process's CPU-s (start-up and the entry's open included). The floor, measured in
the same run and also in fresh processes: read the exported file back and write its events
again (decode as ``msgspec.Raw``, join, write) — the least an export of those bytes can cost.
``--root`` runs another checkout's code (the "before" column).

    python benchmarks/bench_export.py TRACE [--runs 3] [--fractions 0.01 0.1] [--root DIR] [--json]

Make a trace with ``python benchmarks/synth.py /tmp/s300.json --mb 300``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.fresh import case_command, case_env  # noqa: E402


def floor(src: str, out: str) -> dict:
    """The floor: read ``src``'s events back as raw JSON and write them again to ``out``."""
    import msgspec

    c0 = time.process_time()
    with open(src, "rb") as fh:
        events = msgspec.json.decode(fh.read(), type=dict[str, msgspec.Raw])["traceEvents"]
    raws = msgspec.json.decode(events, type=list[msgspec.Raw])
    with open(out, "wb") as fh:
        fh.write(b'{"traceEvents":[\n' + b",\n".join(bytes(r) for r in raws) + b"\n]}\n")
    return {"cpu": time.process_time() - c0}


def _run(case: str, args: list[str], root: str = str(ROOT)) -> tuple[dict, float]:
    """(the case's JSON line, the child's whole CPU-s: user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(case_command(case, args), capture_output=True, text=True, check=False,
                          env=case_env(dict(os.environ), Path(root)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"child failed: {done.stderr.strip().splitlines()[-1:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(done.stdout.strip().splitlines()[-1]), cpu


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.01, 0.1])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose vtui is measured")
    parser.add_argument("--json", action="store_true", help="one JSON line per fraction (for benchmarks/results/)")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "vtui-bench-export-cache")
    opts = parser.parse_args()
    trace, root = str(opts.trace.resolve()), str(opts.root.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        out, copy = os.path.join(tmp, "range.json"), os.path.join(tmp, "floor.json")
        _run("whole_process:export", [trace, "0.001", out, str(opts.cache_dir)], root)  # the cache entry, made or found
        if not opts.json:
            print(f"{opts.trace.name} ({os.path.getsize(trace) / 1e6:,.0f} MB), code: {root}, {opts.runs} fresh processes each")
        for frac in opts.fractions:
            runs = [_run("whole_process:export", [trace, str(frac), out, str(opts.cache_dir)], root) for _ in range(opts.runs)]
            floors = [_run("bench_export:floor", [out, copy])[0]["cpu"] for _ in range(opts.runs)]
            export_cpu = statistics.median(r["export_cpu"] for r, _ in runs)
            wall = statistics.median(r["export_wall"] for r, _ in runs)
            whole = statistics.median(cpu for _, cpu in runs)
            floor = statistics.median(floors)
            if opts.json:
                print(json.dumps({"file": opts.trace.name, "root": root, "runs": opts.runs, "fraction": frac,
                                  "events": runs[0][0]["events"], "written_mb": round(os.path.getsize(out) / 1e6, 1),
                                  "export_cpu_s": round(export_cpu, 3), "export_wall_s": round(wall, 3),
                                  "whole_process_cpu_s": round(whole, 2), "floor_cpu_s": round(floor, 3),
                                  "export_over_floor": round(export_cpu / max(floor, 1e-9), 1),
                                  "load_average": [round(x, 2) for x in os.getloadavg()]}), flush=True)
                continue
            print(f"  {frac:.0%} range: {runs[0][0]['events']:,} events, {os.path.getsize(out) / 1e6:.1f} MB written; "
                  f"export {export_cpu:.3f} CPU-s ({wall:.3f} s wall), whole process {whole:.2f} CPU-s; "
                  f"floor {floor:.3f} CPU-s, export / floor {export_cpu / max(floor, 1e-9):.1f}x  ({_load()})")


if __name__ == "__main__":
    main()
