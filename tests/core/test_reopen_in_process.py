"""A reopen of a cached trace maps the entry in the app's own process: no loader process
(whose start alone, a Python with numpy and vtui, cost ~0.5 s of the ~1 s to the first frame)."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers import FIXTURES
from vtui.errors import TraceLoadError
from vtui.io.argsfile import MappedBlob
from vtui.load import background as loading
from vtui.load.trace import load_trace, open_cached
from vtui.store import cache


def _copy(tmp_path):
    path = tmp_path / "trace.json.gz"
    shutil.copy(FIXTURES / "hf_llama_stack.json.gz", path)
    return path


class _NoProcess:
    def Process(self, *args, **kwargs):  # noqa: N802 — multiprocessing's spelling
        raise AssertionError("a loader process was started for a cached trace")


def test_reopen_maps_the_entry_without_a_loader_process(tmp_path, monkeypatch):
    path = _copy(tmp_path)
    first = load_trace(path)  # writes the entry
    assert len(cache.list_entries()) == 1
    monkeypatch.setattr(loading, "PROCESS_THRESHOLD", 0)  # a first open of this file would take the process path
    monkeypatch.setattr(loading.mp, "get_context", lambda *_: _NoProcess())
    seen: list[float] = []
    store = loading.load_in_background(path, seen.append)
    assert isinstance(store.args_blob, MappedBlob)
    assert seen == [1.0]
    assert len(store.slices) == len(first.slices) and store.event_count == first.event_count
    assert store.sources[0].path == str(path)


def test_no_cache_flag_never_reads_the_entry(tmp_path, monkeypatch):
    path = _copy(tmp_path)
    load_trace(path)
    calls = []
    monkeypatch.setattr(loading, "open_cached", lambda p: calls.append(p))
    loading.load_in_background(path, lambda _: None, cache=False)
    assert calls == []


def test_open_cached_without_an_entry(tmp_path):
    path = _copy(tmp_path)
    assert open_cached(path) is None
    load_trace(path)
    assert open_cached(path) is not None
    with pytest.raises(TraceLoadError):
        open_cached(tmp_path / "missing.json")


def test_a_path_the_system_refuses_is_a_one_line_error(tmp_path):
    """open_cached runs before the loader's own checks: its OSError (a name too long here) is the
    same one-line TraceLoadError, not an exception the app reports as an internal error."""
    with pytest.raises(TraceLoadError, match="too long"):
        loading.load_in_background(tmp_path / ("a" * 300 + ".json"), lambda _: None, cache=True)
