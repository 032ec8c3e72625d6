"""Run against run (``vtui.analysis.diff``) on engine loops with known edits (tests/diff_cases.py):
every step, kernel and operator difference reported is checked against the edit that made it, and
the step figures against the raw JSON read with plain json."""

from __future__ import annotations

import json
import re
import statistics

import numpy as np
import pytest

from tests.diff_cases import ACT, ADD, ATTN, GEMM, LAYERS, NORM, Edit, engine_loop, write
from vtui.analysis.diff import kernels as kernels_mod
from vtui.analysis.diff.engine import Run, diff_runs
from vtui.analysis.diff.noise import difference
from vtui.load.trace import load_trace

CIJK = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1"
DECODES = 40


def _runs(tmp_path, name: str, traces: list[dict]) -> list[Run]:
    out = []
    for i, trace in enumerate(traces):
        path = write(tmp_path, f"{name}{i}", trace)
        out.append(Run(load_trace(path, cache=False), str(path)))
    return out


def _diff(tmp_path, a: list[dict], b: list[dict]):
    return diff_runs(_runs(tmp_path, "a", a), _runs(tmp_path, "b", b))


def _raw_step_durations(trace: dict, kind: str) -> list[float]:
    """µs of the step annotations of ``kind``, from the events as written."""
    pat = re.compile(r"^execute_context_0\(0\)" if kind == "decode" else r"^execute_context_[1-9]")
    return [e["dur"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation" and pat.match(e["name"])]


def test_steps_aligned_by_kind_against_raw_json(tmp_path):
    ta, tb = engine_loop(decodes=DECODES), engine_loop(decodes=DECODES - 2, edit=Edit(slow_us={ATTN: 2.0}))
    d = _diff(tmp_path, [ta], [tb])
    assert [k.kind for k in d.kinds] == ["prefill", "decode"]
    dec, pre = d.kind("decode"), d.kind("prefill")
    assert (dec.matched, dec.unmatched_a, dec.unmatched_b) == (DECODES - 2, 2, 0)
    assert (pre.matched, pre.unmatched_a, pre.unmatched_b) == (2, 0, 0)
    for side, trace in ((dec.a, ta), (dec.b, tb)):
        raw = _raw_step_durations(trace, "decode")
        assert side.n == len(raw)
        # the steps' durations are the serving analysis's (which may end them at the GPU work's end,
        # a few µs from the annotation's end here): the same within 5 µs
        assert side.median_ns == pytest.approx(statistics.median(raw) * 1000, abs=5_000)
        assert side.p90_ns == pytest.approx(float(np.percentile(raw, 90)) * 1000, abs=5_000)
    # each decode step runs the attention kernel once per layer, each 2 µs slower: exactly that
    assert dec.b.median_ns - dec.a.median_ns == pytest.approx(LAYERS * 2_000, abs=2)
    assert dec.diff.significant and dec.diff.ci_pct is not None and dec.diff.ci_pct[0] > 0
    assert dec.diff.delta_pct == pytest.approx(100 * LAYERS * 2_000 / dec.a.median_ns, rel=1e-6)
    assert not pre.diff.significant and pre.diff.delta_pct == 0  # prefill untouched
    assert d.like


def test_slowed_kernel_is_the_only_change(tmp_path):
    d = _diff(tmp_path, [engine_loop()], [engine_loop(edit=Edit(slow_us={ATTN: 2.0}))])
    k = d.kernels
    assert not k.added and not k.removed
    assert [(r.kind, r.name, r.b_name, r.match, r.op) for r in k.changed] == [
        ("decode", ATTN, "", "exact", "vllm::unified_attention")]
    row = k.changed[0]
    assert row.count == LAYERS * DECODES
    assert row.delta_ns == 2_000 * LAYERS * DECODES and row.per_step_ns == pytest.approx(2_000 * LAYERS)
    assert [(o.kind, o.op, o.per_step_ns) for o in k.by_op] == [("decode", "vllm::unified_attention", 2_000 * LAYERS)]
    assert k.step_pairs == {"prefill": 2, "decode": DECODES} and k.confidence == {"prefill": 1.0, "decode": 1.0}


def test_renamed_kernels_matched_by_base_and_family(tmp_path):
    half = "void vllm::rms_norm_kernel<c10::Half, 8, 4>(c10::Half*, c10::Half const*, float, int, int)"
    d = _diff(tmp_path, [engine_loop()], [engine_loop(edit=Edit(rename={GEMM: CIJK, NORM: half}))])
    k = d.kernels
    assert not k.added and not k.removed and not k.by_op  # same times: no operator moved
    got = {(r.name, r.b_name, r.match, r.op, r.count, r.delta_ns) for r in k.changed}
    assert got == {(GEMM, CIJK, "family", "aten::mm", 4 * LAYERS * DECODES, 0),
                   (NORM, half, "base", "aten::mul", LAYERS * DECODES, 0)}
    assert k.confidence["decode"] == pytest.approx(3 / 8)  # 3 of a layer's 8 kernels keep their name


def test_dropped_and_added_kernels(tmp_path):
    extra = "void at::native::extra_copy_kernel<float>(float*)"
    d = _diff(tmp_path, [engine_loop()], [engine_loop(edit=Edit(drop={ACT}, add_after={ADD: ("aten::add", extra, 15.0)}))])
    k = d.kernels
    assert [(r.name, r.op, r.count, r.per_step_ns) for r in k.removed] == [(ACT, "aten::silu", LAYERS * DECODES, -12_000 * LAYERS)]
    assert [(r.name, r.op, r.count, r.per_step_ns) for r in k.added] == [(extra, "aten::add", LAYERS * DECODES, 15_000 * LAYERS)]
    assert not k.changed
    assert {(o.op, o.per_step_ns) for o in k.by_op} == {("aten::silu", -12_000 * LAYERS), ("aten::add", 15_000 * LAYERS)}


def test_noise_alone_is_not_significant(tmp_path):
    a = [engine_loop(noise=0.03, seed=s) for s in (1, 2, 3)]
    b = [engine_loop(noise=0.03, seed=s) for s in (4, 5, 6)]
    d = _diff(tmp_path, a, b)
    dec = d.kind("decode")
    assert dec.a.runs == 3 and dec.b.runs == 3 and dec.a.n == 3 * DECODES
    assert not dec.diff.significant and dec.diff.ci_pct[0] < 0 < dec.diff.ci_pct[1]
    assert not d.kernels.changed and not d.kernels.added and not d.kernels.removed
    assert d.like, d.parity
    # a real 10 % on the GEMMs stands out of the same noise
    slow = [engine_loop(noise=0.03, seed=s, edit=Edit(slow_us={GEMM: 2.2})) for s in (4, 5, 6)]
    d2 = _diff(tmp_path, a, slow)
    assert d2.kind("decode").diff.significant and d2.kind("decode").diff.delta_pct > 0
    assert [(r.name, r.op) for r in d2.kernels.changed] == [(GEMM, "aten::mm")]


def test_a_difference_only_beyond_the_runs_own_noise(tmp_path):
    a = [engine_loop(noise=0.01, seed=s) for s in (1, 2, 3)]
    b = [engine_loop(noise=0.01, seed=s, run_factor=f) for s, f in ((4, 0.92), (5, 1.04), (6, 1.12))]
    d = _diff(tmp_path, a, b)
    dec = d.kind("decode")
    assert dec.b.run_spread_pct == pytest.approx(100 * (1.12 - 0.92) / 1.04, abs=3)
    assert not dec.diff.significant  # +4 % with runs ±10 % apart: within the runs' noise
    # one run per side: the slow run alone looks like a real +12 %
    one = _diff(tmp_path, a[:1], b[2:])
    assert one.kind("decode").diff.significant and one.kind("decode").diff.delta_pct > 8


def test_parity_lists_what_differs(tmp_path):
    d = _diff(tmp_path, [engine_loop()], [engine_loop(hidden=2048, device="AMD Instinct MI300X")])
    what = {p.what: (p.a, p.b) for p in d.parity}
    assert what["device"] == ("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X")
    assert "steps found as" not in what  # both found as the engine's step annotations
    assert [json.loads(v) for v in what["shapes of aten::mm"]] == [[[8, 1024], [1024, 1024]], [[8, 2048], [2048, 2048]]]
    assert not d.like
    d2 = _diff(tmp_path, [engine_loop()], [engine_loop(batch=16)])
    assert {p.what for p in d2.parity} >= {"decode step size (median)", "prefill step size (median)"}
    assert dict((p.what, p.b) for p in d2.parity)["decode step size (median)"] == "16 requests / 16 tokens"
    assert d2.kind("decode").batch_differs == DECODES


def test_alignment_cost_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(kernels_mod, "MAX_CELLS", 1)  # not even the blocks between two GEMMs fit
    d = _diff(tmp_path, [engine_loop(decodes=5)], [engine_loop(decodes=5, edit=Edit(drop={ACT}))])
    assert d.kernels.unaligned == {"decode": 5} and "decode" not in d.kernels.step_pairs
    assert not d.kernels.removed  # not aligned: nothing claimed


def test_difference_interval_is_seeded_and_honest():
    rng = np.random.default_rng(3)
    a = [rng.normal(1e6, 2e4, 60)]
    b = [a[0] * 1.05]
    one, two = difference(a, b), difference(a, b)
    assert one == two and one.significant and one.ci_pct[0] < 5 < one.ci_pct[1]
    assert not difference(a, [a[0] + 500]).significant  # under 1 µs apart: never significant
    few = difference([np.array([1e6, 1e6])], [np.array([2e6, 2e6])])
    assert few.ci_pct is None and not few.significant and few.delta_pct == 100


def test_json_rounds_trip_through_the_schema(tmp_path):
    from vtui.present.diff_runs_json import runs_dict
    from vtui.present.schema import typed

    d = _diff(tmp_path, [engine_loop()], [engine_loop(edit=Edit(slow_us={ATTN: 2.0}))])
    doc = runs_dict(d)
    side = {"trace": "a", "t0_ns": 0, "t1_ns": 1, "step_pattern": None, "steps": 0, "first_step_ns": None}
    typed("diff", {"a": side, "b": side, **doc})  # every key known and typed
    dec = next(k for k in doc["steps_by_kind"] if k["kind"] == "decode")
    assert set(dec["a"]) >= {"n", "median_ns", "p90_ns"} and dec["significant"] is True
    assert json.loads(json.dumps(doc))["kernels"]["changed"][0]["delta_ns"] == 2_000 * LAYERS * DECODES


def test_decode_steps_paired_by_batch_size(tmp_path):
    """A decodes 10 steps of 8 requests, then 10 of 16; B the other way round (12 of 16, then 8 of
    8): each step is paired with one of its own batch size, so no kernel differs."""
    from vtui.analysis.diff.steps import matched_pairs

    ta = engine_loop(decodes=20, batches=[8] * 10 + [16] * 10)
    tb = engine_loop(decodes=20, batches=[16] * 12 + [8] * 8)
    d = _diff(tmp_path, [ta], [tb])
    dec = d.kind("decode")
    assert (dec.matched, dec.unmatched_a, dec.unmatched_b, dec.batch_differs) == (18, 2, 2, 0)
    pa, pb = matched_pairs(d.a_steps[0], d.b_steps[0], "decode")
    # from the names as written: requests per step, positions counted from the first step (2 prefills)
    size = {side: [int(re.search(r"generation_(\d+)", e["name"]).group(1)) for e in t["traceEvents"]
                   if e.get("name", "").startswith("execute_context_")] for side, t in (("a", ta), ("b", tb))}
    assert [size["a"][i] for i in pa.tolist()] == [size["b"][j] for j in pb.tolist()]
    assert pa.tolist() == list(range(2, 10)) + list(range(12, 22))  # A's first 8 of 8, its 10 of 16
    assert pb.tolist() == list(range(14, 22)) + list(range(2, 12))
    k = d.kernels
    assert not k.changed and not k.added and not k.removed and k.step_pairs["decode"] == 18


def test_long_steps_aligned_block_by_block(tmp_path, monkeypatch):
    """A middle over the cost bound is cut at a kernel every layer runs once (one block per layer):
    the same answer as the whole alignment."""
    edit = Edit(rename={GEMM: CIJK}, drop={ACT}, slow_us={ATTN: 2.0})
    whole = _diff(tmp_path, [engine_loop(decodes=4)], [engine_loop(decodes=4, edit=edit)]).kernels
    monkeypatch.setattr(kernels_mod, "MAX_CELLS", 100)  # a layer's 8 × 7 kernels fit, a step's 32 × 28 not
    blocks = _diff(tmp_path, [engine_loop(decodes=4)], [engine_loop(decodes=4, edit=edit)]).kernels
    assert blocks.unaligned == {} and blocks.step_pairs == whole.step_pairs == {"prefill": 2, "decode": 4}
    for attr in ("added", "removed", "changed", "by_op"):
        assert getattr(blocks, attr) == getattr(whole, attr)
    assert {(r.name, r.b_name, r.match) for r in whole.changed} == {(GEMM, CIJK, "family"), (ATTN, "", "exact")}
    assert [(r.name, r.count) for r in whole.removed] == [(ACT, LAYERS * 4)]


def test_parity_names_steps_found_another_way(tmp_path):
    """B's steps are ProfilerStep#N (its step annotations renamed): no step kind in common, so
    nothing is aligned, and parity says why."""
    tb = engine_loop()
    for i, e in enumerate(x for x in tb["traceEvents"] if x.get("name", "").startswith("execute_context_")):
        e["name"] = f"ProfilerStep#{i}"
    d = _diff(tmp_path, [engine_loop()], [tb])
    assert {p.what: (p.a, p.b) for p in d.parity}["steps found as"] == ("engine step annotation", "ProfilerStep#N")
    assert [(k.kind, k.matched, k.unmatched_a, k.unmatched_b) for k in d.kinds] == [
        ("prefill", 0, 2, 0), ("decode", 0, DECODES, 0), ("ProfilerStep", 0, 0, DECODES + 2)]
    assert not d.kernels.step_pairs and not d.like
