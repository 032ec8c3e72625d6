"""`vtui diff` and the comparison analysis, checked against the raw JSON read with plain json/gzip."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict

import pytest

from tests.helpers import QWEN, SHARED_TRACES, STACK, STEPLOOP, cli_json, raw_events, raw_origin
from vtui.analysis.report.compare import NOISE_NS, align_steps, diff_metrics, op_status
from vtui.cli import main

KV = SHARED_TRACES / "generated" / "hf_llama_kvcache.json.gz"
NOKV = SHARED_TRACES / "generated" / "hf_llama_nocache.json.gz"


def _diff_json(capsys, *args) -> dict:
    return cli_json(capsys, "diff", *args, "--json")


def _raw_op_totals(events: list[dict]) -> dict[str, tuple[int, float]]:
    """name -> (count, total µs) of the CPU operators (cat cpu_op) with a duration."""
    out: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e.get("dur", 0) > 0:
            out[e["name"]][0] += 1
            out[e["name"]][1] += e["dur"]
    return {k: (c, t) for k, (c, t) in out.items()}


def test_kvcache_vs_nocache_addmm_against_raw_json(capsys):
    if not (KV.exists() and NOKV.exists()):
        pytest.skip("../shared/traces/generated is not present")
    d = _diff_json(capsys, KV, NOKV)
    ops = {(o["kind"], o["name"]): o for o in d["ops"]}
    events_a, events_b = raw_events(KV), raw_events(NOKV)
    raw_a, raw_b = _raw_op_totals(events_a), _raw_op_totals(events_b)
    for name in ("aten::addmm", "aten::linear", "aten::bmm"):
        o = ops[("cpu", name)]
        for side, raw in (("a", raw_a), ("b", raw_b)):
            count, total_us = raw[name]
            assert o[f"{side}_count"] == count
            assert o[f"{side}_total_ns"] == pytest.approx(total_us * 1000, abs=count)  # ≤ 1 ns rounding per slice
        assert o["delta_ns"] == o["b_total_ns"] - o["a_total_ns"]
    addmm = ops[("cpu", "aten::addmm")]
    assert addmm["b_total_ns"] > 3 * addmm["a_total_ns"] and addmm["status"] == "slower"
    # operators and kernels by |Δ total|, then the annotations (listed apart), also by |Δ total|
    kinds = [o["kind"] == "annotation" for o in d["ops"]]
    assert kinds == sorted(kinds) and any(kinds)
    for part in (False, True):
        deltas = [abs(o["delta_ns"]) for o in d["ops"] if (o["kind"] == "annotation") == part]
        assert deltas == sorted(deltas, reverse=True)
    # every op name in either raw trace is in the diff, with added/removed where one side lacks it
    assert {n for n in raw_a} | {n for n in raw_b} <= {n for k, n in ops if k == "cpu"}
    for name in set(raw_b) - set(raw_a):
        assert ops[("cpu", name)]["status"] == "added"
    m = {x["name"]: x for x in d["metrics"]}
    for side, events in (("a", events_a), ("b", events_b)):
        timed = [e for e in events if e.get("ph") not in ("M", None) and "ts" in e]
        span = (max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed)) * 1000
        assert m["span_ns"][side] == pytest.approx(span, abs=2)
    assert m["span_ns"]["better"] == "A" and m["gpu_busy_pct"]["a"] is None and m["gpu_busy_pct"]["delta"] is None


def test_a_trace_against_itself_is_all_same(capsys):
    path = STEPLOOP
    d = _diff_json(capsys, path, path)
    assert d["ops"] and all(o["status"] == "same" and o["delta_ns"] == 0 for o in d["ops"])
    for m in d["metrics"]:
        if m["a"] is not None:
            assert m["delta"] == 0 and m["better"] in ("same", None), m
    assert len(d["steps"]) == 32 and all(s["delta_ns"] == 0 and s["a_phase_pct"] == s["b_phase_pct"] for s in d["steps"])
    assert main(["diff", str(path), str(path)]) == 0
    out = capsys.readouterr().out
    assert "slower" not in out and "faster" not in out and "within 5%" in out


def test_steps_side_by_side_against_raw_json(capsys):
    """Step i of A next to step i of B (B starts 100 ms in), with each step's phase shares from the raw events."""
    path = STEPLOOP
    d = _diff_json(capsys, path, path, "--range-b", "100ms:")
    events = raw_events(path)
    origin = raw_origin(events)
    steps = sorted((e for e in events if e.get("ph") == "X" and e.get("name") == "engine_step"), key=lambda e: e["ts"])
    late = [e for e in steps if (e["ts"] - origin) * 1000 >= 100e6]
    assert d["b"]["steps"] == len(late) < d["a"]["steps"] == len(steps) == len(d["steps"])
    execs = [e for e in events if e.get("ph") == "X" and e.get("name") == "execute_model"]
    for s, ea in zip(d["steps"], steps):
        assert s["a_ns"] == pytest.approx(ea["dur"] * 1000, abs=2)
        kids = [e for e in execs if e.get("tid") == ea["tid"] and ea["ts"] <= e["ts"] and e["ts"] + e["dur"] <= ea["ts"] + ea["dur"]]
        assert s["a_phase_pct"]["execute_model"] == pytest.approx(100 * sum(k["dur"] for k in kids) / ea["dur"], abs=0.05)
    for s, eb in zip(d["steps"], late):
        assert s["b_ns"] == pytest.approx(eb["dur"] * 1000, abs=2)
    assert all(s["b_ns"] is None and s["delta_ns"] is None for s in d["steps"][len(late):])


