"""The GPU section on generated Kineto-style traces (two devices, two streams each, kernels,
copies and fills, launches by correlation id or by flow, some unknown), every figure against a
brute-force pass over the events written to the file."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import union_length
from vtui.analysis.gpu.activity import analyse_gpu, precision_of
from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range

# Kernel names with their precision class, labelled by hand.
KERNELS = {
    "ncclKernel_AllReduce_RING_LL_Sum_bfloat16": "communication",
    "sm90_xmma_gemm_e4m3e4m3_f32": "fp8",
    "cutlass_int8_gemm_128x128": "int8",
    "ampere_tf32_s1688gemm_tf32_128x128_nn": "tf32",
    "ampere_bf16_s16816gemm_bf16_64x64_nn": "fp16/bf16",
    "volta_h884gemm_128x128_nn": "fp16/bf16",
    "volta_dgemm_64x64_nn": "fp64",
    "volta_sgemm_128x64_nn": "fp32",
    "elementwise_kernel": "unspecified",
}
COPIES = ["Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)", "Memcpy DtoD (Device -> Device)",
          "Memcpy PtoP (Device -> Device)", "memcpy_async_op"]
DIRECTION = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA)\b")


def test_precision_classes_of_known_kernel_names():
    for name, label in KERNELS.items():
        assert precision_of(name) == label, name


def _trace(tmp_path: Path, seed: int) -> tuple[Path, list[dict]]:
    """Returns the file and the GPU ops as dicts: dev, stream, kind, name, s, e (ns), bytes, and the
    launch call's (start, end) in ns or None."""
    rng = np.random.default_rng(seed)
    events: list[dict] = [{"ph": "M", "name": "process_name", "pid": d, "args": {"name": f"GPU {d}"}} for d in (0, 1)]
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::forward", "ts": 0, "dur": 1, "pid": 100, "tid": 1})
    ops: list[dict] = []
    used: set[int] = set()
    free: dict[tuple[int, int], int] = {}
    t = 2
    for corr in range(1, 70):
        call_dur = int(rng.integers(1, 6))
        dev, stream = int(rng.integers(0, 2)), int(rng.choice([7, 8]))
        # Ops of one stream run one after another (as CUDA's do); streams overlap each other.
        gpu_ts = max(t + call_dur + int(rng.integers(-3, 80)), free.get((dev, stream), 0))
        while gpu_ts in used:  # one op per start time: which op a gap ends at is then unambiguous
            gpu_ts += 1
        used.add(gpu_ts)
        kind = str(rng.choice(["kernel", "kernel", "kernel", "gpu_memcpy", "gpu_memset"]))
        name = (str(rng.choice(list(KERNELS))) if kind == "kernel" else str(rng.choice(COPIES)) if kind == "gpu_memcpy"
                else "Memset (Device)")
        dur = 0 if rng.random() < 0.1 else int(rng.integers(1, 60))
        free[(dev, stream)] = gpu_ts + dur + 1
        how = str(rng.choice(["corr", "corr", "flow", "none"]))
        args: dict = {"correlation": corr} if how == "corr" else {}
        nbytes = None
        if kind == "gpu_memcpy" and rng.random() < 0.7:
            nbytes = 0 if rng.random() < 0.2 else int(rng.integers(1, 10_000))
            args["bytes"] = nbytes
        if how != "none":
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t, "dur": call_dur,
                           "pid": 100, "tid": 1, "args": {"correlation": corr} if how == "corr" else {}})
        if how == "flow":
            events += [{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "ts": t, "pid": 100, "tid": 1},
                       {"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": corr, "ts": gpu_ts, "pid": dev,
                        "tid": stream}]
        events.append({"ph": "X", "cat": kind, "name": name, "ts": gpu_ts, "dur": dur, "pid": dev, "tid": stream,
                       "args": args})
        ops.append({"dev": dev, "stream": stream, "kind": kind, "name": name, "s": gpu_ts * 1000,
                    "e": (gpu_ts + dur) * 1000, "bytes": nbytes,
                    "launch": None if how == "none" else (t * 1000, (t + call_dur) * 1000)})
        t += call_dur + int(rng.integers(1, 12))
    # Flows that are not launches: op to op on the GPU, and host to host (forward to backward).
    # They must not pair anything; the ops keep their launch (or its absence).
    for a, b in zip(ops[::7], ops[3::7]):
        events += [{"ph": "s", "cat": "gpu_dep", "name": "dep", "id": 9000 + a["s"], "ts": a["s"] // 1000,
                    "pid": a["dev"], "tid": a["stream"]},
                   {"ph": "f", "bp": "e", "cat": "gpu_dep", "name": "dep", "id": 9000 + a["s"], "ts": b["s"] // 1000,
                    "pid": b["dev"], "tid": b["stream"]}]
    events += [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1, "pid": 100, "tid": 2},
               {"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": 777_777, "ts": 0, "pid": 100, "tid": 1},
               {"ph": "f", "bp": "e", "cat": "fwdbwd", "name": "fwdbwd", "id": 777_777, "ts": 0, "pid": 100, "tid": 2}]
    path = tmp_path / f"g{seed}.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path, ops


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _pct(a: float, b: float) -> float:
    return 100.0 * a / b if b > 0 else 0.0


