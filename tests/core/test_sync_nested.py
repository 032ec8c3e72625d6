"""A sync call recorded inside another (Nsight writes ``cudaMemcpy`` and its versioned entry
``cudaMemcpy_v3020`` nested, with one correlation id) is one wait: the sync points count it once."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.helpers import SHARED_TRACES
from vtui.analysis.slices.operators import analyse_ops
from vtui.load.trace import load_trace


def test_nested_sync_calls_count_once(tmp_path):
    ev = []
    for i in range(15):
        t = 1_000.0 + 30_000.0 * i
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpy", "ts": t, "dur": 20_000, "pid": 1, "tid": 1,
                   "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpy", "ts": t + 0.2, "dur": 19_999, "pid": 1, "tid": 1,
                   "args": {"correlation": i + 1}})
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "ts": 500_000.0, "dur": 50, "pid": 1, "tid": 1})
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    sy = analyse_ops(load_trace(path, cache=False)).sync
    outer = [e for e in ev if not any(o is not e and o["ts"] <= e["ts"] and e["ts"] + e["dur"] <= o["ts"] + o["dur"]
                                      for o in ev)]  # plain Python: the calls inside no other
    assert (sy.blocking_count, sy.blocking_ns) == (len(outer), round(sum(e["dur"] for e in outer) * 1000)) == (16, 300_050_000)


def test_the_shared_nsight_export():
    path = SHARED_TRACES / "public" / "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
    if not path.exists():
        pytest.skip(f"{path} absent (../shared not here)")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    n, total = con.execute("SELECT count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                           "ON s.id = r.nameId WHERE s.value = 'cudaMemcpy'").fetchone()  # the API calls, not _v3020
    con.close()
    sy = analyse_ops(load_trace(path)).sync
    assert (sy.blocking_count, sy.blocking_ns) == (n, total) and n == 15  # 30 before: each wait counted twice
