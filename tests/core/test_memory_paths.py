"""Memory analysis: the numpy path over [memory] instants gives what the event-by-event path
gives (devices, series, skipped counts), on real traces and on odd values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vtui.analysis.gpu.memory import MAX_BYTES, _by_device, _by_device_vectorised, _memory_args, _MemoryArgs
from vtui.load.trace import load_trace

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _same(a, b) -> None:
    (per_a, skipped_a), (per_b, skipped_b) = a, b
    assert skipped_a == skipped_b
    assert sorted(per_a) == sorted(per_b)
    for dev in per_a:
        for x, y in zip(per_a[dev], per_b[dev]):
            assert (x is None) == (y is None)
            if x is not None:
                assert x.tolist() == y.tolist()


@pytest.mark.parametrize("name", ["hf_llama_stack.json.gz", "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"])
def test_both_paths_agree_on_real_traces(name):
    store = load_trace(FIXTURES / name, cache=False)
    inst = store.instants
    ids = [i for i, s in enumerate(store.strings) if s == "[memory]"]
    rows = np.flatnonzero(np.isin(inst.name_id, ids))
    rows = rows[np.argsort(inst.ts_ns[rows], kind="stable")]
    args = _memory_args(store, rows)
    got = _by_device_vectorised(inst.ts_ns[rows], args)
    assert got is not None and got[0]
    _same(got, _by_device(inst.ts_ns[rows], args))


def test_both_paths_agree_on_missing_and_out_of_range_values():
    big = MAX_BYTES + 1
    args = [
        _MemoryArgs(100, 1000, 2000, 1, 0), _MemoryArgs(-50, 950, 2000, 1, 0), _MemoryArgs(None, 5, 5, 1, 0),
        _MemoryArgs(big, 1, 1, 1, 0), _MemoryArgs(7, -big, None, 1, 0), _MemoryArgs(8, None, 3, 1, 0),
        _MemoryArgs(9, 10, 11, 1, -1), _MemoryArgs(9, 10, 11, 1, None), _MemoryArgs(3, 4, 5, None, 2),
        _MemoryArgs(1, 2, 3, 0, None), _MemoryArgs(1, 2, None, 77, 1),
    ]
    times = np.arange(len(args), dtype=np.int64) * 10
    got = _by_device_vectorised(times, args)
    assert got is not None
    _same(got, _by_device(times, args))
    assert got[1] == 2  # the two events with an out-of-range value


def test_values_numpy_cannot_take_go_event_by_event():
    times = np.arange(3, dtype=np.int64)
    for odd in (True, "12", 1.5, 1 << 70):
        assert _by_device_vectorised(times, [_MemoryArgs(1, 1, 1, 1, 0), _MemoryArgs(odd, 1, 1, 1, 0),
                                             _MemoryArgs(2, 2, 2, 1, 0)]) is None
