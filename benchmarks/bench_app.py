"""Time to the app's first frame, cold (no cache entry) and warm (reopened from the cache), and
Insights on the loaded trace (the analysis the ``i`` screen runs, and the ``vtui insights`` CLI).

Insights: N processes each make N calls on the store reopened from the cache; reported are the
median of all calls and, apart, the median of the first calls (``insights_first_cpu_s``).

Each measurement is a fresh process started the way ``vtui TRACE`` starts (interpreter, imports,
the app headless), timed from before the process starts until the first frame with the trace
(the end of the first screen update that drew timeline lines); ``settled`` is one pause later,
after what the app does right after that frame (the memory rows, a second layout). CPU-seconds are that process's and its children's (loader, decoders), user + system.
Medians of N runs; the cache goes to a temp folder; vtui's bytecode is compiled first, as an
installed vtui has it (see ``bytecode.py``). Warm opens have a floor measured in the same run: a
CLI process that opens the entry (``vtui info``).

    python benchmarks/bench_app.py TRACE [--runs 3] [--warm-only]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.bytecode import compiled_env  # noqa: E402

APP = r"""
import asyncio, json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from textual.app import App
from vtui.ui.app import VtuiApp
from vtui.ui.timeline.lanes import Timeline

def cpu_s():
    return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))

# The first frame with the trace: the end of the first screen update that drew timeline lines
# (App._display is where Textual hands each update to the terminal, headless too).
drawn, frame, shown = [], {}, asyncio.Event()
line = Timeline.render_line
def render_line(self, y):
    drawn.append(1)
    return line(self, y)
Timeline.render_line = render_line
display = App._display
def _display(self, screen, renderable):
    display(self, screen, renderable)
    if drawn and not frame:
        frame.update(done=time.time(), cpu_s=cpu_s())
        shown.set()
App._display = _display

async def first_frame(pilot):
    # Waits without polling the app (a pilot.pause every 10 ms cost ~0.15 CPU-s per second of a
    # cold load, which vtui TRACE never pays); a load error is looked for twice a second.
    app = pilot.app
    while not frame and app.load_error is None:
        try:
            await asyncio.wait_for(shown.wait(), 0.5)
        except asyncio.TimeoutError:
            pass
    await pilot.pause()  # what comes right after the first frame (the memory rows, a second layout)
    print(json.dumps({**frame, "settled": time.time(), "settled_cpu_s": cpu_s(), "error": app.load_error}), flush=True)
    app.exit()

VtuiApp(sys.argv[1]).run(headless=True, size=(200, 60), auto_pilot=first_frame)
"""

INSIGHTS = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from vtui.load.trace import load_trace
from vtui.analysis.report.insights import compute_insights

store = load_trace(sys.argv[1])  # warm: from the cache entry
times = []
for _ in range(int(sys.argv[3])):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    compute_insights(store)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    times.append((time.perf_counter() - t, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime))
print(json.dumps({"seconds": [t for t, _ in times], "cpu_s": [c for _, c in times]}))
"""


def _app_run(path: Path, env: dict) -> dict:
    start = time.time()
    out = subprocess.run([sys.executable, "-c", APP, str(path), str(ROOT)], capture_output=True, text=True,
                         env=env, check=True, timeout=600)
    line = next(ln for ln in reversed(out.stdout.splitlines()) if ln.startswith("{"))
    got = json.loads(line)
    if got["error"]:
        raise SystemExit(f"load failed: {got['error']}")
    return {"seconds": got["done"] - start, "cpu_s": got["cpu_s"],
            "settled_s": got["settled"] - start, "settled_cpu_s": got["settled_cpu_s"]}


def _cli_insights(path: Path, env: dict) -> dict:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vtui", "insights", str(path)], capture_output=True, env=env, check=True,
                   cwd=ROOT, timeout=600)
    return {"seconds": time.perf_counter() - start}


