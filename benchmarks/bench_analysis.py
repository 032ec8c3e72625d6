"""Speed after the load: aggregation (whole trace and a 1 % range), search over all names, range export;
the call tree (whole trace, 1 % range, inverted) and a 200×60 flame graph repaint.

Loads each trace once, then times each operation N times in this process and reports the
median and p90 (ms). Export is timed on a 10 % range (fresh output file each run).

    python benchmarks/bench_analysis.py [TRACE ...] [--runs 7] [--export-runs 3]

Defaults: ../shared/traces/generated/hf_llama_big.json.gz and /tmp/s200.json (a 200 MB
synthetic trace, ~1M slices; make it with `python benchmarks/synth.py /tmp/s200.json --mb 200`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BIG = ROOT.parent / "shared" / "traces" / "generated" / "hf_llama_big.json.gz"

from vtui.analysis.calltree.tree import build_tree, invert  # noqa: E402
from vtui.analysis.slices.aggregate import aggregate  # noqa: E402
from vtui.analysis.slices.search import search  # noqa: E402
from vtui.export.trace import export_range  # noqa: E402
from vtui.load.trace import load_trace  # noqa: E402
from vtui.store.slicetime import time_range  # noqa: E402
from vtui.ui.screens.flame import flame_layout, flame_segments  # noqa: E402


def timed(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.9))]


def bench(path: Path, runs: int, export_runs: int) -> None:
    t = time.perf_counter()
    store = load_trace(path)
    print(f"\n{path.name}: {len(store.slices):,} slices, {len(store.strings):,} strings, "
          f"loaded in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    build_tree(store)  # the first tree also finds the GPU launches and merged names (cached per store)
    print(f"  {'call tree, first (fills the caches)':<36} {1000 * (time.perf_counter() - t):8.2f} ms")
    span = int(store.span_ns)
    mid = span // 2
    one = (mid - span // 200, mid + span // 200)
    # a fresh range value per run: its selection is cached on it, and each run must select anew
    cases = {
        "aggregate whole trace (by name)": lambda: aggregate(store, time_range(store)),
        "aggregate 1 % range (by name)": lambda: aggregate(store, time_range(store, *one)),
        "aggregate whole trace (by cat)": lambda: aggregate(store, time_range(store), by="cat"),
        "search all names 'mm|conv|copy'": lambda: search(store, "mm|conv|copy"),
        "search all names '^aten::'": lambda: search(store, "^aten::"),
        "call tree whole trace": lambda: build_tree(store, time_range(store)),
        "call tree 1 % range": lambda: build_tree(store, time_range(store, *one)),
    }
    tree = build_tree(store)
    layout = flame_layout(tree, "total")
    cases["call tree inverted (from the tree)"] = lambda: invert(tree)
    cases["flame graph layout (whole tree)"] = lambda: flame_layout(tree, "total")
    cases["flame graph repaint 200×60"] = lambda: [flame_segments(tree, layout, d, 200) for d in range(60)]
    for label, fn in cases.items():
        med, p90 = timed(fn, runs)
        print(f"  {label:<36} median {med:8.2f} ms   p90 {p90:8.2f} ms   ({runs} runs)")
    ten = (mid - span // 20, mid + span // 20)
    with tempfile.TemporaryDirectory() as tmp:
        n = iter(range(1000))
        med, p90 = timed(lambda: export_range(store, Path(tmp) / f"e{next(n)}.json", *ten), export_runs)
        plan_events = export_range(store, Path(tmp) / "count.json", *ten).events
    print(f"  {'export 10 % range':<36} median {med:8.0f} ms   p90 {p90:8.0f} ms   ({export_runs} runs, "
          f"{plan_events:,} events)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--export-runs", type=int, default=3)
    opts = parser.parse_args()
    traces = opts.traces or [p for p in (BIG, Path("/tmp/s200.json")) if p.exists()]
    for path in traces:
        bench(path, opts.runs, opts.export_runs)


if __name__ == "__main__":
    main()
