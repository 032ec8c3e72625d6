"""The app's own work before its first frame at scale in tracks: the timeline's rows
(``ViewState``, the track list and the timeline draw from them) for a trace of 1,000,000 threads
reopened from the cache, and a rebuild of them after one track is hidden. Medians of N fresh
processes, CPU-seconds of that step alone, the 1-minute load average before and after (the machine
is shared: say so with every figure). ``--root`` measures another checkout (the code before).

    python benchmarks/bench_view_rows.py                      # 1,000,000 tracks, 3 runs
    python benchmarks/bench_view_rows.py --root /path/to/other/checkout
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.fresh import run_case, warm_cache  # noqa: E402
from benchmarks.many_tracks_synth import bench_arguments  # noqa: E402


def child(trace: str) -> dict:
    """One run: the rows of a store reopened from the cache, then their rebuild after a hide."""
    from vtui.load.trace import load_trace
    from vtui.ui.timeline.view import ViewState

    store = load_trace(trace)  # from the cache entry
    cpu = time.process_time()
    view = ViewState(store)
    first = time.process_time() - cpu
    cpu = time.process_time()
    view.toggle_hidden(5)
    return {"rows_cpu_s": first, "rebuild_cpu_s": time.process_time() - cpu, "rows": len(view.rows)}


def bench(path: Path, runs: int, root: Path) -> dict:
    med = lambda rows, k: round(statistics.median(r[k] for r in rows), 3)  # noqa: E731
    with warm_cache(path, root) as env:  # writes the entry with the measured tree's vtui
        env["PYTHONPATH"] = str(root)
        load_before = os.getloadavg()[0]
        got = [run_case("bench_view_rows:child", [str(path)], env, root) for _ in range(runs)]
        load_after = os.getloadavg()[0]
    return {"file": path.name, "root": str(root), "runs": runs, "rows": got[0]["rows"],
            "rows_cpu_s": med(got, "rows_cpu_s"), "rows_all_cpu_s": [round(g["rows_cpu_s"], 3) for g in got],
            "rebuild_after_hide_cpu_s": med(got, "rebuild_cpu_s"),
            "load_average_1min": [round(load_before, 2), round(load_after, 2)]}


def main() -> None:
    opts, path = bench_arguments(__doc__ or "", ROOT)
    print(json.dumps(bench(path, opts.runs, opts.root.resolve())), flush=True)


if __name__ == "__main__":
    main()