CLI_OPEN = r"""
import resource, sys
sys.path.insert(0, sys.argv[2])
from vtui.cli import main
main(["info", sys.argv[1]])
r = resource.getrusage(resource.RUSAGE_SELF)
print(r.ru_utime + r.ru_stime)
"""


def _cli_open(path: Path, env: dict) -> dict:
    """The floor for a warm open: a CLI process that opens the entry and prints (``vtui info``)."""
    start = time.time()
    out = subprocess.run([sys.executable, "-c", CLI_OPEN, str(path), str(ROOT)], capture_output=True, text=True,
                         env=env, check=True, timeout=600)
    return {"seconds": time.time() - start, "cpu_s": float(out.stdout.strip().splitlines()[-1])}


def bench(path: Path, runs: int, warm_only: bool = False) -> dict:
    med = lambda rows, k: round(statistics.median(r[k] for r in rows), 3)  # noqa: E731
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="vtui-bench-cache-") as cache_home, compiled_env() as env:
        env = {**env, "XDG_CACHE_HOME": cache_home, "PYTHONPATH": str(ROOT)}
        cold, warm, floor = [], [], []
        for k in range(runs):
            if not warm_only or k == 0:
                shutil.rmtree(Path(cache_home) / "vtui", ignore_errors=True)
                cold.append(_app_run(path, env))  # writes the entry
            warm.append(_app_run(path, env))
            floor.append(_cli_open(path, env))
        if warm_only:
            return {"file": path.name, "runs": runs,
                    "app_warm_s": med(warm, "seconds"), "app_warm_cpu_s": med(warm, "cpu_s"),
                    "app_warm_all_s": [round(r["seconds"], 2) for r in warm],
                    "app_warm_settled_s": med(warm, "settled_s"), "app_warm_settled_cpu_s": med(warm, "settled_cpu_s"),
                    "floor_cli_info_s": med(floor, "seconds"), "floor_cli_info_cpu_s": med(floor, "cpu_s"),
                    "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
        cli = [_cli_insights(path, env) for _ in range(runs)]
        procs = []
        for _ in range(runs):  # a process each: the first call comes once per process
            out = subprocess.run([sys.executable, "-c", INSIGHTS, str(path), str(ROOT), str(runs)],
                                 capture_output=True, text=True, env=env, check=True)
            procs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        ins = {k: [v for p in procs for v in p[k]] for k in ("seconds", "cpu_s")}
        first = [p["cpu_s"][0] for p in procs]
    return {
        "file": path.name, "runs": runs,
        "app_cold_s": med(cold, "seconds"), "app_cold_cpu_s": med(cold, "cpu_s"),
        "app_cold_all_s": [round(r["seconds"], 2) for r in cold],
        "app_warm_s": med(warm, "seconds"), "app_warm_cpu_s": med(warm, "cpu_s"),
        "app_warm_all_s": [round(r["seconds"], 2) for r in warm],
        "app_warm_settled_s": med(warm, "settled_s"), "app_warm_settled_cpu_s": med(warm, "settled_cpu_s"),
        "floor_cli_info_s": med(floor, "seconds"), "floor_cli_info_cpu_s": med(floor, "cpu_s"),
        "insights_s": round(statistics.median(ins["seconds"]), 3),
        "insights_cpu_s": round(statistics.median(ins["cpu_s"]), 3),
        # The first call after the store is opened is what a user waits for (masks not yet
        # memoised, columns not yet paged in): reported apart from the median of all calls.
        "insights_first_cpu_s": round(statistics.median(first), 3),
        "insights_first_all_cpu_s": [round(c, 3) for c in first],
        "insights_cli_s": med(cli, "seconds"),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm-only", action="store_true", help="one cold run (to write the entry), no Insights")
    opts = parser.parse_args()
    for f in opts.files:
        print(json.dumps(bench(f, opts.runs, opts.warm_only)), flush=True)


if __name__ == "__main__":
    main()