def _expected(ops: list[dict], t0: int, t1: int) -> dict:
    sel = [dict(o, cs=max(o["s"], t0), ce=max(min(o["e"], t1), max(o["s"], t0))) for o in ops
           if ((o["s"] < t1 and o["e"] > t0) if o["e"] > o["s"] else t0 <= o["s"] <= t1)]
    out: dict = {"ops": len(sel)}
    by_kind = defaultdict(int)
    for o in sel:
        by_kind[o["kind"]] += o["ce"] - o["cs"]
    work = sum(by_kind.values())
    out["kernel_ns"], out["memcpy_ns"], out["memset_ns"] = by_kind["kernel"], by_kind["gpu_memcpy"], by_kind["gpu_memset"]
    out["memcpy_pct"], out["memset_pct"] = _pct(by_kind["gpu_memcpy"], work), _pct(by_kind["gpu_memset"], work)
    direction, nbytes = defaultdict(int), defaultdict(int)
    for o in sel:
        if o["kind"] == "gpu_memcpy":
            m = DIRECTION.search(o["name"])
            key = m.group(1) if m else "other"
            direction[key] += o["ce"] - o["cs"]
            if o["bytes"] is not None:
                nbytes[key] += o["bytes"]
    out["direction"], out["bytes"] = dict(direction), dict(nbytes)
    if not sel:
        return out
    iv = [(o["cs"], o["ce"]) for o in sel]
    out["busy_ns"] = union_length(iv)
    out["any_busy_pct"] = _pct(out["busy_ns"], t1 - t0)
    out["active_ns"] = max(b for _, b in iv) - min(a for a, _ in iv)
    out["kernel_busy_pct"] = _pct(union_length([(o["cs"], o["ce"]) for o in sel if o["kind"] == "kernel"]), t1 - t0)

    def busy(group: list[dict]) -> tuple:
        b = union_length([(o["cs"], o["ce"]) for o in group])
        active = max(o["ce"] for o in group) - min(o["cs"] for o in group)
        kernel = sum(o["ce"] - o["cs"] for o in group if o["kind"] == "kernel")
        return b, _pct(b, t1 - t0), kernel, active, _pct(b, active)

    streams, devices = defaultdict(list), defaultdict(list)
    for o in sel:
        streams[(o["dev"], o["stream"])].append(o)
        devices[o["dev"]].append(o)
    out["streams"] = {k: busy(v) for k, v in streams.items()}
    out["devices"] = {k: busy(v) for k, v in devices.items()}
    out["busy_pct"] = float(np.mean([v[1] for v in out["devices"].values()]))
    out["busy_pct_of_active"] = float(np.mean([v[4] for v in out["devices"].values()]))
    idle = defaultdict(int)
    for group in devices.values():
        merged = _union([(o["cs"], o["ce"]) for o in group])
        idle["edges"] += merged[0][0] - t0 + t1 - merged[-1][1]
        for (_, gap_start), (nxt, _) in zip(merged, merged[1:]):
            first = min((o for o in group if o["cs"] == nxt), key=lambda o: o["s"])
            # Up to the launch call's start the GPU waited for the CPU; after it, the work was queued
            # (no stream waits here); a call after its work started is a clock offset.
            if first["launch"] is None:
                idle["unknown"] += nxt - gap_start
            elif first["launch"][0] > nxt:
                idle["offset"] += nxt - gap_start
            else:
                cpu = min(max(first["launch"][0] - gap_start, 0), nxt - gap_start)
                idle["cpu"] += cpu
                idle["queued"] += nxt - gap_start - cpu
    out["idle"] = dict(idle)
    paired = [o for o in sel if o["launch"] is not None]
    out["paired"] = len(paired)
    out["delays"] = sorted(o["s"] - o["launch"][0] for o in paired)
    out["after_return"] = sorted(o["s"] - o["launch"][1] for o in paired)
    if paired:
        out["worst"] = max(paired, key=lambda o: o["s"] - o["launch"][0])["name"]
    per_name, per_class = defaultdict(lambda: [0, 0]), defaultdict(lambda: [0, 0])
    for o in sel:
        if o["kind"] == "kernel":
            for acc in (per_name[o["name"]], per_class[KERNELS[o["name"]]]):
                acc[0] += o["ce"] - o["cs"]
                acc[1] += 1
    out["per_name"], out["per_class"] = dict(per_name), dict(per_class)
    return out


