"""Export every trace of a folder to a Perfetto protobuf trace and require the same ``vtui insights
--json`` from both (all but the ``trace`` path).

    .venv/bin/python scripts/pftrace_roundtrip.py [FOLDER]   # default: ../shared/traces/public

One line per trace: SAME or DIFF (with the first differing keys), the export's counts, seconds.
Exit 1 when any differs. Needs the ``pftrace`` extra.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def insights(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "vtui", "insights", "--json", "--no-cache", str(path)],
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    doc.pop("trace", None)
    return doc


def differing(a: dict, b: dict) -> list[str]:
    return [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "traces" / "public"
    traces = sorted(p for p in folder.iterdir() if p.name.endswith((".json", ".json.gz")))
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for trace in traces:
            out = Path(tmp) / (trace.name + ".pftrace")
            t = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "vtui", "export", str(trace), "--format", "pftrace", "-o",
                                   str(out), "--no-cache"], capture_output=True, text=True)
            if done.returncode:
                print(f"{trace.name}  EXPORT FAILED  {done.stderr.strip()}")
                bad += 1
                continue
            keys = differing(insights(trace), insights(out))
            bad += bool(keys)
            verdict = "SAME" if not keys else "DIFF " + ",".join(keys[:5])
            print(f"{trace.name}  {verdict}  {done.stdout.strip()}  {time.perf_counter() - t:.1f} s", flush=True)
    print(f"{len(traces) - bad} of {len(traces)} give the same insights")
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
