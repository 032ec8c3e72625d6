"""The timeline widget's own costs in the app (headless, 200×60): a full repaint through
``Timeline.render_line`` (its line cache emptied first), and what a key's change costs before
any drawing: a selection move (→) and a zoom (w), the view's update and every watcher it wakes.
Medians of N, this thread's CPU, in a fresh process per checkout; the 1-minute load average
before and after (the machine is shared: say so with every figure). ``--root`` measures another
checkout (the code before).

    python benchmarks/bench_timeline_widget.py [--slices 300000] [--runs 20] [--root PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.fresh import run_case  # noqa: E402


def child(trace: str, runs: str) -> dict:
    """One process: the app headless at 200×60 on ``trace``, each cost the median of ``runs``."""
    return asyncio.run(_probe(Path(trace), int(runs)))


async def _probe(path: Path, runs: int) -> dict:
    from vtui.load.trace import load_trace
    from vtui.ui.app import VtuiApp
    from vtui.ui.timeline.lanes import Timeline

    app = VtuiApp(path, store=load_trace(path))
    out = {}
    async with app.run_test(size=(200, 60)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        timeline, pane = app.query_one(Timeline), app.pane
        pane.action_lane_next()

        def cpu(fn: Callable[[], object]) -> float:
            got = []
            for _ in range(runs):
                c = time.thread_time()
                fn()
                got.append((time.thread_time() - c) * 1000)
            return round(statistics.median(got), 3)

        def repaint() -> None:
            timeline._cache.clear()
            for y in range(timeline.size.height):
                timeline.render_line(y)
        out["repaint_ms"] = cpu(repaint)
        steps = iter([1, -1] * runs)
        out["select_move_ms"] = cpu(lambda: pane.action_lane_next() if next(steps) > 0 else pane.action_lane_prev())
        zooms = iter([True, False] * runs)
        out["zoom_ms"] = cpu(lambda: pane.action_zoom_in() if next(zooms) else pane.action_zoom_out())
    return out


def synthetic(path: Path, slices: int) -> Path:
    """20 threads × 3 nesting levels: 60 rows, a full 200×60 screen (as bench_render's)."""
    per = slices // 60
    with open(path, "w") as fh:
        fh.write('{"traceEvents":[\n')
        sep = ""
        for tid in range(20):
            ts = 0.0
            for i in range(per):
                d = 3.0 + (i * 7919 % 27)
                for depth in range(3):
                    fh.write(f'{sep}{{"ph":"X","name":"op{(i + depth) % 37}","pid":1,"tid":{tid},'
                             f'"ts":{ts + depth * 0.5:.3f},"dur":{d - depth:.3f}}}')
                    sep = ",\n"
                ts += d + 1
        fh.write("\n]}\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slices", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--root", type=Path, default=ROOT, help="the vtui checkout to measure (default: this one)")
    opts = parser.parse_args()
    root = opts.root.resolve()
    with tempfile.TemporaryDirectory(prefix="vtui-bench-") as tmp:
        path = synthetic(Path(tmp) / "synthetic.json", opts.slices)
        env = {**os.environ, "XDG_CACHE_HOME": tmp, "PYTHONPATH": str(root)}
        load_before = os.getloadavg()[0]
        got = run_case("bench_timeline_widget:child", [str(path), str(opts.runs)], env, root)
        load_after = os.getloadavg()[0]
    print(json.dumps({"root": str(root), "slices": opts.slices, "runs": opts.runs, **got,
                      "load_average_1min": [round(load_before, 2), round(load_after, 2)]}), flush=True)


if __name__ == "__main__":
    main()