def _ranges(ops: list[dict], span: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    edges = sorted({o["s"] for o in ops} | {o["e"] for o in ops})
    out = [(0, span), (0, 1)]
    for _ in range(6):
        a, b = sorted(int(x) for x in rng.choice(edges, 2))
        out.append((a, b if b > a else a + 1))
        out.append((a + 1, b + 7))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_every_gpu_figure_equals_the_brute_force(tmp_path: Path, seed: int):
    path, ops = _trace(tmp_path, seed)
    store = load_trace(path, cache=False)
    span = int(store.span_ns)
    label_of = {}  # the device and stream labels are the store's; which ops share them is the file's
    for tr in store.tracks:
        if tr.pid in (0, 1):
            label_of[tr.pid] = tr.process_title
            label_of[(tr.pid, tr.tid)] = tr.label
    rng = np.random.default_rng(seed)
    for t0, t1 in _ranges(ops, span, rng):
        want = _expected(ops, t0, t1)
        g = analyse_gpu(store, time_range(store, t0, t1 if (t0, t1) != (0, span) else None), top=4)
        where = (seed, t0, t1)
        assert g.present and g.range_ns == t1 - t0 and g.gpu_ops_in_range == want["ops"], where
        if not want["ops"]:
            assert (g.busy_ns, g.devices, g.launch) == (0, [], None)
            continue
        assert (g.kernel_ns, g.memcpy_ns, g.memset_ns) == (want["kernel_ns"], want["memcpy_ns"], want["memset_ns"]), where
        assert g.memcpy_pct == pytest.approx(want["memcpy_pct"]) and g.memset_pct == pytest.approx(want["memset_pct"])
        assert g.memcpy_by_direction == want["direction"] and g.memcpy_bytes_by_direction == want["bytes"], where
        assert (g.busy_ns, g.active_ns) == (want["busy_ns"], want["active_ns"]), where
        assert g.any_busy_pct == pytest.approx(want["any_busy_pct"])
        assert g.kernel_busy_pct == pytest.approx(want["kernel_busy_pct"])
        assert g.busy_pct == pytest.approx(want["busy_pct"]) and g.busy_pct_of_active == pytest.approx(
            want["busy_pct_of_active"]), where
        for got, expected in ((g.streams, want["streams"]), (g.devices, want["devices"])):
            assert sorted((b.label, b.busy_ns, b.kernel_ns, b.active_ns) for b in got) == sorted(
                (label_of[k], v[0], v[2], v[3]) for k, v in expected.items()), where
            by_label = {label_of[k]: v for k, v in expected.items()}
            for b in got:
                assert b.busy_pct == pytest.approx(by_label[b.label][1])
                assert b.busy_pct_of_active == pytest.approx(by_label[b.label][4])
        idle = want["idle"]
        assert (g.idle_cpu_launch_ns, g.idle_queued_ns, g.idle_dependency_ns, g.idle_clock_offset_ns, g.idle_unknown_ns,
                g.idle_edges_ns) == (idle.get("cpu", 0), idle.get("queued", 0), 0, idle.get("offset", 0),
                                     idle.get("unknown", 0), idle.get("edges", 0)), where
        assert g.launches_paired == want["paired"], where
        if want["paired"]:
            d, r = np.array(want["delays"], dtype=float), np.array(want["after_return"], dtype=float)
            for stats, v in ((g.launch, d), (g.launch_after_return, r)):
                assert (stats.count, stats.total, stats.min, stats.max) == (len(v), v.sum(), v.min(), v.max()), where
                assert (stats.mean, stats.median, stats.p90) == pytest.approx((v.mean(), np.median(v),
                                                                               np.percentile(v, 90)))
            assert g.worst_launch_kernel == want["worst"]
        else:
            assert g.launch is None and g.launch_after_return is None and g.worst_launch_kernel == ""
        kernel_total = want["kernel_ns"]
        assert sorted((p.name, p.total_ns, p.count) for p in g.precision) == sorted(
            (k, v[0], v[1]) for k, v in want["per_class"].items()), where
        assert [p.total_ns for p in g.precision] == sorted((v[0] for v in want["per_class"].values()), reverse=True)
        for p in g.precision + g.top_kernels:
            assert p.pct == pytest.approx(_pct(p.total_ns, kernel_total))
        tops = sorted(want["per_name"].items(), key=lambda kv: -kv[1][0])
        assert [p.total_ns for p in g.top_kernels] == [v[0] for _, v in tops][:4], where
        assert all(want["per_name"][p.name] == [p.total_ns, p.count] for p in g.top_kernels)


def test_a_trace_without_device_work_has_no_gpu_section(tmp_path: Path):
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": 0, "dur": 5, "pid": 1, "tid": 1}]}))
    store = load_trace(path, cache=False)
    g = analyse_gpu(store, time_range(store, 1000, 4000))
    assert (g.present, g.range_ns, g.gpu_ops_in_range) == (False, 3000, 0)
