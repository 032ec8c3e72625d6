"""One range rule everywhere: zero-length slices are slices, and stats, insights, diff and the
Parquet tables count and time the same slices for the same range (checked against plain Python
over the raw JSON)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.helpers import DEVICE_CATS, FIXTURES, SHARED_TRACES, cli_json, raw_events, raw_origin
from vtui.analysis.report.insights import compute_insights
from vtui.analysis.slices.aggregate import aggregate
from vtui.load.trace import load_trace
from vtui.store.slicetime import range_slices, time_range

# A 2021 PyTorch 1.9 Kineto trace: 636 zero-length FillFunctor kernels. Its first step is in fixtures/.
KINETO_2021 = SHARED_TRACES / "public" / "kineto__worker0.1623143089861.pt.trace.json.gz"
KINETO_2021_STEP = FIXTURES / "kineto__worker0_first_step.json.gz"


def _kineto_2021() -> Path:
    return KINETO_2021 if KINETO_2021.exists() else KINETO_2021_STEP


# The whole trace where ../shared is present; its first step (fixtures/) always.
KINETO_PATHS = [p for p in (KINETO_2021, KINETO_2021_STEP) if p.exists()]


def _raw_in_range(events: list[dict], t0: int, t1: int) -> list[tuple[dict, int, int]]:
    """(event, start ns, end ns) of the X events the README's rule puts in [t0, t1]."""
    origin = raw_origin(events)
    out = []
    for e in events:
        if e.get("ph") != "X":
            continue
        a = (round(e["ts"] * 1000) - round(origin * 1000))
        b = round(e["ts"] * 1000) - round(origin * 1000) + round(e.get("dur", 0) * 1000)
        inside = (a < t1 and b > t0) if b > a else (t0 <= a <= t1)
        if inside:
            out.append((e, a, b))
    return out


# ---- a minimal trace: zero-length kernels and a zero-length operator ------------------------------
def _zero_length_trace(tmp_path: Path) -> Path:
    events = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}}]
    for i, (ts, dur) in enumerate([(10.0, 10.0), (40.0, 0.0), (60.0, 0.0)]):
        corr = i + 1
        events += [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts - 5, "dur": 2.0, "pid": 1, "tid": 1,
             "args": {"correlation": corr}},
            {"ph": "X", "cat": "kernel", "name": "fill" if dur == 0 else "gemm", "ts": ts, "dur": dur, "pid": 0,
             "tid": 7, "args": {"correlation": corr}},
        ]
    events += [{"ph": "X", "cat": "cpu_op", "name": "aten::zero_", "ts": 70.0, "dur": 0.0, "pid": 1, "tid": 1},
               {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0.0, "dur": 100.0, "pid": 1, "tid": 1}]
    path = tmp_path / "zero.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_zero_length_kernels_count_in_stats_insights_diff_and_parquet(tmp_path: Path, capsys):
    path = _zero_length_trace(tmp_path)
    stats = {r["name"]: r for r in cli_json(capsys, "stats", path, "--format", "json", "--no-cache")["rows"]}
    ins = cli_json(capsys, "insights", path, "--json", "--no-cache")
    diff = cli_json(capsys, "diff", path, path, "--json", "--no-cache")
    assert stats["fill"]["count"] == 2 and stats["fill"]["total_ns"] == 0
    kernels = {k["name"]: k["count"] for k in ins["gpu"]["top_kernels"]}
    assert kernels == {"gemm": 1, "fill": 2}
    assert ins["gpu"]["gpu_ops"] == 3 and ins["gpu"]["launches_paired"] == 3
    assert {o["name"]: o["count"] for o in ins["ops_by_total"]}["aten::zero_"] == 1
    ops = {(o["kind"], o["name"]): o["a_count"] for o in diff["ops"]}
    assert ops[("gpu", "fill")] == 2 and ops[("cpu", "aten::zero_")] == 1
    store = load_trace(path, cache=False)
    # A range whose both ends touch a zero-length kernel: both are in it (t0 <= ts <= t1).
    sub = compute_insights(store, time_range(store, 40_000, 60_000), top=10).gpu
    assert {k.name: k.count for k in sub.top_kernels} == {"fill": 2} and sub.launches_paired == 2
    assert aggregate(store, time_range(store, 40_000, 60_000)).slices == len(range_slices(store, 40_000, 60_000).rows)


