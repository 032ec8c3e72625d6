"""Save, or compare against, every field of ``compute_insights`` (and ``summary_metrics``) on a set
of traces: the check that a speed-up of the analyses changes no result.

    python scripts/insights_snapshot.py save OUT.pickle [TRACE ...]
    python scripts/insights_snapshot.py compare OUT.pickle [TRACE ...]

Without TRACE: every fixture, every trace under ../shared/traces and the hostile corpus. Each
trace is analysed over the whole span and over two sub-ranges. Every dataclass field is kept,
numpy arrays with their dtype, floats by ``repr`` (exact). Exit status 1 on any difference.
"""

from __future__ import annotations

import dataclasses
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers import FIXTURES, SHARED_TRACES  # noqa: E402
from tests.hostile_corpus import build_corpus  # noqa: E402
from vtui.analysis.report.insights import compute_insights, summary_metrics  # noqa: E402
from vtui.errors import TraceLoadError  # noqa: E402
from vtui.load.trace import load_trace  # noqa: E402
from vtui.present.insights_json import insights_dict  # noqa: E402
from vtui.store.slicetime import TimeRange, time_range  # noqa: E402


def plain(value):
    """A value with every field spelled out, comparable with ``==`` (exact floats, array dtypes)."""
    if isinstance(value, TimeRange):  # its bounds, not its store
        return ("TimeRange", value.t0, value.t1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)})
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, plain(value.tolist()))
    if isinstance(value, np.generic):
        return ("np", type(value).__name__, plain(value.item()))
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, dict):
        return ("dict", [(plain(k), plain(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(v) for v in value])
    return value


def default_traces(tmp: Path) -> list[Path]:
    paths = sorted(p for p in FIXTURES.iterdir() if p.name != "ATTRIBUTION.md")
    paths += sorted(p for p in SHARED_TRACES.rglob("*") if p.is_file() and not p.name.endswith(".md"))
    paths += [path for _, path in build_corpus(tmp).values()]
    return paths


def snapshot(path: Path) -> dict:
    try:
        store = load_trace(path, cache=path.stat().st_size > (256 << 20))
    except (TraceLoadError, OSError) as exc:
        return {"error": type(exc).__name__}
    span = int(store.span_ns)
    out = {}
    for t0, t1 in ((0, None), (span // 4, 3 * span // 4), (span // 3, span // 3 + span // 50)):
        ins = compute_insights(store, time_range(store, t0, t1))
        out[(t0, t1)] = (plain(ins), plain(insights_dict(ins)), plain(summary_metrics(store, time_range(store, t0, t1))))
    return out


def main() -> int:
    mode, target, *names = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(n) for n in names] or default_traces(Path(tmp))
        got = {str(p.relative_to(tmp) if p.is_relative_to(tmp) else p): snapshot(p) for p in paths}
    if mode == "save":
        Path(target).write_bytes(pickle.dumps(got))
        print(f"saved {len(got)} traces")
        return 0
    want = pickle.loads(Path(target).read_bytes())
    bad = 0
    for key, value in got.items():
        if key not in want:
            print(f"not in the snapshot: {key}")
            bad += 1
        elif value != want[key]:
            print(f"DIFFERS: {key}")
            bad += 1
    print(f"compared {len(got)} traces, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