def test_cpu_only_against_gpu_trace(capsys):
    d = _diff_json(capsys, STACK, QWEN)
    m = {x["name"]: x for x in d["metrics"]}
    assert m["gpu_busy_pct"]["a"] is None and m["gpu_busy_pct"]["b"] > 0 and m["gpu_busy_pct"]["better"] is None
    # A's steps are generate()'s forward passes (the model's top nn.Module): its TTFT is the first one
    forwards = sorted((e for e in raw_events(STACK) if e.get("ph") == "X"
                       and e["name"].startswith("nn.Module: LlamaForCausalLM")), key=lambda e: e["ts"])
    assert m["ttft_ns"]["a"] == pytest.approx(forwards[0]["dur"] * 1000, abs=1) and m["ttft_ns"]["b"] > 0
    raw_b = raw_events(QWEN)
    kernels: dict[str, float] = defaultdict(float)
    for e in raw_b:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and e.get("dur", 0) > 0:
            kernels[e["name"]] += e["dur"]
    gpu = {o["name"]: o for o in d["ops"] if o["kind"] == "gpu"}
    assert set(kernels) <= set(gpu)
    name, total = max(kernels.items(), key=lambda kv: kv[1])
    assert gpu[name]["status"] == "added" and gpu[name]["b_total_ns"] == pytest.approx(total * 1000, abs=gpu[name]["b_count"])
    assert main(["diff", str(STACK), str(QWEN)]) == 0
    out = capsys.readouterr().out
    gpu_line = next(ln for ln in out.splitlines() if ln.startswith("GPU busy (of the range)"))
    assert gpu_line.split()[5] == "—" and "Traceback" not in out


def test_tolerance_and_better_direction():
    assert op_status(0, 3, 0, 10) == "added" and op_status(3, 0, 10, 0) == "removed"
    assert op_status(1, 1, 100_000, 105_000) == "same" and op_status(1, 1, 100_000, 105_001) == "slower"
    assert op_status(1, 1, 100_000, 94_999) == "faster"
    assert op_status(1, 1, 100, 100 + NOISE_NS) == "same"  # below the timer's resolution
    assert op_status(1, 1, 100_000, 109_000, tolerance=0.1) == "same"
    ms = {m.name: m for m in diff_metrics(
        {"step_pattern": "x", "step_count": 10, "ttft_ns": 1e6, "steps_per_s": 100.0, "gpu_busy_pct": 50.0},
        {"step_pattern": None, "step_count": 0, "ttft_ns": 2e6, "steps_per_s": 150.0, "gpu_busy_pct": 51.0})}
    assert ms["ttft_ns"].better == "A" and ms["ttft_ns"].pct == pytest.approx(100.0)
    assert ms["steps_per_s"].better == "B" and ms["gpu_busy_pct"].better == "same"
    assert ms["step_count"].b is None and ms["step_count"].delta is None  # no steps found: absent, not 0
    assert ms["peak_allocated_bytes"].a is None and ms["peak_allocated_bytes"].better is None


