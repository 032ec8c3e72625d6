"""Flow ends bind to the slice that starts at their timestamp, and flows agree with the
``correlation`` ids of the slices they join (checked against the raw JSON, paired by id)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

from tests.helpers import FIXTURES, QWEN, SHARED_TRACES, load_events, raw_events
from vtui.load.trace import load_trace


def _x(name, ts, dur, tid, corr=None, cat="kernel", pid=0):
    e = {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if corr is not None:
        e["args"] = {"correlation": corr}
    return e


def _flow(ident, ts_s, ts_f):
    return [{"ph": "s", "id": ident, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": ts_s},
            {"ph": "f", "id": ident, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": ts_f, "bp": "e"}]


def _pairs(store) -> set[tuple[str, str]]:
    f = store.flows
    return {(store.name(int(a)), store.name(int(b))) for a, b in zip(f.src_slice, f.dst_slice)}


def test_flow_end_at_a_kernel_start_binds_to_it_not_to_the_kernel_still_running(tmp_path):
    # k1 [4, 14] still runs when k2 starts at 8 (programmatic dependent launch).
    events = [_x("launch1", 0, 2, 1, 1, "cuda_runtime", 1), _x("launch2", 3, 1, 1, None, "cuda_runtime", 1),
              _x("k1", 4, 10, 7, 1), _x("k2", 8, 10, 7), *_flow(1, 0, 4), *_flow(2, 3, 8)]
    store = load_events(tmp_path, events)
    assert _pairs(store) == {("launch1", "k1"), ("launch2", "k2")}


def test_a_slice_starting_at_the_point_beats_its_enclosing_parent(tmp_path):
    events = [_x("launch", 0, 2, 1, cat="cuda_runtime", pid=1), _x("outer", 4, 20, 7), _x("inner", 8, 2, 7),
              *_flow(1, 0, 8)]
    assert _pairs(load_events(tmp_path, events)) == {("launch", "inner")}


def test_correlation_ids_move_a_flow_end_to_the_slice_with_the_same_id(tmp_path):
    # k2 and k3 start together; the flow end binds to the shorter, k2, but the ids say k3.
    events = [_x("launch3", 0, 2, 1, 3, "cuda_runtime", 1), _x("k2", 8, 4, 7, 2), _x("k3", 8, 10, 7, 3),
              *_flow(3, 0, 8)]
    store = load_events(tmp_path, events)
    assert _pairs(store) == {("launch3", "k3")}
    assert any(w.startswith("1 flows joined slices with different correlation ids (moved") for w in store.warnings)


def test_flows_that_disagree_with_no_better_slice_are_kept_and_counted(tmp_path):
    # The end lies inside k, not at its start: not a sure bind, so the ids are checked.
    events = [_x("launch", 0, 2, 1, 5, "cuda_runtime", 1), _x("k", 8, 4, 7, 6), *_flow(5, 0, 9)]
    store = load_events(tmp_path, events)
    assert _pairs(store) == {("launch", "k")}
    assert any(w.startswith("1 flows join slices with different correlation ids (kept") for w in store.warnings)


def _expected_by_correlation(events: list[dict]) -> set[tuple[int, int]]:
    """Independent: (launch ordinal, GPU work ordinal) for each ac2g id with both an s and an f,
    the two X events found by their ``correlation`` arg (the launch on the s's thread, the
    work on the f's)."""
    ends = defaultdict(dict)
    for e in events:
        if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
            ends[e["id"]][e["ph"]] = (e["pid"], e["tid"])
    by_corr = defaultdict(dict)
    for i, e in enumerate(events):
        corr = (e.get("args") or {}).get("correlation") if e.get("ph") == "X" else None
        if corr is not None:
            by_corr[corr][(e["pid"], e["tid"])] = i
    out = set()
    for ident, sides in ends.items():
        if "s" in sides and "f" in sides:
            launch, work = by_corr[ident].get(sides["s"]), by_corr[ident].get(sides["f"])
            if launch is not None and work is not None:
                out.add((launch, work))
    return out


def _store_pairs(store) -> set[tuple[int, int]]:
    f, s = store.flows, store.slices
    ac2g = [k for k in range(len(f)) if store.strings[f.cat_id[k]] == "ac2g" and f.src_slice[k] >= 0 and f.dst_slice[k] >= 0]
    return {(int(s.ordinal[f.src_slice[k]]), int(s.ordinal[f.dst_slice[k]])) for k in ac2g}


def _with_overlapping_kernels(events: list[dict]) -> tuple[list[dict], int]:
    """The same trace with each GPU kernel stretched to end 1 µs after the next one on its
    stream starts (as with programmatic dependent launch). Returns (events, kernels stretched)."""
    events = [dict(e) for e in events]
    per_stream = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            per_stream[(e["pid"], e["tid"])].append(e)
    stretched = 0
    for kernels in per_stream.values():
        kernels.sort(key=lambda e: e["ts"])
        for a, b in zip(kernels, kernels[1:]):
            if a["ts"] < b["ts"] and a["ts"] + a["dur"] <= b["ts"] + 1 < b["ts"] + b["dur"]:
                a["dur"] = b["ts"] + 1 - a["ts"]
                stretched += 1
    return events, stretched


def test_real_trace_with_overlapping_kernels_pairs_like_the_correlation_ids(tmp_path):
    doc = json.loads(gzip.decompress(QWEN.read_bytes()))
    events, stretched = _with_overlapping_kernels(doc["traceEvents"])
    assert stretched > 500
    doc["traceEvents"] = events
    path = tmp_path / "overlapping.json"
    path.write_text(json.dumps(doc))
    store = load_trace(path, cache=False)
    expected = _expected_by_correlation(events)
    assert len(expected) == 1198
    assert _store_pairs(store) == expected
    assert not any("correlation" in w for w in store.warnings)  # bound right by time alone


@pytest.mark.parametrize("name", ["hta__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "hta__nccl_data.json.gz",
                                  "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz"])
def test_shared_kineto_traces_pair_like_the_correlation_ids(name):
    path = SHARED_TRACES / "public" / name
    if not path.exists():
        path = FIXTURES / name
        if not path.exists():
            pytest.skip(f"{name} is not in this checkout")
    events = raw_events(path)
    store = load_trace(path, cache=False)
    assert _store_pairs(store) == _expected_by_correlation(events)
