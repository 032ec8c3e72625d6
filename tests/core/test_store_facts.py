"""Store facts checked against an independent computation (stdlib json over the file)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import FIXTURES, QWEN, STACK, UNCLOSED, norm, raw_events, raw_origin
from vtui.load.trace import load_trace

KINETO = FIXTURES / "kineto__before_fix_trace.json"


def _track_counts(store) -> dict:
    return {(t.pid, t.tid): t.slice_count for t in store.tracks if t.kind in ("thread", "gpu")}


@pytest.mark.parametrize("path", [QWEN, STACK, FIXTURES / "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz"], ids=lambda p: p.name)
def test_per_track_slice_counts_match_raw_x_events(path: Path):
    expected = Counter((norm(e.get("pid")), norm(e.get("tid"))) for e in raw_events(path) if e.get("ph") == "X")
    assert _track_counts(load_trace(path)) == dict(expected)


def _independent_depths(events: list[dict]) -> dict:
    """Max nesting depth per thread by a plain stack over X events (integer ns)."""
    origin = raw_origin(events)
    per_thread = defaultdict(list)
    for i, e in enumerate(events):
        if e.get("ph") == "X":
            ts = (round(e["ts"] * 1000) - round(origin * 1000))
            per_thread[(norm(e["pid"]), norm(e["tid"]))].append((ts, -round(e.get("dur", 0) * 1000), i))
    out = {}
    for key, items in per_thread.items():
        items.sort()
        stack: list[float] = []
        best = 0
        for ts, neg_dur, _ in items:
            end = ts - neg_dur
            while stack and stack[-1] <= ts:
                stack.pop()
            if stack and end > stack[-1]:
                continue  # partial overlap: not a nesting level
            stack.append(end)
            best = max(best, len(stack))
        out[key] = best
    return out


def test_nesting_depth_matches_independent_stack():
    store = load_trace(QWEN)
    expected = _independent_depths(raw_events(QWEN))
    got = {(t.pid, t.tid): t.nested_lanes for t in store.tracks if t.kind in ("thread", "gpu")}
    assert got == expected
    # Children lie within their parents.
    s = store.slices
    kids = np.flatnonzero(s.parent >= 0)
    assert (s.start_ns[kids] >= s.start_ns[s.parent[kids]]).all()
    assert (s.end_ns[kids] <= s.end_ns[s.parent[kids]]).all()
    assert (s.depth[kids] == s.depth[s.parent[kids]] + 1).all()


def test_steploop_depth_is_eight_levels():
    from tests.helpers import STEPLOOP

    store = load_trace(STEPLOOP)
    assert max(t.nested_lanes for t in store.tracks) == 8  # MANIFEST: max X nesting depth 8
    assert store.overlapping_slices == 0


def test_b_e_pairing_and_unclosed_b():
    events = raw_events(UNCLOSED)
    # Independent pairing: per thread, in time order, a stack.
    per_thread = defaultdict(list)
    for i, e in enumerate(events):
        if e.get("ph") in ("B", "E"):
            per_thread[(norm(e["pid"]), norm(e["tid"]))].append((e["ts"], i, e))
    durations = []
    unclosed = 0
    # the latest end of any event, on the absolute ns grid (each ts and dur rounded to the ns)
    end_of_trace = max(round(e["ts"] * 1000) + round(e.get("dur", 0) * 1000)
                       for e in events if "ts" in e and e.get("ph") != "M")
    for items in per_thread.values():
        items.sort(key=lambda x: (x[0], x[1]))
        stack = []
        for ts, _, e in items:
            if e["ph"] == "B":
                stack.append(ts)
            elif stack:
                durations.append(round((ts - stack.pop()) * 1000))
        unclosed += len(stack)
        durations += [end_of_trace - round(b * 1000) for b in stack]
    store = load_trace(UNCLOSED)
    assert unclosed == 4
    assert len(store.slices) == sum(1 for e in events if e.get("ph") == "B") == 1684
    assert sorted(store.slices.dur_ns.tolist()) == sorted(durations)
    assert any("4 B events were never closed" in w for w in store.warnings)


def test_ac2g_flows_bind_launch_to_kernel():
    events = raw_events(QWEN)
    starts = {e["id"] for e in events if e.get("ph") == "s" and e.get("cat") == "ac2g"}
    ends = {e["id"] for e in events if e.get("ph") == "f" and e.get("cat") == "ac2g"}
    store = load_trace(QWEN)
    flows = store.flows
    assert len(flows) == len(starts & ends) == 1198
    bound = np.flatnonzero((flows.src_slice >= 0) & (flows.dst_slice >= 0))
    assert len(bound) == len(flows)
    for k in bound[:200].tolist():
        src = store.slice_args(int(flows.src_slice[k]))
        dst = store.slice_args(int(flows.dst_slice[k]))
        assert src["correlation"] == dst["correlation"]
        assert store.tracks[int(flows.dst_track[k])].kind == "gpu"
        assert store.strings[store.slices.cat_id[flows.src_slice[k]]] in ("cuda_runtime", "cuda_driver")


def _complete_events(text: str, start: int) -> int:
    """Count array elements that decode completely, walking from just after '['."""
    dec = json.JSONDecoder()
    i, n = start, 0
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            return n
        try:
            _, i = dec.raw_decode(text, i)
        except ValueError:
            return n
        n += 1


@pytest.mark.parametrize("path", [KINETO, UNCLOSED], ids=["object-form", "array-form"])
def test_truncated_file_keeps_every_complete_event(tmp_path: Path, path: Path):
    text = path.read_text()
    array_at = text.index("[", text.index("traceEvents")) if text.lstrip().startswith("{") else text.index("[")
    total = _complete_events(text, array_at + 1)
    rng = np.random.default_rng(7)
    cuts = sorted(set(rng.integers(array_at + 2, len(text) - 3, size=25).tolist()))
    for cut in cuts:
        for tail in ("", ",", ",\n"):
            piece = text[:cut].rstrip() + tail if tail else text[:cut]
            target = tmp_path / "cut.json"
            target.write_text(piece)
            expected = _complete_events(piece, array_at + 1)
            if expected == 0:
                continue
            store = load_trace(target)
            assert store.event_count == expected, (cut, tail)
            assert store.repaired
            assert expected <= total


def test_truncated_gzip_keeps_a_prefix(tmp_path: Path):
    import gzip

    raw = gzip.decompress(QWEN.read_bytes())
    packed = gzip.compress(raw)
    target = tmp_path / "cut.json.gz"
    target.write_bytes(packed[: len(packed) // 2])
    store = load_trace(target)
    assert 0 < store.event_count < 18221
    assert store.repaired
    assert any("gzip" in w for w in store.warnings)


def test_folder_of_ranks_opens_as_one_trace():
    folder = FIXTURES / "ranks"
    store = load_trace(folder)
    assert [s.label for s in store.sources] == ["rank 0", "rank 1"]
    assert store.event_count == 4855 + 4720
    assert len(store.slices) == 4811 + 4676
    groups = {t.group for t in store.tracks}
    assert groups == {"rank 0", "rank 1"}
    # Both ranks use absolute epoch µs, so they share one time axis (start 0.5 ms apart).
    r0 = store.slices.start_ns[store.slices.source == 0].min()
    r1 = store.slices.start_ns[store.slices.source == 1].min()
    assert abs(int(r1) - int(r0)) < 1_000_000


def test_times_are_int64_ns_relative_to_smallest_ts():
    events = raw_events(QWEN)
    origin = raw_origin(events)
    store = load_trace(QWEN)
    assert store.origin_us == origin
    assert store.slices.start_ns.dtype == np.int64
    assert store.slices.start_ns.min() >= 0
    xs = [e for e in events if e.get("ph") == "X"]
    expected = sorted((round(e["ts"] * 1000) - round(origin * 1000)) for e in xs)
    assert sorted(store.slices.start_ns.tolist()) == expected
    ends = sorted((round(e["ts"] * 1000) - round(origin * 1000)) + round(e["dur"] * 1000) for e in xs)
    assert sorted(store.slices.end_ns.tolist()) == ends


def test_args_are_decoded_lazily_and_intact():
    events = [e for e in raw_events(QWEN) if e.get("ph") == "X"]
    store = load_trace(QWEN)
    by_ordinal = {int(o): r for r, o in enumerate(store.slices.ordinal.tolist())}
    all_events = raw_events(QWEN)
    for ordinal, e in list(enumerate(all_events))[:3000]:
        if e.get("ph") == "X":
            assert store.slice_args(by_ordinal[ordinal]) == e.get("args", {})
    assert len(events) == len(store.slices)


def test_flow_v2_bind_id_links_slices():
    path = FIXTURES / "catapult__webview.json.gz"
    events = raw_events(path)
    outs = {e["bind_id"] for e in events if e.get("flow_out")}
    ins = {e["bind_id"] for e in events if e.get("flow_in")}
    store = load_trace(path)
    assert len(outs & ins) > 0
    # Catapult's rule in plain Python: per id in time order, a flow_out slice starts a flow and each
    # later flow_in slice ends one (an edge each) until the next flow_out takes over.
    bound = sorted((e for e in enumerate(events) if "bind_id" in e[1]), key=lambda o: (o[1]["bind_id"], o[1]["ts"], o[0]))
    edges, current, current_id = [], None, None
    for order, e in bound:
        if e["bind_id"] != current_id:
            current_id, current = e["bind_id"], None
        if e.get("flow_in") and current is not None and current[0] != order:
            edges.append((current[1]["name"], e["name"], round(e["ts"], 3)))
        if e.get("flow_out"):
            current = (order, e)
    f = store.flows
    origin = store.origin_us
    got = [(store.name(int(a)), store.name(int(b)), round(origin + int(store.slices.start_ns[b]) / 1000, 3))
           for a, b in zip(f.src_slice.tolist(), f.dst_slice.tolist())]
    assert len(store.flows) == len(edges) == 624 and sorted(got) == sorted(edges)


def _rank(folder: Path, rank: int, base, ts: float) -> None:
    doc = {"distributedInfo": {"rank": rank}, "traceEvents": [
        {"ph": "X", "name": f"step r{rank}", "ts": ts, "dur": 10.0, "pid": 1, "tid": 1},
        {"ph": "i", "s": "t", "name": f"mark r{rank}", "ts": ts + 1, "pid": 1, "tid": 1}]}
    if base is not None:
        doc["baseTimeNanoseconds"] = base
    (folder / f"rank{rank}.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("bases, shift_ns", [
    ((1_700_000_000_000_000_000, 1_700_000_000_005_000_000), 5_000_000),  # rank 1's clock started 5 ms later
    ((1_700_000_000_005_000_000, 1_700_000_000_000_000_000), -5_000_000),
    ((1_700_000_000_000_000_000, None), 0),  # a rank without a base: nothing to line up by
    ((1_700_000_000_000_000_000, 1.700000000005e18), 0),  # not an integer count of ns: not trusted
])
def test_ranks_written_against_different_base_times_line_up(tmp_path, bases, shift_ns):
    """Kineto writes ts relative to each rank's baseTimeNanoseconds: the same ts on two ranks is
    base₁ − base₀ apart in real time, and the merged store shows it so."""
    for rank, base in enumerate(bases):
        _rank(tmp_path, rank, base, ts=100.0)
    store = load_trace(tmp_path, cache=False)
    start = {store.name(r): int(store.slices.start_ns[r]) for r in range(len(store.slices))}
    assert start["step r1"] - start["step r0"] == shift_ns
    inst = store.instants
    at = {store.strings[int(inst.name_id[k])]: int(inst.ts_ns[k]) for k in range(len(inst))}
    assert at["mark r1"] - at["mark r0"] == shift_ns
    assert at["mark r0"] - start["step r0"] == 1000  # each rank's own events keep their spacing
