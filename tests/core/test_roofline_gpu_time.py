"""The roofline's GPU time per operator (the device work launched from inside it): the C helper's
merge (``launched_sum``) gives what numpy's binary searches give, on real traces, on several
threads, and on operators out of time order (where the helper declines and numpy answers)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import FIXTURES, MI250, QWEN
from vtui.analysis.base.launched import launch_table
from vtui.analysis.gpu import roofline
from vtui.load.trace import load_trace
from vtui.present.roofline_json import roofline_json

needs_c = pytest.mark.skipif(roofline._launched_sum is None, reason="_vtui_fastcols is not built: only numpy's path exists")


def _ops(store) -> np.ndarray:
    fam = roofline._family_codes(store)
    mask = roofline._candidates(store, fam)
    return roofline._outermost(store, np.flatnonzero(mask), mask)


def _plain(store, ops) -> list[int]:
    """Per op: the summed length of the device work whose launch call lies inside it (same thread)."""
    s = store.slices
    t = launch_table(store)
    out = []
    for r in ops.tolist():
        inside = (t[4] == s.track[r]) & (t[2] >= s.start_ns[r]) & (t[3] <= s.end_ns[r])
        out.append(int((t[6] - t[5])[inside].sum()))
    return out


@needs_c
@pytest.mark.parametrize("path", [QWEN, MI250, FIXTURES / "ranks" / "x" / "hta__sampled_rank-0.json"], ids=lambda p: p.name)
def test_c_merge_equals_numpy_and_a_plain_count(path):
    store = load_trace(path, cache=False)
    ops = _ops(store)
    fast, ref = roofline._gpu_time(store, ops), roofline._gpu_time(store, ops, use_c=False)
    assert np.array_equal(fast, ref) and fast.sum() > 0
    some = ops[:: max(1, len(ops) // 300)]  # the plain count is one pass per op
    assert roofline._gpu_time(store, some).tolist() == _plain(store, some)


@needs_c
def test_ops_on_several_threads_and_out_of_order(tmp_path):
    store = load_trace(QWEN, cache=False)
    ops = _ops(store)
    threads = np.unique(np.asarray(store.slices.track[ops]))
    assert len(threads) >= 1
    shuffled = np.random.default_rng(3).permutation(ops)  # not in time order: numpy's path sorts them
    want = roofline._gpu_time(store, ops, use_c=False)
    got = roofline._gpu_time(store, shuffled)
    position = {r: i for i, r in enumerate(ops.tolist())}
    assert got.tolist() == [int(want[position[r]]) for r in shuffled.tolist()]


@pytest.mark.parametrize("path", [QWEN, FIXTURES / "hf_llama_stack.json.gz"], ids=lambda p: p.name)
def test_groups_by_table_and_by_sorting_agree(path, monkeypatch):
    """(name, shape) groups counted in a small table (the usual case) or sorted (many shapes): one report."""
    import msgspec

    store = load_trace(path, cache=False)
    by_table = msgspec.json.encode(roofline_json(roofline.analyse_roofline(store)))
    monkeypatch.setattr(roofline, "KEY_TABLE_PER_ROW", -10**9)
    again = load_trace(path, cache=False)
    assert msgspec.json.encode(roofline_json(roofline.analyse_roofline(again))) == by_table
