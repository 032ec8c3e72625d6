"""SQL speed: `SELECT name, COUNT(*), SUM(dur) FROM slice GROUP BY name` over 1M slices
after the load (target ≤ 200 ms), against a floor measured in the same process: the same
figures by numpy (`bincount` over the name ids). Also the thread join.

Each run is a fresh process that opens the trace from the index cache, then times every query
`--repeat` times (median wall and CPU-s of the process: DuckDB's threads included). The first
query of a process is reported apart (it imports nothing more, but builds the Arrow views).

    python benchmarks/bench_query.py [--slices 1000000] [--runs 3] [--repeat 7]

The trace (X events on 20 threads × 3 nesting levels, 60 names) is written once to
/tmp/vtui-bench-query-N.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks.fresh import run_case  # noqa: E402

GROUP_BY = "SELECT name, COUNT(*) n, SUM(dur) total FROM slice GROUP BY name"
JOIN = ("SELECT COUNT(*) FROM slice JOIN thread_track ON slice.track_id = thread_track.id "
        "JOIN thread USING (utid) WHERE thread.name LIKE '%python%'")


def write_trace(path: Path, n: int) -> None:
    """n X events: per thread a chain of parents (1 ms) with two children each (200 µs)."""
    threads = 20
    per_thread = n // threads // 3
    with open(path, "w") as fh:
        fh.write('{"traceEvents":[\n')
        for t in range(threads):
            name = "python worker" if t % 2 == 0 else "dataloader"
            fh.write(f'{{"ph":"M","name":"thread_name","pid":1,"tid":{t},"args":{{"name":"{name} {t}"}}}},\n')
        lines = []
        for t in range(threads):
            for i in range(per_thread):
                ts = i * 1000.0
                a, b = (i * 7 + t) % 20, (i * 11 + t) % 20
                lines.append(f'{{"ph":"X","name":"op{a}","cat":"cpu_op","pid":1,"tid":{t},"ts":{ts},"dur":900}}')
                lines.append(f'{{"ph":"X","name":"inner{b}","cat":"cpu_op","pid":1,"tid":{t},"ts":{ts + 10},"dur":200}}')
                lines.append(f'{{"ph":"X","name":"leaf{a}","cat":"kernel_like","pid":1,"tid":{t},"ts":{ts + 300},"dur":200}}')
        fh.write(",\n".join(lines))
        fh.write("\n]}\n")


def timed(fn, repeat: int) -> tuple[float, float]:
    """Median wall ms and median CPU ms of ``repeat`` calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append((time.perf_counter() - w) * 1000)
        cpus.append((time.process_time() - c) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def child(path: str, repeat: str) -> dict:
    """One fresh process: the first query (which builds the views), then each query ``repeat`` times."""
    import duckdb  # noqa: F401  (imported before timing: the import is not the query)
    import numpy as np
    import pyarrow  # noqa: F401

    from vtui.load.trace import load_trace
    from vtui.query.engine import run_query

    store = load_trace(path)
    s = store.slices

    def floor():
        count = np.bincount(s.name_id, minlength=len(store.strings))
        total = np.bincount(s.name_id, weights=s.dur_ns, minlength=len(store.strings))
        return [(store.strings[i], int(count[i]), int(total[i])) for i in np.flatnonzero(count)]

    w, c = time.perf_counter(), time.process_time()
    first = run_query(store, GROUP_BY)
    out = {"slices": len(s), "first_wall_ms": (time.perf_counter() - w) * 1000,
           "first_cpu_ms": (time.process_time() - c) * 1000}
    assert sorted(map(tuple, first.rows)) == sorted(floor())  # the same figures
    out["group_by"] = timed(lambda: run_query(store, GROUP_BY), int(repeat))
    out["floor"] = timed(floor, int(repeat))
    out["join"] = timed(lambda: run_query(store, JOIN), int(repeat))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slices", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args()
    path = Path(f"/tmp/vtui-bench-query-{opts.slices}.json")
    if not path.exists():
        write_trace(path, opts.slices)
    env = dict(os.environ)
    run_case("bench_query:child", [str(path), "1"], env)  # the first open writes the index cache
    runs = [run_case("bench_query:child", [str(path), str(opts.repeat)], env) for _ in range(opts.runs)]
    med = statistics.median
    print(f"{runs[0]['slices']:,} slices, {opts.runs} fresh processes × {opts.repeat} repeats, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  first query of a process (builds the views): {med(r['first_wall_ms'] for r in runs):7.1f} ms wall, "
          f"{med(r['first_cpu_ms'] for r in runs):7.1f} ms CPU")
    for key, label in (("group_by", "GROUP BY name (DuckDB)"), ("floor", "floor: numpy bincount"),
                       ("join", "python-thread join (DuckDB)")):
        walls = [r[key][0] for r in runs]
        print(f"  {label:<30} median {med(walls):7.1f} ms wall ({min(walls):.1f}–{max(walls):.1f}), "
              f"{med(r[key][1] for r in runs):7.1f} ms CPU")


if __name__ == "__main__":
    main()
