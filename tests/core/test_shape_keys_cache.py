"""The ATen operators' shapes interned once, when the cache entry is written (``vtui.store.shapekeys``):
a store reopened from its entry reads the shape ids from there, and gets the very ids and texts
that reading the args gives (msgspec, the reference), for any rows in any order; the roofline is
the same report as without the cache; a damaged key column is refused and the entry rebuilt."""

from __future__ import annotations

import json
import shutil

import msgspec
import numpy as np
import pytest

from tests.helpers import FIXTURES, MI250, QWEN, SHARED_TRACES, STACK, write_entry_meta
from vtui.analysis.base import shapes
from vtui.analysis.gpu.roofline import _candidates, _family_codes, analyse_roofline
from vtui.load.trace import load_trace
from vtui.present.roofline_json import roofline_json
from vtui.store import cache, shapekeys

WITH_SHAPES = [QWEN, STACK, MI250, FIXTURES / "ranks" / "x" / "hta__sampled_rank-0.json",
               SHARED_TRACES / "public" / "tracelens__vllm_decode_full_graph_execution.json.gz"]

needs_c = pytest.mark.skipif(shapekeys._shape_keys is None, reason="_vtui_fastcols is not built: nothing is interned")


def _reopened(tmp_path, path):
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    load_trace(copy)  # writes the entry
    store = load_trace(copy)  # mapped from it
    assert isinstance(store.slices.name_id, np.memmap)
    return copy, store


def _per_row(ids: np.ndarray, triples: list) -> list:
    return [triples[i] for i in ids.tolist()]


@needs_c
@pytest.mark.parametrize("path", WITH_SHAPES, ids=lambda p: p.name)
def test_reopened_store_reads_the_same_shape_ids_as_the_args(tmp_path, path):
    if not path.exists():
        pytest.skip("shared trace absent")
    _copy, store = _reopened(tmp_path, path)
    keys = store.derived.get(shapekeys.MEMO)
    assert keys is not None and int(keys.keys.max()) >= 0
    interned = shapekeys.interned_rows(store)
    assert np.array_equal(np.flatnonzero(np.asarray(keys.keys) >= 0), interned)
    candidates = np.flatnonzero(_candidates(store, _family_codes(store)))
    rng = np.random.default_rng(7)
    some = rng.choice(interned, size=min(len(interned), 500), replace=False)  # any order, not the rows' own
    for rows in (interned, candidates, some, interned[::-1]):
        got = shapes.shape_ids(store, rows)
        assert shapes._from_keys(store, rows) is not None  # the interned path answered
        want = shapes.shape_ids(store, rows, pure_python=True)  # msgspec over every row's args
        assert np.array_equal(got[0], want[0]) and got[1] == want[1]


@needs_c
@pytest.mark.parametrize("path", [QWEN, MI250], ids=lambda p: p.name)
def test_roofline_from_the_entry_equals_the_one_without_cache(tmp_path, path):
    _copy, store = _reopened(tmp_path, path)
    fresh = load_trace(path, cache=False)
    assert shapekeys.MEMO not in fresh.derived  # no entry written: the args are read
    assert (msgspec.json.encode(roofline_json(analyse_roofline(store)))
            == msgspec.json.encode(roofline_json(analyse_roofline(fresh))))


def test_rows_not_interned_are_read_from_their_args(tmp_path):
    _copy, store = _reopened(tmp_path, QWEN)
    other = np.flatnonzero(~np.isin(np.arange(len(store.slices)), shapekeys.interned_rows(store)))[:200]
    assert shapes._from_keys(store, other) is None
    got, want = shapes.shape_ids(store, other), shapes.shape_ids(store, other, pure_python=True)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]


def _forge(entry, name: str, arr: np.ndarray) -> None:
    """Replace a derived array, meta.json agreeing with it (size, dtype, checksum)."""
    path = entry / f"derived.{name}.npy"
    np.save(path, arr, allow_pickle=False)
    meta = json.loads((entry / "meta.json").read_text())
    meta["arrays"][f"derived.{name}.npy"] = [arr.dtype.str, len(arr), path.stat().st_size, cache.checksum(arr)]
    write_entry_meta(entry, meta)


def _swap_first(keys, first):
    return "shape_first", first[::-1].copy()


def _past_the_ids(keys, first):
    keys = keys.copy()
    keys[int(np.flatnonzero(keys >= 0)[0])] = len(first)
    return "shape_key", keys


def _row_out_of_range(keys, first):
    first = first.copy()
    first[0] = len(keys)
    return "shape_first", first


def _short(keys, first):
    return "shape_key", keys[:-1].copy()


@needs_c
@pytest.mark.parametrize(("damage", "says"), [(_swap_first, "not at its first row"), (_past_the_ids, "id out of range"),
                                              (_row_out_of_range, "row out of range"), (_short, "dtype or shape")])
def test_a_forged_shape_key_column_is_refused_and_rebuilt(tmp_path, damage, says):
    copy, store = _reopened(tmp_path, QWEN)
    entry = cache.cache_root() / cache.entry_key([copy])
    keys = np.load(entry / "derived.shape_key.npy")
    first = np.load(entry / "derived.shape_first.npy")
    name, arr = damage(keys, first)
    _forge(entry, name, arr)
    again = load_trace(copy)
    assert "rebuilt from the trace" in again.warnings[0] and says in again.warnings[0], again.warnings[0]
    reopened = load_trace(copy)
    assert np.array_equal(reopened.derived[shapekeys.MEMO].keys, keys)  # written anew, right this time


@needs_c
def test_an_entry_of_the_format_before_is_rebuilt_with_the_keys(tmp_path):
    copy, _store = _reopened(tmp_path, QWEN)
    entry = cache.cache_root() / cache.entry_key([copy])
    meta = json.loads((entry / "meta.json").read_text())
    meta["format"] = cache.FORMAT - 1  # as the format before wrote it: no shape keys
    for name in list(meta["arrays"]):
        if name.startswith("derived."):
            del meta["arrays"][name]
            (entry / name).unlink()
    write_entry_meta(entry, meta)
    again = load_trace(copy)
    assert "rebuilt from the trace" in again.warnings[0] and "older entry" in again.warnings[0]
    assert shapekeys.MEMO in load_trace(copy).derived


@needs_c
def test_the_keys_are_the_same_scanned_in_small_chunks(monkeypatch):
    """The scan goes a chunk of rows at a time (each chunk's args pages unmapped after it): the ids
    are those of one scan of every row."""
    store = load_trace(STACK, cache=False)
    whole = shapekeys.build(store)
    monkeypatch.setattr(shapekeys, "CHUNK", 7)
    chunked = shapekeys.build(store)
    assert whole is not None and chunked is not None and len(whole.first) > 7
    assert np.array_equal(whole.keys, chunked.keys) and np.array_equal(whole.first, chunked.first)
    assert chunked.problem(len(store.slices)) is None