def test_zero_length_kernels_in_parquet(tmp_path: Path):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    from vtui.export.parquet import write_parquet

    store = load_trace(_zero_length_trace(tmp_path), cache=False)
    write_parquet(store, tmp_path / "pq")
    rows = duckdb.connect().execute(
        f"SELECT name, count(*), sum(dur_ns), sum(self_ns) FROM read_parquet('{tmp_path}/pq/*/slices.parquet') "
        "GROUP BY name ORDER BY name").fetchall()
    assert rows == [("aten::mm", 1, 100_000, 100_000 - 3 * 2_000),  # the launches are its children
                    ("aten::zero_", 1, 0, 0), ("cudaLaunchKernel", 3, 6_000, 6_000), ("fill", 2, 0, 0),
                    ("gemm", 1, 10_000, 10_000)]


# ---- a real trace: every count agrees for the same range -----------------------------------------
@pytest.mark.parametrize("path", KINETO_PATHS, ids=lambda p: p.name[:20])
@pytest.mark.parametrize("span", [None, (20_000_000, 120_000_000)])
def test_counts_agree_on_a_real_trace(capsys, span, path):
    events = raw_events(path)
    store = load_trace(path)
    t0, t1 = span or (0, int(store.span_ns))
    rng = [] if span is None else ["--range", f"{t0}ns:{t1}ns"]
    raw = _raw_in_range(events, t0, t1)
    raw_count = Counter(e["name"] for e, _, _ in raw)
    raw_gpu = Counter(e["name"] for e, _, _ in raw if e.get("cat", "").lower() in DEVICE_CATS)
    raw_kernels = Counter(e["name"] for e, _, _ in raw if e.get("cat", "").lower() == "kernel")
    zero = sum(1 for e, a, b in raw if a == b and e.get("cat", "").lower() == "kernel")
    assert zero > 0  # the point of this trace

    stats = {r["name"]: r for r in cli_json(capsys, "stats", path, "--format", "json", *rng)["rows"]}
    ins = cli_json(capsys, "insights", path, "--json", "--top", "100000", *rng)
    rb = [] if span is None else ["--range-a", f"{t0}ns:{t1}ns", "--range-b", f"{t0}ns:{t1}ns"]
    diff = {(o["kind"], o["name"]): o for o in cli_json(capsys, "diff", path, path, "--json", *rb)["ops"]}

    assert {n: r["count"] for n, r in stats.items()} == dict(raw_count)
    assert {k["name"]: k["count"] for k in ins["gpu"]["top_kernels"]} == dict(raw_kernels)
    assert {n: o["a_count"] for (kind, n), o in diff.items() if kind == "gpu"} == dict(raw_gpu)
    assert ins["gpu"]["gpu_ops"] == sum(raw_gpu.values())
    # Every GPU op of this trace has its launch flow, zero-length ones too.
    assert ins["gpu"]["launches_paired"] == ins["gpu"]["gpu_ops"]
    fill = next(n for n in raw_gpu if "FillFunctor" in n)
    assert stats[fill]["count"] == diff[("gpu", fill)]["a_count"] == raw_gpu[fill]
    assert stats[fill]["total_ns"] == diff[("gpu", fill)]["a_total_ns"]
    # CPU operators: insights and diff count and time what stats does.
    for o in ins["ops_by_total"]:
        assert o["count"] == stats[o["name"]]["count"] == diff[("cpu", o["name"])]["a_count"], o["name"]
        assert o["total_ns"] == stats[o["name"]]["total_ns"] == diff[("cpu", o["name"])]["a_total_ns"], o["name"]
    for o in ins["ops"]:
        assert o["self_ns"] == stats[o["name"]]["self_ns"], o["name"]


