"""The diff's fast paths against the plain computations they replace: the bootstrap's medians, the
pairing of equal step sequences in numpy, the grouping of kernel rows, a run's steps without the
full step and serving reports, and the masks that skip their gather."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.diff_cases import ACT, GEMM, NORM, Edit, engine_loop, write
from vtui.analysis.diff import kernels as kernels_mod
from vtui.analysis.diff import noise
from vtui.analysis.diff.engine import Run, diff_runs
from vtui.analysis.diff.steps import pattern_kind, run_steps
from vtui.analysis.gpu.peaks import device_names, trace_device
from vtui.analysis.steps.detect import analyse_steps
from vtui.analysis.steps.serving import analyse_serving
from vtui.analysis.steps.step_names import MIXED, PREFILL, UNKNOWN
from vtui.load.trace import load_trace
from vtui.store.devices import cat_mask, helper_mask, name_mask

SHARED_TRACES = ["tracelens__sglang_Qwen3-8B_prefilldecode.json.gz", "tracelens__vllm_decode_full_graph_execution.json.gz",
                 "hta__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"]


def _shared(shared_traces: Path, name: str):
    path = shared_traces / "public" / name
    if not path.exists():
        pytest.skip(f"{path} is not present")
    return load_trace(path, cache=False)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 263, 1300])
def test_resampled_medians_are_numpys(n):
    rng = np.random.default_rng(n)
    r = rng.integers(1_000_000, 1_100_000, n).astype(np.float64)
    r[::3] = r[0]  # ties
    idx = rng.integers(0, n, size=(200, n))
    ranked, pos = noise._sorted_positions(r)
    got = noise._resampled_medians(ranked, pos, idx)
    assert np.array_equal(got, np.median(r[idx], axis=1))


def _plain_boot_side(runs, rng, resamples):
    per_run = np.empty((len(runs), resamples))
    for k, r in enumerate(runs):
        n = len(r)
        chunk = max(1, noise.MAX_CELLS // n)
        for lo in range(0, resamples, chunk):
            hi = min(resamples, lo + chunk)
            per_run[k, lo:hi] = np.median(r[rng.integers(0, n, size=(hi - lo, n))], axis=1)
    if len(runs) == 1:
        return per_run[0]
    pick = rng.integers(0, len(runs), size=(resamples, len(runs)))
    return np.median(per_run[pick, np.arange(resamples)[:, None]], axis=1)


@pytest.mark.parametrize("runs", [1, 3])
def test_bootstrap_interval_is_a_plain_bootstraps(runs):
    rng = np.random.default_rng(11)
    a = [rng.normal(1e6, 3e4, 61 + k).round() for k in range(runs)]
    b = [rng.normal(1.02e6, 3e4, 58 + k).round() for k in range(runs)]
    got = noise.difference(a, b)
    boot = np.random.default_rng(noise.SEED)
    ba, bb = _plain_boot_side(a, boot, noise.RESAMPLES), _plain_boot_side(b, boot, noise.RESAMPLES)
    ratios = 100.0 * (bb - ba) / ba
    tail = (1 - noise.LEVEL) / 2 * 100
    assert got.ci_pct == tuple(float(v) for v in np.percentile(ratios, [tail, 100 - tail]))


def _plain_alignments(ps, empty, cache):
    """``_align_set`` as a loop over the pairs."""
    ia, ib, lv, ir, id_ = [], [], [], [], []
    aligned = unaligned = longer = 0
    for ka, kb in zip(ps.a_steps.tolist(), ps.b_steps.tolist()):
        al = kernels_mod.align(ps.a, ka, ps.b, kb, empty, cache)
        if al is None:
            unaligned += 1
            continue
        sa, sb = ps.a.step(ka), ps.b.step(kb)
        aligned += 1
        longer += max(sa.stop - sa.start, sb.stop - sb.start)
        ia.append(al.a + sa.start)
        ib.append(al.b + sb.start)
        lv.append(al.level)
        ir.append(al.removed + sa.start)
        id_.append(al.added + sb.start)
    cat = [np.concatenate([np.zeros(0, dtype=np.int64), *x]) for x in (ia, ib, lv, ir, id_)]
    return (*cat, aligned, unaligned, longer)


def _pair_set(tmp_path, a: dict, b: dict):
    """One set of step pairs that mixes equal pairs (prefill: B's edits are in its decode steps)
    with edited ones (decode), in an order of neither kind."""
    from vtui.analysis.diff.kernels import StepPairSet
    from vtui.analysis.diff.steps import matched_pairs

    runs = [Run(load_trace(write(tmp_path, name, t), cache=False), name) for name, t in (("a", a), ("b", b))]
    d = diff_runs(runs[:1], runs[1:])
    ka, kb = d.a_kernels[0], d.b_kernels[0]
    assert ka is not None and kb is not None
    pa_d, pb_d = matched_pairs(d.a_steps[0], d.b_steps[0], "decode")
    pa_p, pb_p = matched_pairs(d.a_steps[0], d.b_steps[0], "prefill")
    order_a = np.r_[pa_d[:2], pa_p[:1], pa_d[2:5], pa_p[1:], pa_d[5:]]
    order_b = np.r_[pb_d[:2], pb_p[:1], pb_d[2:5], pb_p[1:], pb_d[5:]]
    return d, StepPairSet("mixed", ka, order_a, kb, order_b)


@pytest.mark.parametrize("edit", [Edit(), Edit(rename={GEMM: "Cijk_Alik_Bljk_BBS_MT128x128x64"}),
                                  Edit(drop={ACT}, step_first_us={3: 40.0}),
                                  Edit(add_after={NORM: ("aten::copy_", "void copy_kernel<float>()", 5.0)})])
def test_pair_sets_aligned_as_pair_by_pair(tmp_path, monkeypatch, edit):
    d, ps = _pair_set(tmp_path, engine_loop(decodes=12, noise=0.02, seed=1),
                      engine_loop(decodes=12, noise=0.02, seed=1, edit=edit))
    empty = d.vocab.id("")
    got = kernels_mod._align_set(ps, empty, {})
    want = _plain_alignments(ps, empty, {})
    for g, w in zip((got.a, got.b, got.level, got.removed, got.added), want[:5]):
        assert np.array_equal(g, w)
    assert (got.aligned, got.unaligned, got.longer) == want[5:]
    monkeypatch.setattr(kernels_mod, "MAX_CELLS", 1)  # differing pairs too costly: counted, not aligned
    got = kernels_mod._align_set(ps, empty, {})
    want = _plain_alignments(ps, empty, {})
    for g, w in zip((got.a, got.b, got.level, got.removed, got.added), want[:5]):
        assert np.array_equal(g, w)
    assert (got.aligned, got.unaligned, got.longer) == want[5:]
    assert got.unaligned == (0 if edit == Edit() else 12)


@pytest.mark.parametrize("shape", [(500, 4, 6), (500, 4, 1 << 20), (3000, 3, 40), (0, 4, 5)])
def test_groups_are_a_row_unique(shape):
    n, cols, high = shape
    keys = np.random.default_rng(n + cols).integers(0, high, size=(n, cols)).astype(np.int64)
    keys[: n // 2] = keys[n // 2: n // 2 * 2]  # repeated rows
    got, inv = kernels_mod._groups(list(keys.T))
    if not n:
        assert got.shape == (0, cols) and not len(inv)
        return
    want, want_inv = np.unique(keys, axis=0, return_inverse=True)
    assert np.array_equal(got, want) and np.array_equal(inv, want_inv.reshape(-1))


def _plain_run_steps(store):
    """A run's steps as the full step and serving reports give them."""
    st = analyse_steps(store)
    sv = analyse_serving(store, st)
    fallback = pattern_kind(st.pattern)
    return ([s.kind if s.kind != UNKNOWN else fallback for s in sv.steps], [s.row for s in sv.steps],
            [s.start_ns for s in sv.steps], [s.dur_ns for s in sv.steps],
            [s.prefill_requests + s.decode_requests for s in sv.steps],
            [s.prefill_tokens + s.decode_tokens for s in sv.steps], sv.ttft_ns, st.pattern)


def _check_run_steps(store):
    got = run_steps(store, "x")
    kinds, rows, starts, durs, batch, tokens, ttft, pattern = _plain_run_steps(store)
    assert got.kinds == kinds and got.rows.tolist() == rows and got.starts.tolist() == starts
    assert got.durations.tolist() == durs and got.batch.tolist() == batch and got.tokens.tolist() == tokens
    assert got.ttft_ns == ttft and got.pattern == pattern


def test_run_steps_are_the_serving_reports_steps(tmp_path):
    store = load_trace(write(tmp_path, "loop", engine_loop(prefills=2, decodes=9)), cache=False)
    _check_run_steps(store)
    got = run_steps(store, "x")
    assert got.ttft_ns is not None and got.kinds[:2] == [PREFILL, PREFILL] and MIXED not in got.kinds


@pytest.mark.parametrize("name", SHARED_TRACES)
def test_run_steps_on_shared_traces(shared_traces, name):
    _check_run_steps(_shared(shared_traces, name))


@pytest.mark.parametrize("name", SHARED_TRACES)
def test_masks_and_device_names_on_shared_traces(shared_traces, name):
    import re

    store = _shared(shared_traces, name)
    s = store.slices
    absent = cat_mask(store, {"no such category"})
    assert absent.shape == (len(s),) and not absent.any()
    for cats in ({"kernel"}, {"cpu_op", "user_annotation"}, {"python_function"}):
        plain = np.array([store.strings[c].lower() in cats for c in s.cat_id.tolist()], dtype=bool)
        assert np.array_equal(cat_mask(store, cats), plain)
    rx = re.compile(r"^aten::(mm|addmm)$")
    plain = np.array([bool(rx.search(store.strings[n])) for n in s.name_id.tolist()], dtype=bool)
    assert np.array_equal(name_mask(store, rx), plain)
    assert not helper_mask(store)[np.flatnonzero(store.tracks.kind_is("gpu")[s.track])].any()
    assert device_names(store) == trace_device(store).names


def test_parity_shapes_in_a_fixed_order():
    from vtui.analysis.diff.parity import Fingerprint, parity

    ops_a = {f"aten::op{k}": f"[[{k}]]" for k in range(6)}
    ops_b = {op: "[[0]]" for op in reversed(list(ops_a))}
    got = [p.what for p in parity(Fingerprint(ops=ops_a, op_names=set(ops_a)), Fingerprint(ops=ops_b, op_names=set(ops_b)))]
    assert got == [f"shapes of aten::op{k}" for k in range(1, 6)]  # A's order (its main operators by time)
