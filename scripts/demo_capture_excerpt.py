"""Write the demo's capture trace: an excerpt of TraceLens's vLLM graph-capture trace (MIT).

    python scripts/demo_capture_excerpt.py SHARED/graph_capture_rank_0.….pt.trace.json.gz OUT.json.gz

Kept: the metadata events and every event that starts inside the ``capture_<batch>_<mode>``
annotation (the operators, runtime launches, kernels and [memory] instants of the capture),
except the ``python_function`` frames (91% of the events; Insights' capture matching reads the
operators and launches, not the frames). The top-level keys are kept as they are. Insights on
the replay gives the same capture figures with this excerpt as with the whole file
(tests/app/test_demo.py checks the excerpt against the shared original when it is there)."""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import tempfile
from pathlib import Path

CAPTURE = re.compile(r"capture_\d+_[A-Z]+")


def excerpt(doc: dict) -> dict:
    events = doc["traceEvents"]
    regions = [e for e in events if e.get("ph") == "X" and CAPTURE.fullmatch(str(e.get("name", "")))]
    if not regions:
        raise SystemExit("no capture_<batch>_<mode> annotation in this trace")
    spans = [(float(r["ts"]), float(r["ts"]) + float(r.get("dur", 0))) for r in regions]

    def inside(e: dict) -> bool:
        return "ts" in e and any(a <= float(e["ts"]) <= b for a, b in spans)

    kept = [e for e in events if e.get("ph") == "M" or (e.get("cat") != "python_function" and inside(e))]
    return {**doc, "traceEvents": kept}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    source, out = Path(argv[0]), Path(argv[1])
    with gzip.open(source) as f:
        doc = json.load(f)
    data = gzip.compress(json.dumps(excerpt(doc), separators=(",", ":")).encode(), 9, mtime=0)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)  # (mkstemp makes it private)
    os.replace(tmp, out)
    print(f"{out}: {len(data):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
