"""memory_series: the [memory] instants as counter series, per process, device and total, checked
against plain Python over the raw JSON; odd values take the event-by-event path without a crash."""

from __future__ import annotations

import gzip
import json

import numpy as np

from tests.helpers import QWEN, STACK, X, load_events
from vtui.analysis.gpu.memory_tracks import memory_series
from vtui.load.trace import load_trace


def _plain(path) -> dict[tuple, list[int]]:
    """(pid, device, total) -> levels in time order, from the JSON."""
    with gzip.open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("name") == "[memory]"]
    events.sort(key=lambda e: e["ts"])
    out: dict[tuple, list[int]] = {}
    for e in events:
        a = e["args"]
        dev = {0: "cpu", 1: "cuda"}[a["Device Type"]] + (f":{a['Device Id']}" if a["Device Id"] >= 0 else "")
        out.setdefault((e["pid"], dev, "allocated"), []).append(a["Total Allocated"])
        out.setdefault((e["pid"], dev, "reserved"), []).append(a["Total Reserved"])
    return {k: v for k, v in out.items() if k[2] == "allocated" or max(v) > 0}  # (nothing reserved: no row)


def test_series_match_the_raw_json():
    for path in (QWEN, STACK):
        store = load_trace(path, cache=False)
        got = {(store.tracks[s.track].pid, *s.title.split()): s for s in memory_series(store)}
        want = _plain(path)
        assert set(got) == set(want)
        for key, levels in want.items():
            assert got[key].values.tolist() == levels, key
            assert got[key].absolute and np.all(np.diff(got[key].times_ns) >= 0)
        assert memory_series(store) is memory_series(store)  # built once per store


def test_two_processes_and_odd_values(tmp_path):
    mem = [{"ph": "i", "s": "t", "name": "[memory]", "pid": pid, "tid": pid, "ts": ts, "args": args}
           for pid, ts, args in [
               (1, 10, {"Bytes": 100, "Device Type": 1, "Device Id": 0}),
               (1, 20, {"Bytes": "50", "Device Type": 1, "Device Id": 0}),  # a numeric string
               (1, 30, {"Bytes": 1e300, "Device Type": 1, "Device Id": 0}),  # no real size: skipped
               (1, 35, {"Bytes": "lots", "Device Type": 1, "Device Id": 0}),  # not a number: skipped
               (2, 15, {"Bytes": 7, "Device Type": 1, "Device Id": 0}),
           ]]
    store = load_events(tmp_path, [X("a", 0, 50), X("b", 0, 50, pid=2, tid=2), *mem])
    series = {(store.tracks[s.track].pid, s.title): s.values.tolist() for s in memory_series(store)}
    assert series == {(1, "cuda:0 allocated"): [100, 150], (2, "cuda:0 allocated"): [7]}


def test_built_from_the_columns_not_a_python_pass(monkeypatch):
    """The series come from the track and name columns: no Track object per track, no scan of
    every interned string (a trace has millions of them)."""
    from vtui.store.tracktable import TrackTable

    store = load_trace(QWEN, cache=False)
    want = [(s.track, s.title, s.values.tolist()) for s in memory_series(store)]
    fresh = load_trace(QWEN, cache=False)

    class NoScan(list):
        def __iter__(self):
            raise AssertionError("scanned every string")

    fresh.strings = NoScan(fresh.strings)
    monkeypatch.setattr(TrackTable, "__iter__", lambda self: (_ for _ in ()).throw(AssertionError("made every Track")))
    assert [(s.track, s.title, s.values.tolist()) for s in memory_series(fresh)] == want
