"""`vtui diff` run against run from the command line: several runs per side, the JSON sections,
the --fail-if gate; and kernels of a real H100 trace renamed and slowed, checked against the raw JSON."""

from __future__ import annotations

import gzip
import json
import re
import statistics
from collections import Counter

import pytest

from tests.diff_cases import ATTN, GEMM, Edit, engine_loop, write
from tests.helpers import QWEN, cli_json
from vtui.cli import main

CIJK = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1"


@pytest.fixture(scope="module")
def loops(tmp_path_factory):
    folder = tmp_path_factory.mktemp("loops")
    return {
        "a": write(folder, "a", engine_loop()),
        "slow": write(folder, "slow", engine_loop(edit=Edit(slow_us={ATTN: 2.0}))),
        "noisy": [write(folder, f"n{s}", engine_loop(noise=0.03, seed=s)) for s in range(1, 6)],
        "wide": write(folder, "wide", engine_loop(hidden=2048)),
    }


def _gate(capsys, *args) -> tuple[int, str, str]:
    code = main(["diff", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_several_runs_per_side_in_json(capsys, loops):
    n = loops["noisy"]
    d = cli_json(capsys, "diff", n[0], n[1], n[2], "--", n[3], n[4], "--json")
    assert d["schema_version"] == 2
    assert [r["trace"] for r in d["runs"]["a"]] == [str(p) for p in n[:3]]
    assert [r["trace"] for r in d["runs"]["b"]] == [str(p) for p in n[3:]]
    dec = next(k for k in d["steps_by_kind"] if k["kind"] == "decode")
    assert (dec["a"]["runs"], dec["b"]["runs"], dec["a"]["n"], dec["b"]["n"]) == (3, 2, 120, 80)
    assert dec["significant"] is False and dec["ci_pct"][0] < 0 < dec["ci_pct"][1]
    assert d["like"] is True and d["parity"] == []
    assert d["kernels"]["changed"] == [] and d["kernels"]["added"] == [] and d["kernels"]["removed"] == []
    # the existing sections are the first runs'
    assert d["a"]["trace"] == str(n[0]) and d["b"]["trace"] == str(n[3]) and d["metrics"] and d["ops"]


def test_fail_if_breaches_beyond_noise(capsys, loops):
    a, slow = loops["a"], loops["slow"]
    code, out, err = _gate(capsys, a, slow, "--fail-if", "decode.median:+0.5%", "--fail-if", "tpot:+50%",
                           "--fail-if", "ttft:+0.1%", "--table", "steps_by_kind")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "decode.median:+0.5%" in lines[0] and "beyond noise" in lines[0]
    assert "decode" in out  # the table is still printed
    assert _gate(capsys, a, slow, "--fail-if", "decode.median:+5%")[0] == 0
    assert _gate(capsys, a, slow, "--fail-if", "decode.median:-0.5%")[0] == 0  # it rose: a fall gate holds
    assert _gate(capsys, a, slow, "--fail-if", "decode.p90:+0.5%")[0] == 1


def test_fail_if_in_json_and_within_noise(capsys, loops):
    n = loops["noisy"]
    code, out, err = _gate(capsys, n[0], n[1], n[2], "--", n[3], n[4], "--fail-if", "decode.median:+0.01%",
                           "--format", "json")
    assert code == 0 and err == ""
    gate = json.loads(out)["gate"]
    assert len(gate) == 1 and gate[0]["breached"] is False and gate[0]["figure"] == "decode"
    code, out, err = _gate(capsys, loops["a"], loops["slow"], "--fail-if", "decode.median:+1%", "--json")
    g = json.loads(out)["gate"][0]
    assert code == 1 and g["breached"] is True and g["delta_pct"] > 1 and g["ci_pct"][0] > 1
    assert len(err.strip().splitlines()) == 1


def test_fail_if_on_a_figure_not_measured_fails(capsys, loops):
    code, _, err = _gate(capsys, loops["a"], loops["slow"], "--fail-if", "mixed.median:+5%")
    assert code == 1 and "not measured" in err and "no mixed steps" in err


@pytest.mark.parametrize("spec", ["decode:5", "decode.mean:+5%", "ttft.p90:+5%", "+5%"])
def test_bad_fail_if_is_one_line(capsys, loops, spec):
    code, _, err = _gate(capsys, loops["a"], loops["a"], "--fail-if", spec)
    assert code == 1 and err.startswith("vtui: error: --fail-if") and err.count("\n") == 1


def test_text_labels_unlike_runs(capsys, loops):
    code, out, _ = _gate(capsys, loops["a"], loops["wide"], "--table", "parity")
    assert code == 0 and "UNLIKE RUNS" in out and "shapes of aten::mm" in out
    code, out, _ = _gate(capsys, loops["a"], loops["slow"])
    assert code == 0 and "like runs" in out and "Kernels inside matched steps" in out
    # the name cut in the middle (templated names differ in their tails), then operator and count
    assert re.search(r"decode\s+void flash::flash_fwd_\S*….*\(Flash_fwd_params\)\s+vllm::unified_attention\s+160\s", out)


# ---- a real trace (H100, Qwen1.5 through transformers: Qwen2Model's forward, no LM head, no generate(),
# so a forward inside ProfilerStep#6, not a prefill: its kind is the step's name) and edited copies ----
def _qwen_events() -> dict:
    return json.loads(gzip.decompress(QWEN.read_bytes()))


def _raw_gemm_ops(doc: dict) -> Counter:
    """The GEMM kernels launched inside the model's forward, by the innermost CPU operator around the
    launch call: plain Python over the events (correlation ids, time containment on the thread)."""
    ev = doc["traceEvents"]
    step = next(e for e in ev if e.get("name", "").endswith("modeling_qwen2.py(503): forward"))
    lo, hi = step["ts"], step["ts"] + step["dur"]
    calls = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime" and e["tid"] == step["tid"]
             and lo <= e["ts"] < hi and "correlation" in e.get("args", {})}
    ops = [e for e in ev if e.get("cat") == "cpu_op" and e["tid"] == step["tid"]]
    out: Counter = Counter()
    for k in ev:
        if k.get("cat") == "kernel" and k["name"] == GEMM and k["args"].get("correlation") in calls:
            c = calls[k["args"]["correlation"]]
            around = [o for o in ops if o["ts"] <= c["ts"] and c["ts"] + c["dur"] <= o["ts"] + o["dur"]]
            out[min(around, key=lambda o: o["dur"])["name"] if around else "(no operator)"] += 1
    return out


def _edited(tmp_path, name: str, edit) -> str:
    doc = _qwen_events()
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and e["name"] == GEMM:
            edit(e)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_real_trace_gemm_renamed_to_another_vendors(capsys, tmp_path):
    truth = _raw_gemm_ops(_qwen_events())
    assert sum(truth.values()) > 100
    b = _edited(tmp_path, "cijk", lambda e: e.update(name=CIJK))
    d = cli_json(capsys, "diff", QWEN, b, "--json", "--table", "kernels")["kernels"]
    assert d["added"] == [] and d["removed"] == [] and d["by_op"] == []
    got = Counter()
    for r in d["changed"]:
        assert (r["name"], r["b_name"], r["match"], r["kind"], r["delta_ns"]) == (GEMM, CIJK, "family", "ProfilerStep", 0)
        got[r["op"]] += r["count"]
    assert got == truth


def test_real_trace_gemm_slowed_by_a_known_amount(capsys, tmp_path):
    truth = _raw_gemm_ops(_qwen_events())
    b = _edited(tmp_path, "slow", lambda e: e.update(dur=e["dur"] + 2.0))
    d = cli_json(capsys, "diff", QWEN, b, "--json")
    k = d["kernels"]
    assert k["added"] == [] and k["removed"] == []
    assert {r["op"]: (r["count"], r["delta_ns"], r["match"], r["b_name"]) for r in k["changed"]} == {
        op: (n, 2_000 * n, "exact", None) for op, n in truth.items()}
    assert {o["op"]: o["delta_ns"] for o in k["by_op"]} == {op: 2_000 * n for op, n in truth.items()}
    assert d["like"] is True and k["confidence"] == {"ProfilerStep": 1.0}


def test_hostile_kernel_and_operator_names_are_escaped(capsys, tmp_path):
    evil = "gemm\x1b[31m\u202eEVIL\x07"
    trace = engine_loop(decodes=4, edit=Edit(rename={ATTN: evil}))
    for e in trace["traceEvents"]:
        if e.get("name") == "aten::mul":
            e["name"] = "aten::mul\x1b]0;title\x07"
    a, b = write(tmp_path, "a", engine_loop(decodes=4)), write(tmp_path, "b", trace)
    code, out, err = _gate(capsys, a, b)
    assert code == 0 and err == ""
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "EVIL" in out  # shown, escaped
    d = cli_json(capsys, "diff", a, b, "--json", "--table", "kernels")
    # another family (a "gemm" for the attention kernel): removed and added, the name kept as written
    assert [r["name"] for r in d["kernels"]["added"]] == [evil] and [r["name"] for r in d["kernels"]["removed"]] == [ATTN]


def test_runs_table_lists_each_run(capsys, loops):
    n = loops["noisy"]
    code, out, _ = _gate(capsys, n[0], n[1], "--", n[2], "--table", "runs")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0] == "Runs: A 2 · B 1" and len(lines) == 4
    raw = [statistics.median(e["dur"] for e in json.loads(p.read_text())["traceEvents"]
                             if e.get("name", "").startswith("execute_context_0(0)")) for p in n[:3]]
    for line, path, med in zip(lines[1:], n[:3], raw):
        assert f" {path}: prefill " in line and " · decode " in line and "(40)" in line
        shown = re.search(r"decode ([\d.]+) µs", line)
        assert shown and float(shown.group(1)) == pytest.approx(med, abs=5)  # µs, the serving step's end may differ
