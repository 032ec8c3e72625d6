"""The fast paths behind Insights on a big trace give what the plain paths give: [memory] args
decoded as ints from a padded byte grid against event-by-event decoding, the per-store mask memo
against masks built slice by slice in Python, a shared range selection, and interval unions with
and without the sort."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import FIXTURES, SHARED_TRACES, union_length, write_trace
from vtui.analysis.base.stats import merge_intervals
from vtui.analysis.gpu.memory import (
    MEMORY_EVENT,
    _args_json,
    _by_device,
    _by_device_columns,
    _int_columns,
    _memory_args,
    _MemoryArgs,
    analyse_memory,
    memory_args_one_by_one,
)
from vtui.analysis.report.insights import compute_insights
from vtui.analysis.slices.operators import hint_for
from vtui.load.trace import load_trace
from vtui.present import insights_json
from vtui.present.insights_json import insights_dict
from vtui.store import devices
from vtui.store.slicetime import clipped_bounds, range_slices, self_times


def _memory_rows(store) -> np.ndarray:
    ids = [i for i, s in enumerate(store.strings) if s == MEMORY_EVENT]
    inst = store.instants
    rows = np.flatnonzero(np.isin(inst.name_id, ids))
    return rows[np.argsort(inst.ts_ns[rows], kind="stable")]


_one_by_one = memory_args_one_by_one  # the plain path: each event's args decoded on its own


def _values(a: _MemoryArgs) -> tuple:
    return tuple((type(v), v) for v in (a.bytes, a.total_allocated, a.total_reserved, a.device_type, a.device_id))


def _series(per_skipped) -> tuple:
    per, skipped = per_skipped
    return skipped, {dev: [None if x is None else (x.dtype.str, x.tolist()) for x in s] for dev, s in per.items()}


def _traces_with_memory() -> list[Path]:
    paths = sorted(FIXTURES.glob("*.json*"))
    paths += sorted(SHARED_TRACES.rglob("*.json*")) if SHARED_TRACES.is_dir() else []
    return [p for p in paths if b"[memory]" in _text(p)]


def _text(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


# ---- [memory]: the int grid against event by event ---------------------------------------------
@pytest.mark.parametrize("path", _traces_with_memory(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_memory_int_path_equals_event_by_event_on_real_traces(path: Path):
    store = load_trace(path, cache=False)
    rows = _memory_rows(store)
    times = store.instants.ts_ns[rows]
    cols = _int_columns(store, rows)
    assert cols is not None  # real traces write plain integers: the fast path runs
    assert _series(_by_device_columns(times, cols)) == _series(_by_device(times, _one_by_one(store, rows)))


def test_memory_int_path_in_small_chunks_equals_event_by_event(monkeypatch):
    from vtui.analysis.gpu import memory

    store = load_trace(FIXTURES / "hf_llama_stack.json.gz", cache=False)
    rows = _memory_rows(store)
    times = store.instants.ts_ns[rows]
    want = _series(_by_device(times, _one_by_one(store, rows)))
    for chunk in (7, len(rows) - 1, len(rows)):  # a short last chunk, one event, none
        monkeypatch.setattr(memory, "_CHUNK", chunk)
        cols = _int_columns(store, rows)
        assert cols is not None and _series(_by_device_columns(times, cols)) == want


def _memory_event(ts: int, args) -> dict:
    event = {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "s": "t"}
    if args is not None:
        event["args"] = args
    return event


def _check_against_one_by_one(path: Path, cache: bool) -> tuple[object, list]:
    store = load_trace(path, cache=cache)
    if cache:
        store = load_trace(path)  # reopened from the entry: the args blob is a mapped file
    rows = _memory_rows(store)
    times = store.instants.ts_ns[rows]
    plain = _one_by_one(store, rows)
    assert list(map(_values, _memory_args(store, rows))) == list(map(_values, plain))  # the batch, any values
    cols = _int_columns(store, rows)
    want = _series(_by_device(times, plain))
    if cols is not None:
        assert _series(_by_device_columns(times, cols)) == want
    return cols, want


@pytest.mark.parametrize("cache", [False, True])
def test_memory_grid_pads_empty_args_and_reads_the_blobs_last_bytes(tmp_path: Path, cache: bool):
    long = {"Device Type": 1, "Device Id": 0, "Addr": 123456789, "Bytes": 4096, "Total Allocated": 4096,
            "Total Reserved": 1 << 21, "note": "x" * 60}
    events = [{"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {"k": "v" * 50}},
              _memory_event(1, long), _memory_event(2, None), _memory_event(3, {}),
              _memory_event(4, {"Bytes": -4096, "Device Type": 1, "Device Id": 0, "Total Allocated": 0}),
              _memory_event(5, {"Bytes": 7})]  # the shortest args last: its window runs past the blob's end
    path = write_trace(tmp_path, events)
    store = load_trace(path, cache=False)
    rows = _memory_rows(store)
    width = int(store.instants.args_len[rows].max())
    assert int(store.instants.args_off[rows].max()) + width > len(store.args_blob)  # the tail case is here
    cols, (skipped, per) = _check_against_one_by_one(path, cache)
    assert cols is not None and skipped == 0 and sorted(per) == ["?", "cuda:0"]


@pytest.mark.parametrize("odd", ['"12"', "1.0", "1.5", "true", "null", "-9223372036854775808", str(1 << 63),
                                 "1e300", "[1]", '{"a": 1}'])
def test_memory_values_that_are_not_int64_take_the_general_path(tmp_path: Path, odd: str):
    text = ('{"traceEvents": [' + json.dumps(_memory_event(1, {"Bytes": 8, "Device Type": 1, "Device Id": 0}))
            + ',{"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":2,"s":"t","args":{"Bytes":' + odd
            + ',"Device Type":1,"Device Id":0,"Total Allocated":' + odd + '}}]}')
    path = tmp_path / "t.json"
    path.write_text(text)
    cols, _ = _check_against_one_by_one(path, cache=False)
    assert cols is None
    store = load_trace(path, cache=False)
    rows = _memory_rows(store)
    plain = _series(_by_device(store.instants.ts_ns[rows], _one_by_one(store, rows)))
    m = analyse_memory(store)
    assert sorted(d.device for d in m.devices) == sorted(plain[1]) and m.skipped == plain[0]


def test_memory_args_not_objects_fall_back_event_by_event(tmp_path: Path):
    events = [_memory_event(1, {"Bytes": 8, "Device Type": 1, "Device Id": 0}), _memory_event(2, [1, 2]),
              _memory_event(3, "text"), _memory_event(4, {"Bytes": -8, "Device Type": 1, "Device Id": 0})]
    cols, (skipped, per) = _check_against_one_by_one(write_trace(tmp_path, events), cache=False)
    assert cols is None and list(per) == ["cuda:0"] and per["cuda:0"][1][1] == [8, -8]


def test_memory_one_huge_args_object_is_joined_not_padded(tmp_path: Path):
    events = [_memory_event(i, {"Bytes": i, "Device Type": 1, "Device Id": 0}) for i in range(1, 50)]
    events.append(_memory_event(60, {"Bytes": 3, "Device Type": 1, "Device Id": 0, "pad": "y" * (2 << 20)}))
    path = write_trace(tmp_path, events)
    store = load_trace(path, cache=False)
    batch = _args_json(store, _memory_rows(store))
    assert isinstance(batch, bytes) and len(batch) < (3 << 20)  # joined: no 50 rows of 2 MiB
    cols, (skipped, per) = _check_against_one_by_one(path, cache=False)
    assert cols is not None and per["cuda:0"][1][1] == [*range(1, 50), 3]


# ---- the per-store mask memo --------------------------------------------------------------------
def _plain_masks(store) -> dict[str, np.ndarray]:
    cats = [store.strings[c].lower() for c in store.slices.cat_id.tolist()]
    names = [store.strings[n] for n in store.slices.name_id.tolist()]
    kind = {c: devices.KERNEL for c in devices.KERNEL_CATS} | {c: devices.MEMCPY for c in devices.MEMCPY_CATS} | {
        c: devices.MEMSET for c in devices.MEMSET_CATS}
    return {
        "kernel": np.array([c in devices.KERNEL_CATS for c in cats], dtype=bool),
        "runtime": np.array([c in devices.RUNTIME_CATS for c in cats], dtype=bool),
        "step": np.array([bool(devices.STEP_ANNOTATION.search(n)) for n in names], dtype=bool),
        "sync": np.array([bool(devices.SYNC_NAME.search(n)) for n in names], dtype=bool),
        "kinds": np.array([kind.get(c, 0) for c in cats], dtype=np.int8),
        "thread": np.array([store.tracks[t].kind == "thread" for t in store.slices.track.tolist()], dtype=bool),
    }


@pytest.mark.parametrize("name", ["tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                                  "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz", "kineto__worker0_first_step.json.gz"])
def test_memoised_masks_equal_masks_made_slice_by_slice_and_are_read_only(name: str):
    store = load_trace(FIXTURES / name, cache=False)
    want = _plain_masks(store)
    assert want["kinds"].any()  # Kineto categories decide (the name fallback is tested elsewhere)
    for _ in range(2):  # computed, then from the memo
        got = {"kernel": devices.cat_mask(store, devices.KERNEL_CATS),
               "runtime": devices.cat_mask(store, devices.RUNTIME_CATS),
               "step": devices.name_mask(store, devices.STEP_ANNOTATION),
               "sync": devices.name_mask(store, devices.SYNC_NAME),
               "kinds": devices.device_work_kinds(store),
               "thread": devices.on_thread_track(store)}
        for key, mask in got.items():
            assert mask.dtype == want[key].dtype and mask.tolist() == want[key].tolist(), key
            with pytest.raises(ValueError):
                mask[:1] = 0  # shared by every caller: nobody may change it
    # Keys do not collide: another set of categories, or the same pattern with other flags.
    assert devices.cat_mask(store, {"cpu_op"}).tolist() == [
        store.strings[c].lower() == "cpu_op" for c in store.slices.cat_id.tolist()]
    upper = re.compile("ATEN::")
    assert not devices.name_mask(store, upper).any()
    assert devices.name_mask(store, re.compile("ATEN::", re.I)).tolist() == [
        "aten::" in store.strings[n].lower() for n in store.slices.name_id.tolist()]


@pytest.mark.parametrize("name", ["hf_llama_stack.json.gz", "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"])
def test_insights_with_a_fresh_store_per_analysis_equal_one_pass(name: str):
    """Memo and shared selection change nothing: every analysis run alone on a new store agrees."""
    path = FIXTURES / name
    one_pass = insights_dict(compute_insights(load_trace(path, cache=False)))
    from vtui.analysis.report import insights as mod

    fresh = {key: getattr(mod, fn)(load_trace(path, cache=False), None, *top)
             for key, fn, top in (("ops", "analyse_ops", [15]), ("gpu", "analyse_gpu", [15]),
                                  ("memory", "analyse_memory", []), ("caches", "analyse_caches", []),
                                  ("python", "analyse_python", []))}
    assert one_pass["gpu"] == insights_json.gpu_dict(fresh["gpu"])
    assert one_pass["memory"] == insights_json.memory_dict(fresh["memory"])
    assert one_pass["ops"] == [
        {"name": r.name, "self_ns": r.self_ns, "total_ns": r.total_ns, "count": r.count, "pct": r.pct,
         "total_pct": r.total_pct, "hint": (hint_for(r.name) or (None, None))[1]} for r in fresh["ops"].by_self]
    assert one_pass["python"]["python_self_ns"] == fresh["python"].python_self_ns
    assert one_pass["caches"]["events"] == fresh["caches"].events


def test_all_rows_out_of_order_are_not_taken_for_the_whole_trace():
    """The whole-trace shortcuts (no gather, no row mapping) need every row in order; the same
    number of rows in another order or with repeats goes the general way."""
    store = load_trace(FIXTURES / "hf_llama_stack.json.gz", cache=False)
    n, span = len(store.slices), int(store.span_ns)
    t0, t1 = span // 5, span // 2
    every = np.arange(n)
    start, end = clipped_bounds(store, every, t0, t1)
    for rows in (every[::-1], np.concatenate([[1], every[1:]]), np.concatenate([every[:-1], [n - 2]])):
        got_start, got_end = clipped_bounds(store, rows, t0, t1)
        assert got_start.tolist() == start[rows].tolist() and got_end.tolist() == end[rows].tolist()
    # Self time of every row given in reverse order: the same figures, reversed.
    whole = range_slices(store, 0, span)
    backwards = self_times(store, every[::-1], whole.start[::-1], whole.end[::-1])
    assert backwards.tolist() == whole.self_ns[::-1].tolist()


# ---- interval unions: in order already, or sorted first ----------------------------------------
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_merge_intervals_in_order_or_not_equal_a_plain_sweep(seed: int):
    rng = np.random.default_rng(seed)
    starts = np.sort(rng.integers(0, 1000, 300))
    ends = starts + rng.integers(0, 40, 300)
    for order in (np.arange(300), rng.permutation(300)):
        a, b = merge_intervals(starts[order], ends[order])
        pairs = list(zip(starts.tolist(), ends.tolist()))
        assert int((b - a).sum()) == union_length(pairs)
        assert (a[1:] > b[:-1]).all() and (b >= a).all()
        assert all(any(x <= s and e <= y for x, y in zip(a.tolist(), b.tolist())) for s, e in pairs)


def test_args_json_of_no_rows_is_an_empty_array():
    import numpy as np

    from tests.helpers import STACK
    from vtui.analysis.gpu.memory import _args_json
    from vtui.load.trace import load_trace

    assert bytes(_args_json(load_trace(STACK, cache=False), np.zeros(0, dtype=np.int64))) == b"[]"


# ---- op shapes (the roofline's args), batch against one by one ------------------------------------
def _shapes_one_by_one(store, rows) -> list[tuple]:
    from vtui.analysis.base.shapes import _one

    s = store.slices
    out = []
    for o, n in zip(s.args_off[rows].tolist(), s.args_len[rows].tolist()):
        sh = _one(store.args_blob[o : o + n] if n > 0 else b"{}")
        out.append((bytes(sh.dims), bytes(sh.types), bytes(sh.concrete)))
    return out


@pytest.mark.parametrize("name", ["tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "hf_llama_stack.json.gz"])
def test_shapes_from_the_byte_grid_match_one_by_one(name, monkeypatch):
    from vtui.analysis.base import shapes

    store = load_trace(FIXTURES / name, cache=False)
    rows = np.arange(len(store.slices))  # every slice: with and without args, every length
    want = _shapes_one_by_one(store, rows)
    monkeypatch.setattr(shapes, "_one", None)  # the batch itself must give them (no fallback)
    got = [(bytes(sh.dims), bytes(sh.types), bytes(sh.concrete)) for sh in shapes.decode_shapes(store, rows)]
    assert got == want
    assert any(d != b"null" for d, _, _ in got)  # the fixture has shapes


def test_shapes_of_args_that_are_not_objects_fall_back_one_by_one(tmp_path: Path):
    from vtui.analysis.base.shapes import decode_shapes

    events = [{"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5,
               "args": {"Input Dims": [[i, 4], [4, 8]], "Input type": ["float", "float"]}} for i in range(1, 20)]
    events.append({"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 500, "dur": 5, "args": [1, 2]})
    store = load_trace(write_trace(tmp_path, events), cache=False)
    rows = np.arange(len(store.slices))
    got = [(bytes(sh.dims), bytes(sh.types), bytes(sh.concrete)) for sh in decode_shapes(store, rows)]
    assert got == _shapes_one_by_one(store, rows)
    assert sum(d != b"null" for d, _, _ in got) == 19
