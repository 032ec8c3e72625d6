"""`vtui export --format pftrace`: the range written as a Perfetto protobuf trace reads back (through
vtui's own reader) to the same store as the JSON it came from: the same insights, slices, flows
and counters."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2", reason="the pftrace extra is not installed")

from tests.helpers import FIXTURES, MI250, QWEN, raw_events  # noqa: E402
from vtui.cli import main  # noqa: E402
from vtui.export.pftrace import export_pftrace  # noqa: E402
from vtui.export.trace import export_range  # noqa: E402
from vtui.load.trace import load_trace  # noqa: E402


def _insights(path, capsys) -> dict:
    assert main(["insights", str(path), "--json", "--no-cache"]) == 0
    out = json.loads(capsys.readouterr().out)
    out.pop("trace")
    return out


def _slice_set(store) -> set[tuple]:
    s = store.slices
    names, cats = store.strings, store.strings
    return {(names[int(s.name_id[r])], cats[int(s.cat_id[r])], int(s.start_ns[r]) + round(store.origin_us * 1000),
             int(s.end_ns[r] - s.start_ns[r]), int(s.depth[r])) for r in range(len(s))}


def _flow_set(store) -> set[tuple]:
    s, f = store.slices, store.flows
    def end(r):
        return (store.strings[int(s.name_id[r])], int(s.start_ns[r]) + round(store.origin_us * 1000))
    return {(end(int(a)), end(int(b))) for a, b in zip(f.src_slice, f.dst_slice) if a >= 0 and b >= 0}


@pytest.mark.parametrize("trace", [QWEN, MI250], ids=lambda p: p.name[:24])
def test_a_kineto_trace_round_trips_to_the_same_insights(trace, tmp_path, capsys):
    out = tmp_path / "t.pftrace"
    assert main(["export", str(trace), "--format", "pftrace", "-o", str(out), "--no-cache"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert out.read_bytes()[:1] == b"\x0a"  # a protobuf Trace, not JSON
    assert _insights(out, capsys) == _insights(trace, capsys)


def test_the_slices_flows_and_args_of_the_whole_trace_come_back(tmp_path):
    store = load_trace(QWEN, cache=False)
    out = tmp_path / "all.pftrace"
    export_pftrace(store, out, 0, store.span_ns)
    back = load_trace(out, cache=False)
    assert _slice_set(back) == _slice_set(store)
    assert _flow_set(back) == _flow_set(store) and len(back.flows) == len(store.flows)
    # Kineto's args keep their keys and values (correlation, External id...), checked against the raw JSON.
    raw = {(e["name"], e["ts"]): e.get("args", {}) for e in raw_events(QWEN) if e.get("ph") == "X"}
    s = back.slices
    for r in range(0, len(s), 97):
        off, n = int(s.args_off[r]), int(s.args_len[r])
        got = json.loads(back.args_blob[off : off + n]) if n else {}
        ts = (int(s.start_ns[r]) + round(back.origin_us * 1000)) / 1000
        key = (back.strings[int(s.name_id[r])], ts)
        expected = raw.get(key, raw.get((key[0], round(ts, 3))))
        assert got == expected


def test_a_range_exports_the_same_events_as_the_json_export(tmp_path):
    store = load_trace(QWEN, cache=False)
    t0, t1 = store.span_ns // 3, store.span_ns // 2
    export_range(store, tmp_path / "r.json", t0, t1)
    plan = export_pftrace(store, tmp_path / "r.pftrace", t0, t1)
    a, b = load_trace(tmp_path / "r.json", cache=False), load_trace(tmp_path / "r.pftrace", cache=False)
    assert _slice_set(a) == _slice_set(b) and len(b.slices) == plan.counts["slices"]
    assert len(a.instants) == len(b.instants)
    assert _flow_set(b) <= _flow_set(a)  # flows whose two slices are both in the range


def test_counters_round_trip_with_their_series(tmp_path):
    events = [{"ph": "X", "name": "k", "cat": "kernel", "pid": 0, "tid": 7, "ts": 10, "dur": 5},
              {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}]
    for i in range(5):
        events.append({"ph": "C", "name": "mem", "pid": 1, "tid": 1, "ts": 10 + i, "args": {"used": i * 2.5, "free": 9 - i}})
        events.append({"ph": "C", "name": "SM throughput", "pid": "GPU 0 Counters", "tid": 0, "ts": 11 + i,
                       "args": {"value": 40 + i}})
    src = tmp_path / "c.json"
    src.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(src, cache=False)
    export_pftrace(store, tmp_path / "c.pftrace", 0, store.span_ns)
    back = load_trace(tmp_path / "c.pftrace", cache=False)

    def series(st) -> dict[str, list]:
        out: dict[str, list] = {}
        c = st.counters
        for r in np.argsort(c.ts_ns, kind="stable").tolist():
            t = st.tracks[int(c.track[r])]
            out.setdefault(f"{t.pid}/{t.name}", []).append((int(c.ts_ns[r]), float(c.value[r])))
        return out

    assert series(back) == series(store)
    assert series(store)["1/mem used"] == [(i * 1000, i * 2.5) for i in range(5)]
    assert "0/SM throughput" in series(back)  # beside GPU 0's streams after the round trip too


def test_a_folder_of_ranks_exports_one_pftrace_per_rank(tmp_path):
    store = load_trace(FIXTURES / "ranks", cache=False)
    out = tmp_path / "ranks-out"
    export_pftrace(store, out, 0, store.span_ns)
    files = sorted(p.name for p in out.iterdir())
    assert files == ["hta__sampled_rank-0.pftrace", "hta__sampled_rank-1.pftrace"]
    back = load_trace(out, cache=False)
    assert len(back.sources) == 2 and len(back.slices) == len(store.slices)


def test_refuses_to_write_over_its_input(tmp_path, capsys):
    src = tmp_path / "t.pftrace"
    store = load_trace(MI250, cache=False)
    export_pftrace(store, src, 0, store.span_ns)
    assert main(["export", str(src), "--format", "pftrace", "-o", str(src), "--force", "--no-cache"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_begin_end_pairs_and_a_complete_event_without_dur(tmp_path):
    """B/E pairs around X events, and an X without ``dur`` (it runs to the trace's end): the E after
    it still closes the B it belongs to."""
    events = [{"pid": 0, "tid": 0, "ph": "B", "name": "alpha", "ts": 0},
              {"pid": 0, "tid": 0, "ph": "B", "name": "beta", "ts": 1},
              {"pid": 0, "tid": 0, "ph": "X", "name": "gamma", "ts": 2, "dur": 5, "args": {"detail": "foobar"}},
              {"pid": 0, "tid": 0, "ph": "X", "name": "epsilon", "ts": 7},
              {"pid": 0, "tid": 0, "ph": "E", "name": "beta", "ts": 13},
              {"pid": 0, "tid": 0, "ph": "E", "name": "alpha", "ts": 14}]
    src = tmp_path / "be.json"
    src.write_text(json.dumps(events))
    store = load_trace(src, cache=False)
    export_pftrace(store, tmp_path / "be.pftrace", 0, store.span_ns)
    back = load_trace(tmp_path / "be.pftrace", cache=False)
    assert _slice_set(back) == _slice_set(store)
    ends = {back.strings[int(n)]: int(e) for n, e in zip(back.slices.name_id, back.slices.end_ns)}
    assert ends == {"alpha": 14000, "beta": 13000, "gamma": 7000, "epsilon": 14000}


def test_a_pftrace_exports_back_to_json_with_its_flows(tmp_path):
    store = load_trace(MI250, cache=False)
    export_pftrace(store, tmp_path / "m.pftrace", 0, store.span_ns)
    pf = load_trace(tmp_path / "m.pftrace", cache=False)
    export_range(pf, tmp_path / "back.json", 0, pf.span_ns)
    back = load_trace(tmp_path / "back.json", cache=False)
    assert _slice_set(back) == _slice_set(store)
    assert _flow_set(back) == _flow_set(store) and len(store.flows) > 0


def test_a_folder_of_pftrace_ranks_exports_json_files_named_json(tmp_path):
    store = load_trace(FIXTURES / "ranks", cache=False)
    export_pftrace(store, tmp_path / "pf", 0, store.span_ns)
    pf = load_trace(tmp_path / "pf", cache=False)
    export_range(pf, tmp_path / "js", 0, pf.span_ns)
    assert sorted(p.name for p in (tmp_path / "js").iterdir()) == ["hta__sampled_rank-0.json", "hta__sampled_rank-1.json"]
    assert len(load_trace(tmp_path / "js", cache=False).slices) == len(store.slices)


def test_async_slices_samples_and_objects_round_trip(tmp_path):
    events = [{"ph": "b", "name": "request", "cat": "serve", "id": "0x1a", "pid": 1, "tid": 1, "ts": 10},
              {"ph": "n", "name": "token", "cat": "serve", "id": "0x1a", "pid": 1, "tid": 1, "ts": 12},
              {"ph": "e", "name": "request", "cat": "serve", "id": "0x1a", "pid": 1, "tid": 2, "ts": 30},
              {"ph": "b", "name": "request", "cat": "serve", "id2": {"global": 7}, "pid": 1, "tid": 1, "ts": 15},
              {"ph": "e", "name": "request", "cat": "serve", "id2": {"global": 7}, "pid": 2, "tid": 5, "ts": 25},
              {"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": 11, "dur": 3},
              {"ph": "P", "name": "sample", "pid": 1, "tid": 1, "ts": 13},
              {"ph": "N", "name": "obj", "id": "0x5", "pid": 1, "tid": 1, "ts": 14},
              {"ph": "D", "name": "obj", "id": "0x5", "pid": 1, "tid": 1, "ts": 20}]
    src = tmp_path / "async.json"
    src.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(src, cache=False)
    plan = export_pftrace(store, tmp_path / "async.pftrace", 0, store.span_ns)
    back = load_trace(tmp_path / "async.pftrace", cache=False)
    assert "not_written" not in plan.counts
    assert _slice_set(back) == _slice_set(store)
    assert len([s for s in _slice_set(store) if s[0] == "request"]) == 2
    assert len(back.instants) == len(store.instants)
    kinds = sorted(back.tracks[t].kind for t in range(len(back.tracks)))
    assert kinds == sorted(store.tracks[t].kind for t in range(len(store.tracks)))
