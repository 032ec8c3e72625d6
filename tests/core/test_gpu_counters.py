"""Kineto's sampled GPU counters (``C`` events under the string pid ``"GPU n Counters"``) are
counter tracks in GPU n's process, beside its streams, not a process of their own."""

from __future__ import annotations

import json

import numpy as np

from vtui.cli import main
from vtui.load.trace import load_trace


def _trace(tmp_path):
    events = [
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "process_name", "pid": "GPU 0 Counters", "tid": 0, "args": {"name": "GPU 0 Counters"}},
        {"ph": "X", "name": "gemm", "cat": "kernel", "pid": 0, "tid": 7, "ts": 10, "dur": 5},
        {"ph": "C", "name": "SM throughput", "pid": "GPU 0 Counters", "tid": 0, "ts": 10, "args": {"value": 50.5}},
        {"ph": "C", "name": "SM throughput", "pid": "GPU 0 Counters", "tid": 0, "ts": 12, "args": {"value": 70}},
        {"ph": "C", "name": "DRAM bandwidth", "pid": "GPU 0 Counters", "tid": 0, "ts": 12, "args": {"read": 3, "write": 4}},
        {"ph": "C", "name": "SM throughput", "pid": "GPU 3 Counters", "tid": 0, "ts": 13, "args": {"value": 1}},
    ]
    path = tmp_path / "gpu_counters.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_gpu_counters_sit_in_that_gpus_process(tmp_path):
    store = load_trace(_trace(tmp_path), cache=False)
    tracks = [store.tracks[t] for t in range(len(store.tracks))]
    stream = next(t for t in tracks if t.name == "thread 7")
    counters = {t.name: t for t in tracks if t.kind == "counter" and t.pid != "GPU 3 Counters"}
    for name in ("SM throughput", "DRAM bandwidth read", "DRAM bandwidth write"):
        assert counters[name].pid == 0 and counters[name].process_label == stream.process_label == "GPU 0"
    # Ordered with GPU 0's tracks: no other process's track lies between them.
    ids = sorted([stream.id] + [counters[n].id for n in ("SM throughput", "DRAM bandwidth read")])
    assert all(store.tracks[i].pid == 0 for i in range(ids[0], ids[-1] + 1))
    c = store.counters
    sm = np.flatnonzero(c.track == counters["SM throughput"].id)
    assert c.value[sm].tolist() == [50.5, 70.0]


def test_counters_of_a_gpu_the_trace_does_not_have_keep_their_own_process(tmp_path):
    store = load_trace(_trace(tmp_path), cache=False)
    other = [store.tracks[t] for t in range(len(store.tracks)) if store.tracks[t].pid == "GPU 3 Counters"]
    assert [t.name for t in other] == ["SM throughput"]


def test_gpu_counters_in_sql(tmp_path, capsys):
    sql = ("select p.pid, p.label, t.name, c.value from counter c join counter_track t on c.track_id = t.id "
           "join process p using (upid) where p.pid = 0 order by c.ts, t.name")
    assert main(["query", str(_trace(tmp_path)), sql, "--format", "json", "--no-cache"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    # (SQL names a counter as Perfetto's JSON importer does: name, then the series key)
    assert rows == [[0, "GPU 0", "SM throughput value", 50.5], [0, "GPU 0", "DRAM bandwidth read", 3.0],
                    [0, "GPU 0", "DRAM bandwidth write", 4.0], [0, "GPU 0", "SM throughput value", 70.0]]