def test_parquet_counts_and_self_time_match_stats_on_a_real_trace(tmp_path: Path):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    from vtui.export.parquet import write_parquet

    path = _kineto_2021()
    store = load_trace(path)
    write_parquet(store, tmp_path / "pq")
    pq = {name: (n, dur, self_) for name, n, dur, self_ in duckdb.connect().execute(
        f"SELECT name, count(*), sum(dur_ns), sum(self_ns) FROM read_parquet('{tmp_path}/pq/*/slices.parquet') "
        "GROUP BY name").fetchall()}
    agg = {r.key: (r.count, r.total_ns, r.self_ns) for r in aggregate(store).rows}
    assert pq == agg
    raw = Counter(e["name"] for e in raw_events(path) if e.get("ph") == "X")
    assert {n: v[0] for n, v in pq.items()} == dict(raw)


# ---- self time: duration minus the union of the children ----------------------------------------
def test_self_time_subtracts_overlapping_children_once(tmp_path: Path):
    """Two children of one parent that overlap each other (as partly overlapping record_function
    ranges do): every path gives the parent its duration minus their union, never negative."""
    events = [{"ph": "X", "name": "parent", "ts": 0.0, "dur": 100.0, "pid": 1, "tid": 1},
              {"ph": "X", "name": "a", "ts": 10.0, "dur": 40.0, "pid": 1, "tid": 1},
              {"ph": "X", "name": "b", "ts": 30.0, "dur": 40.0, "pid": 1, "tid": 1}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(path, cache=False)
    parent = next(r for r in range(len(store.slices)) if store.name(r) == "parent")
    assert store.self_ns[parent] == 100_000 - 60_000  # union of 10–50 and 30–70 µs
    for t0, t1, expected in ((0, 100_000, 40_000), (20_000, 80_000, 60_000 - 50_000)):
        agg = {r.key: r.self_ns for r in aggregate(store, time_range(store, t0, t1)).rows}
        ops = {r.name: r.self_ns for r in compute_insights(store, time_range(store, t0, t1)).ops.by_self}
        rs = range_slices(store, t0, t1)
        assert agg["parent"] == ops["parent"] == expected
        assert (rs.self_ns >= 0).all() and (rs.self_ns <= rs.clip).all()


def test_every_self_time_path_is_the_same_on_a_real_trace():
    """Aggregation, Insights operators, Python overhead and the store's (Parquet) self_ns agree."""
    path = _kineto_2021()
    store = load_trace(path)
    t0, t1 = 0, int(store.span_ns)
    agg = {r.key: r.self_ns for r in aggregate(store, time_range(store, t0, t1)).rows}
    per_name: dict[str, int] = defaultdict(int)
    for name_id, v in zip(store.slices.name_id.tolist(), store.self_ns.tolist()):
        per_name[store.strings[name_id]] += v
    assert agg == dict(per_name)
    ops = compute_insights(store, time_range(store, t0, t1), top=10_000).ops
    for r in ops.by_self:
        assert r.self_ns == agg[r.name], r.name
    assert (store.self_ns >= 0).all() and (store.self_ns <= store.slices.dur_ns).all()



def test_cache_events_follow_the_range_rule(tmp_path: Path):
    """A cache slice that starts before the range counts with its time inside it; a zero-length one
    and an instant at the range end count too."""
    events = [{"ph": "X", "name": "kv_cache_lookup", "ts": 0.0, "dur": 50.0, "pid": 1, "tid": 1},
              {"ph": "X", "name": "kv_cache_lookup", "ts": 80.0, "dur": 0.0, "pid": 1, "tid": 1},
              {"ph": "i", "name": "prefix_cache_hit", "ts": 80.0, "pid": 1, "tid": 1, "s": "t"},
              {"ph": "X", "name": "other", "ts": 0.0, "dur": 100.0, "pid": 1, "tid": 2}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(path, cache=False)
    c = compute_insights(store, time_range(store, 20_000, 80_000)).caches
    assert (c.events, c.hits, c.slice_time_ns) == (3, 1, 30_000)
