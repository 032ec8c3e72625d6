"""Full-repaint cost of the timeline: every row of a 200×60 view rendered to segments.

Times `lane_segments`/`counter_segments`/`instant_segments` for all visible rows — what a
full repaint costs — at whole-trace zoom and at 1 % zoom, median of N repaints.

    python benchmarks/bench_render.py [TRACE ...] [--slices 1000000] [--neighbour 0,1]

``--neighbour N``: N processes spin on a core for the whole run (a busy machine); each figure
line gives the setting and the 1-minute load average. The CPU figure is this thread's own.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIG = ROOT.parent / "shared" / "traces" / "generated" / "hf_llama_big.json.gz"

from benchmarks.neighbour import load_average, neighbours  # noqa: E402
from vtui.analysis.gpu.memory_tracks import memory_series  # noqa: E402
from vtui.load.trace import load_trace  # noqa: E402
from vtui.ui.timeline.render import counter_segments, instant_segments, lane_segments, series_segments  # noqa: E402
from vtui.ui.timeline.view import HEADER, SERIES, ViewState  # noqa: E402

WIDTH, HEIGHT = 200, 60


def repaint(view: ViewState, width: int, height: int) -> int:
    cells = 0
    for row in view.rows[:height]:
        if row.lane == HEADER:  # a process header: nothing to draw but its name
            continue
        if row.lane >= 0:
            segs = lane_segments(view.store, row.track, row.lane, view.t0, view.t1, width, view.selected)
        elif row.lane == SERIES:  # memory from [memory] instants
            series = memory_series(view.store)[row.series]
            segs = series_segments(series.times_ns, series.values, view.t0, view.t1, width)
        elif view.store.tracks[row.track].kind == "counter":
            segs = counter_segments(view.store, row.track, view.t0, view.t1, width)
        else:
            segs = instant_segments(view.store, row.track, view.t0, view.t1, width)
        cells += sum(len(s.text) for s in segs)
    return cells


def bench(store, label: str, runs: int, neighbour: int = 0) -> dict:
    view = ViewState(store)
    out = {"trace": label, "slices": len(store.slices), "rows": min(len(view.rows), HEIGHT), "neighbours": neighbour,
           "load_average_1min_before": load_average()}
    rng = np.random.default_rng(0)
    for name, frac in (("whole", 1.0), ("1pct", 0.01)):
        times, cpu = [], []
        for _ in range(runs):
            view.show_all()
            if frac < 1:
                centre = rng.uniform(0.1, 0.9) * store.span_ns
                view.set_window(centre - store.span_ns * frac / 2, centre + store.span_ns * frac / 2)
            t, c = time.perf_counter(), time.thread_time()
            repaint(view, WIDTH, HEIGHT)
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.thread_time() - c) * 1000)
        out[f"{name}_median_ms"] = round(statistics.median(times), 2)
        out[f"{name}_cpu_median_ms"] = round(statistics.median(cpu), 2)  # this thread's CPU: less moved by other jobs
        out[f"{name}_p90_ms"] = round(float(np.percentile(times, 90)), 2)
    out["load_average_1min"] = load_average()
    return out


def synthetic_store(n: int, path: Path):
    """A 1M-slice trace: 20 threads × 3 nesting levels = 60 rows, a full 200×60 screen."""
    rng = np.random.default_rng(1)
    with open(path, "w") as fh:
        fh.write('{"traceEvents":[\n')
        per = n // 20
        first = True
        for tid in range(20):
            ts = 0.0
            for i in range(per // 3):
                d = float(rng.uniform(3, 30))
                for depth in range(3):
                    sep = "" if first else ",\n"
                    first = False
                    fh.write(f'{sep}{{"ph":"X","name":"op{(i + depth) % 37}","pid":1,"tid":{tid},'
                             f'"ts":{ts + depth * 0.5:.3f},"dur":{d - depth:.3f}}}')
                ts += d + 1
        fh.write("\n]}\n")
    return load_trace(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--slices", type=int, default=1_000_000)
    parser.add_argument("--neighbour", default="0", metavar="N[,N...]",
                        help="N processes spinning on a core while the repaints are timed; several: a line each")
    opts = parser.parse_args()
    settings = [int(n) for n in opts.neighbour.split(",")]
    traces = opts.traces or ([BIG] if BIG.exists() else [])
    for p in traces:
        store = load_trace(p)
        for n in settings:
            with neighbours(n):
                print(json.dumps(bench(store, p.name, opts.runs, n)), flush=True)
    if opts.slices:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            store = synthetic_store(opts.slices, Path(tmp) / "synthetic.json")
            for n in settings:
                with neighbours(n):
                    print(json.dumps(bench(store, f"synthetic {len(store.slices):,} slices", opts.runs, n)), flush=True)


if __name__ == "__main__":
    main()
