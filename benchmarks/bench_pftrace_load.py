"""Cold load of the same events as Chrome-trace JSON and as a Perfetto protobuf trace.

A synthetic Kineto-like JSON trace (benchmarks/synth.py) is written, exported whole with
``vtui export --format pftrace``, and each file loaded in a fresh process without the index cache
(one decoder process: the pftrace reader is serial). Prints wall and CPU seconds (medians), sizes
and the ratio pftrace / JSON (the aim: ≤ 1.5).

    .venv/bin/python -m benchmarks pftrace_load [MB] [RUNS]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.fresh import run_case
from benchmarks.synth import write_synthetic


def load_once(path: Path) -> dict:
    return run_case("whole_process:cold_load", [str(path)], dict(os.environ))


def main() -> None:
    mb = float(sys.argv[1]) if len(sys.argv) > 1 else 20
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "synth.json"
        events = write_synthetic(src, int(mb * 1e6))
        pf = Path(tmp) / "synth.pftrace"
        subprocess.run([sys.executable, "-m", "vtui", "export", str(src), "--format", "pftrace", "-o", str(pf),
                        "--no-cache"], check=True, capture_output=True)
        sizes = {"json_mb": round(src.stat().st_size / 1e6, 1), "pftrace_mb": round(pf.stat().st_size / 1e6, 1)}
        got: dict[str, list[dict]] = {"json": [], "pftrace": []}
        for _ in range(runs):  # interleaved, so a change in the machine's load hits both
            got["json"].append(load_once(src))
            got["pftrace"].append(load_once(pf))
        med = {k: {m: round(statistics.median(r[m] for r in v), 3) for m in ("wall", "cpu", "rss_mb")}
               for k, v in got.items()}
        assert got["json"][0]["slices"] == got["pftrace"][0]["slices"]
        print(json.dumps({"events": events, **sizes, "runs": runs, "json": med["json"], "pftrace": med["pftrace"],
                          "wall_ratio": round(med["pftrace"]["wall"] / med["json"]["wall"], 2),
                          "cpu_ratio": round(med["pftrace"]["cpu"] / med["json"]["cpu"], 2),
                          "loadavg": os.getloadavg()}))


if __name__ == "__main__":
    main()