def test_align_steps_pads_the_shorter_series():
    import numpy as np

    pairs, cols = align_steps(np.array([10, 20]), np.array([10]), [{"x": 5, "y": 1}, {"x": 10}], [{"y": 10}])
    assert cols == ["x", "y"] and len(pairs) == 2
    assert pairs[0].a_shares == {"x": 50.0, "y": 10.0} and pairs[0].b_shares == {"x": 0.0, "y": 100.0}
    assert pairs[1].b_ns is None and pairs[1].delta_ns is None and pairs[1].b_shares == {}


@pytest.mark.parametrize("args, message", [
    (["missing.json", str(STACK)], "missing.json"),
    ([str(STACK), str(STACK), "--range-a", "10s:20s"], "outside the trace"),
    ([str(STACK), str(STACK), "--range-b", "abc"], "range"),
    ([str(STACK), str(STACK), "--step", "a("], "invalid regex"),
    ([str(STACK), str(STACK), "--tolerance", "-1"], "--tolerance"),
    ([str(STACK), str(STACK), "--top", "0"], "--top"),
])
def test_diff_bad_input_is_one_line(capsys, args, message):
    assert main(["diff", *args]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vtui: error:") and message in err and "\n" not in err


def test_diff_needs_two_traces(capsys):
    assert main(["diff", str(STACK)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "two traces" in err
    with pytest.raises(SystemExit) as exc:  # nothing at all: argparse's own line
        main(["diff"])
    assert exc.value.code == 2


def test_diff_csv_and_markdown_carry_the_json_numbers(capsys):
    """`--format csv` is one table with every row (the same numbers as --json); `md` has sections."""
    d = _diff_json(capsys, STACK, QWEN)
    assert main(["diff", str(STACK), str(QWEN), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == len(d["ops"]) > 25  # every operator, not the text's top 25
    for row, op in zip(rows, d["ops"]):
        assert (row["name"], row["status"], int(row["a_total_ns"]), int(row["b_total_ns"])) == (
            op["name"], op["status"], op["a_total_ns"], op["b_total_ns"])
    assert main(["diff", str(STACK), str(QWEN), "--format", "csv", "--table", "metrics"]) == 0
    metrics = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [m["name"] for m in metrics] == [m["name"] for m in d["metrics"]]
    assert main(["diff", str(STACK), str(QWEN), "--format", "md", "--top", "3"]) == 0
    md = capsys.readouterr().out
    assert md.count("### ") == 3 and "| metric | A | B |" in md
    ops_section = md.split("### Operators and kernels")[1].split("###")[0]
    assert sum(line.startswith("| ") for line in ops_section.splitlines()) == 1 + 3  # header + top 3


def test_diff_csv_steps_are_numbers_and_conflicting_options_are_one_line(capsys):
    demo = STEPLOOP
    d = _diff_json(capsys, demo, STACK)
    assert main(["diff", str(demo), str(STACK), "--format", "csv", "--table", "steps"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == len(d["steps"]) == 32
    for row, step in zip(rows, d["steps"]):
        for phase, pct in step["a_phase_pct"].items():
            assert float(row[f"{phase} a_pct"]) == pytest.approx(pct, abs=0.006)  # JSON rounds to 0.01
    assert main(["diff", str(demo), str(STACK), "--json", "--format", "md"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vtui: error:") and "\n" not in err


def test_diff_table_picks_one_table_in_every_format(capsys):
    demo = STEPLOOP
    d = _diff_json(capsys, demo, STACK)
    assert main(["diff", str(demo), str(STACK), "--table", "metrics"]) == 0  # the default format
    out = capsys.readouterr().out
    assert "wall time of the range" in out and "Operators" not in out and "Steps" not in out
    assert main(["diff", str(demo), str(STACK), "--table", "ops", "--top", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["name", "kind"] and len(out) == 2 + 3
    assert main(["diff", str(demo), str(STACK), "--format", "json", "--table", "steps"]) == 0
    only = json.loads(capsys.readouterr().out)
    assert set(only) == {"schema_version", "a", "b", "steps"} and only["steps"] == d["steps"]
