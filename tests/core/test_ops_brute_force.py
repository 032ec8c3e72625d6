"""CPU operators, annotations and sync points over a range on generated traces, against a
brute-force pass over the events written to the file (range rule, clipping, nesting, self time)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from vtui.analysis.slices.operators import analyse_ops, hint_for
from vtui.store.slicetime import time_range

OPS = ["aten::mm", "aten::bmm", "aten::copy_", "aten::layer_norm", "aten::relu", "aten::add"]
SYNCS = [("cuda_runtime", "cudaStreamSynchronize"), ("cuda_runtime", "cudaDeviceSynchronize"),
         ("cuda_runtime", "cudaLaunchKernel"), ("mtia_runtime", "synchronizeStream")]


def test_hints_for_known_heavy_hitters():
    assert hint_for("aten::addmm")[0] == hint_for("aten::linear")[0] == "matmul"
    assert hint_for("aten::scaled_dot_product_attention")[0] == hint_for("aten::_softmax")[0] == "attention"
    assert hint_for("aten::contiguous")[0] == "layout copy"
    assert hint_for("aten::rms_norm")[0] == hint_for("LayerNorm")[0] == "norm"
    assert hint_for("aten::mm_out") is None and hint_for("aten::relu") is None


def _trace(tmp_path: Path, seed: int) -> tuple[Path, list[dict]]:
    rng = np.random.default_rng(seed)
    events: list[dict] = []

    def add(tid: int, a: int, b: int, depth: int) -> None:
        r = rng.random()
        if depth == 0 and r < 0.2:
            name, cat = (f"ProfilerStep#{len(events)}", "user_annotation") if rng.random() < 0.5 else ("fwd", "user_annotation")
        elif r < 0.3:
            name, cat = "model.py(7): forward", "python_function"
        elif r < 0.45:  # sync calls at the top level too ("(top level)" caller)
            cat, name = SYNCS[int(rng.integers(0, len(SYNCS)))]
        else:
            name, cat = str(rng.choice(OPS)), "cpu_op"
        events.append({"ph": "X", "name": name, "cat": cat, "ts": a, "dur": b - a, "pid": 1, "tid": tid})

    def fill(tid: int, lo: int, hi: int, depth: int) -> None:
        t = lo
        while t < hi and depth < 3:
            if rng.random() < 0.1:
                add(tid, t, t, depth)
            a = t + int(rng.integers(0, 20))
            b = min(hi, a + int(rng.integers(1, 200)))
            if a >= b:
                break
            add(tid, a, b, depth)
            fill(tid, a, b, depth + 1)
            t = b + int(rng.integers(0, 20))

    for tid in (1, 2):
        fill(tid, 0, 1500, 0)
    events.append({"ph": "X", "name": "model.py(1): main", "cat": "python_function", "ts": 0, "dur": 1500,
                   "pid": 1, "tid": 3})  # a thread without operators
    events.append({"ph": "X", "name": "PyTorch Profiler (0)", "cat": "trace", "ts": 0, "dur": 1500, "pid": 1, "tid": 4})
    events = [events[i] for i in rng.permutation(len(events))]
    path = tmp_path / f"o{seed}.json"
    path.write_text(json.dumps({"traceEvents": events}))
    for i, e in enumerate(events):
        e["_s"], e["_e"], e["_i"] = e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000, i
    return path, events


def _expected(events: list[dict], t0: int, t1: int) -> dict:
    parent: dict[int, dict | None] = {}
    by_tid = defaultdict(list)
    for e in events:
        by_tid[e["tid"]].append(e)
    for items in by_tid.values():
        items.sort(key=lambda e: (e["_s"], e["_s"] - e["_e"], e["_i"]))
        for k, e in enumerate(items):
            parent[e["_i"]] = next((q for q in reversed(items[:k]) if q["_e"] >= e["_e"]), None)
    sel = {e["_i"]: e for e in events if ((e["_s"] < t1 and e["_e"] > t0) if e["_e"] > e["_s"] else t0 <= e["_s"] <= t1)}
    cut = {i: (max(e["_s"], t0), max(min(e["_e"], t1), max(e["_s"], t0))) for i, e in sel.items()}
    kids = defaultdict(list)
    for i in sel:
        p = parent[i]
        if p is not None and p["_i"] in sel:
            lo, hi = cut[p["_i"]]
            kids[p["_i"]].append((max(cut[i][0], lo), min(cut[i][1], hi)))
    self_of = {}
    for i, (a, b) in cut.items():
        union, reach = 0, None
        for x, y in sorted(kids[i]):
            if y <= x:
                continue
            if reach is None or x >= reach:
                union, reach = union + y - x, y
            elif y > reach:
                union, reach = union + y - reach, y
        self_of[i] = b - a - union
    is_note = lambda e: e["cat"] in ("user_annotation", "trace")  # noqa: E731
    is_op = lambda e: e["cat"] not in ("python_function",) and not is_note(e)  # noqa: E731
    ops, notes = defaultdict(lambda: [0, 0, 0]), defaultdict(lambda: [0, 0, 0])
    for i, e in sel.items():
        for table, keep in ((ops, is_op(e)), (notes, is_note(e))):
            if keep:
                acc = table[e["name"]]
                acc[0], acc[1], acc[2] = acc[0] + self_of[i], acc[1] + cut[i][1] - cut[i][0], acc[2] + 1
    threads = len({e["tid"] for e in sel.values() if is_op(e)})
    def is_sync(e) -> bool:
        return e["name"] in ("cudaStreamSynchronize", "cudaDeviceSynchronize") or (
            e["cat"] == "mtia_runtime" and "ynchroni" in e["name"])

    def inside_a_sync(i) -> bool:  # a sync call inside another is the same wait: counted once
        p = parent[i]
        while p is not None:
            if is_sync(p):
                return True
            p = parent[p["_i"]]
        return False

    syncs = [i for i, e in sel.items() if is_sync(e) and not inside_a_sync(i)]
    sync_names, callers = defaultdict(lambda: [0, 0]), defaultdict(int)
    for i in syncs:
        sync_names[sel[i]["name"]][0] += 1
        sync_names[sel[i]["name"]][1] += cut[i][1] - cut[i][0]
        callers[parent[i]["name"] if parent[i] is not None else "(top level)"] += 1
    return {"ops": dict(ops), "notes": dict(notes), "threads": threads, "syncs": len(syncs),
            "sync_ns": sum(cut[i][1] - cut[i][0] for i in syncs), "sync_names": dict(sync_names),
            "callers": dict(callers)}


@pytest.mark.parametrize("seed", [1, 2])
def test_operators_annotations_and_syncs_equal_the_brute_force(tmp_path: Path, seed: int):
    from vtui.load.trace import load_trace

    path, events = _trace(tmp_path, seed)
    store = load_trace(path, cache=False)
    span = int(store.span_ns)
    rng = np.random.default_rng(seed)
    edges = sorted({e["_s"] for e in events} | {e["_e"] for e in events})
    ranges = [(0, span), (span // 2, span // 2), (span + 5, span + 9)]
    ranges += [tuple(sorted(int(x) for x in rng.choice(edges, 2))) for _ in range(5)]
    for a, b in ranges:
        t0, t1 = min(a, span), min(b, span)  # the range value is clamped into the trace
        want = _expected(events, t0, t1)
        rep = analyse_ops(store, time_range(store, a, b if (a, b) != (0, span) else None), top=1000)
        denom = max(t1 - t0, 1) * max(want["threads"], 1)
        assert (rep.range_ns, rep.threads, rep.denominator_ns) == (t1 - t0, want["threads"], denom), (t0, t1)
        got = {r.name: [r.self_ns, r.total_ns, r.count] for r in rep.by_self}
        assert got == want["ops"], (t0, t1)
        assert {r.name: [r.self_ns, r.total_ns, r.count] for r in rep.by_total} == want["ops"]
        assert rep.cpu_self_ns == sum(v[0] for v in want["ops"].values())
        assert [r.self_ns for r in rep.by_self] == sorted((v[0] for v in want["ops"].values()), reverse=True)
        assert [r.total_ns for r in rep.by_total] == sorted((v[1] for v in want["ops"].values()), reverse=True)
        for r in rep.by_self + rep.annotations:
            assert r.pct == pytest.approx(100.0 * r.self_ns / denom) and r.total_pct == pytest.approx(
                100.0 * r.total_ns / denom)
        assert {r.name: [r.self_ns, r.total_ns, r.count] for r in rep.annotations} == want["notes"], (t0, t1)
        assert [r.total_ns for r in rep.annotations] == sorted((v[1] for v in want["notes"].values()), reverse=True)
        sync = rep.sync
        assert (sync.count, sync.total_ns) == (want["syncs"], want["sync_ns"]), (t0, t1)
        assert {n: [c, ns] for n, c, ns in sync.by_name} == want["sync_names"]
        assert [ns for _, _, ns in sync.by_name] == sorted((v[1] for v in want["sync_names"].values()), reverse=True)
        counts = sorted(want["callers"].values(), reverse=True)[:5]
        assert [c for _, c in sync.callers] == counts
        assert all(want["callers"][k] == c for k, c in sync.callers)
        top = analyse_ops(store, time_range(store, t0, t1), top=2)
        assert [r.self_ns for r in top.by_self] == [r.self_ns for r in rep.by_self][:2]
        assert [r.total_ns for r in top.by_total] == [r.total_ns for r in rep.by_total][:2]
        assert [r.total_ns for r in top.annotations] == [r.total_ns for r in rep.annotations][:2]
