"""The app's side of a first open through the loader process: the entry the loader has just
written is mapped without a second pass over its columns (checksums, id bounds, order: the loader
built and checked that store), and what cannot be skipped cheaply is still checked."""

from __future__ import annotations

import shutil

import numpy as np

from tests.helpers import FIXTURES
from vtui.load import background as loading
from vtui.load.trace import load_trace, trace_files
from vtui.store import cache


def _copy(tmp_path):
    path = tmp_path / "trace.json.gz"
    shutil.copy(FIXTURES / "hf_llama_stack.json.gz", path)
    return path


def _no_pass(*args, **kwargs):
    raise AssertionError("a pass over the columns")


def test_the_loaders_entry_is_mapped_without_a_pass_over_its_columns(tmp_path, monkeypatch):
    path = _copy(tmp_path)
    monkeypatch.setattr(loading, "PROCESS_THRESHOLD", 0)  # the loader process, for a small file
    # Patched here only: the spawned loader builds and saves as ever.
    for name in ("_check_invariants", "_check_bounds", "checksum"):
        monkeypatch.setattr(cache, name, _no_pass)
    store = loading.load_in_background(path, lambda _: None)
    ref = load_trace(path, cache=False)
    assert store.event_count == ref.event_count
    assert np.array_equal(store.slices.start_ns, ref.slices.start_ns)
    assert store.sources[0].path == str(path)


def test_without_verify_a_truncated_column_is_still_refused(tmp_path):
    path = _copy(tmp_path)
    load_trace(path)  # writes the entry
    key = cache.entry_key(trace_files(path))
    assert key is not None
    column = cache.cache_root() / key / "slices.start_ns.npy"
    column.write_bytes(column.read_bytes()[:-8])
    assert cache.open_entry(key, verify=False) is None
    assert "truncated" in cache.last_problem


def test_a_reopen_still_verifies(tmp_path, monkeypatch):
    path = _copy(tmp_path)
    load_trace(path)
    seen = []
    real = cache._check_invariants
    monkeypatch.setattr(cache, "_check_invariants", lambda *a: (seen.append(1), real(*a)))
    assert loading.reopen_cached(path) is not None and seen == [1]
