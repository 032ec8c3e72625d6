"""The store build's faster paths give what the plain ones gave: the linear and radix-sort
helpers of the lane pass, the threads of a big build (the containment tree, the flow chains),
and one malloc arena during a load (a thread started then reuses the load's heap)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

import vtui.store.build as build
from tests.helpers import FIXTURES, QWEN
from vtui.load.trace import load_trace
from vtui.store import nesting


def test_group_ends_is_the_searchsorted_of_the_runs() -> None:
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 500):
        values = np.sort(rng.integers(0, max(n // 3, 1), n))
        assert np.array_equal(nesting._group_ends(values), np.searchsorted(values, values, side="right"))


@pytest.mark.parametrize("top", [0, 5, 70_000])  # 70 000: past 16 bits, the plain sort
def test_by_depth_is_the_stable_argsort(top: int) -> None:
    rng = np.random.default_rng(top)
    depth = rng.integers(0, top + 1, 3000).astype(np.int64)
    assert np.array_equal(nesting._by_depth(depth), np.argsort(depth, kind="stable"))


def _tracks(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Three tracks of nested, tied, zero-length and partly overlapping slices, sorted as the
    build sorts them; async-like subgroups on some rows."""
    starts, ends, track = [], [], []
    for t in range(3):
        n = int(rng.integers(600, 2000))
        s = np.sort(rng.integers(0, 20_000, n))
        e = s + rng.integers(0, 300, n) * (rng.random(n) < 0.9)
        starts.append(s)
        ends.append(e)
        track.append(np.full(n, t))
    s, e, tr = np.concatenate(starts), np.concatenate(ends), np.concatenate(track)
    order = np.lexsort((s - e, s, tr))
    s, e, tr = s[order], e[order], tr[order]
    bounds = np.searchsorted(tr, np.arange(4))
    sub = np.where(rng.random(len(s)) < 0.2, rng.integers(0, 3, len(s)), -1)
    return s, e, bounds, tr, sub


def test_nest_in_a_thread_is_nest_in_line(monkeypatch) -> None:
    rng = np.random.default_rng(11)
    for trial in range(6):
        s, e, bounds, tr, sub = _tracks(rng)
        tolerance = trial % 2
        monkeypatch.setattr(nesting, "THREAD_MIN", 10**12)
        plain = nesting.nest(s, e, bounds, tolerance, tr, sub)
        monkeypatch.setattr(nesting, "THREAD_MIN", 0)
        threaded = nesting.nest(s, e, bounds, tolerance, tr, sub)
        for f in dataclasses.fields(plain):
            a, b = getattr(plain, f.name), getattr(threaded, f.name)
            assert a.dtype == b.dtype and np.array_equal(a, b), (trial, f.name)


def _columns(store) -> dict[str, np.ndarray]:
    out = {}
    for table in ("slices", "instants", "counters", "flows"):
        t = getattr(store, table)
        for f in dataclasses.fields(t):
            out[f"{table}.{f.name}"] = getattr(t, f.name)
    return out


@pytest.mark.parametrize("trace", [QWEN, FIXTURES / "kineto__worker0_first_step.json.gz"])
def test_a_build_with_its_threads_is_the_build_without(monkeypatch, trace) -> None:
    monkeypatch.setattr(build, "FLOW_THREAD_MIN", 10**12)
    monkeypatch.setattr(nesting, "THREAD_MIN", 10**12)
    plain = load_trace(trace, cache=False, jobs=1)
    monkeypatch.setattr(build, "FLOW_THREAD_MIN", 0)
    monkeypatch.setattr(nesting, "THREAD_MIN", 0)
    threaded = load_trace(trace, cache=False, jobs=1)
    assert len(plain.flows) > 0
    a, b = _columns(plain), _columns(threaded)
    for name in a:
        assert a[name].dtype == b[name].dtype and np.array_equal(a[name], b[name]), name
    assert plain.warnings == threaded.warnings
    assert [dataclasses.asdict(t) for t in plain.tracks] == [dataclasses.asdict(t) for t in threaded.tracks]


_ARENAS = r"""
import ctypes, os, tempfile, threading
import numpy as np
from vtui.load import malloc

libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]

def heaps():
    path = tempfile.mktemp()
    fp = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    text = open(path).read()
    os.unlink(path)
    return text.count("<heap nr=")

kept = []
before = heaps()
with malloc.load_memory_settings():
    t = threading.Thread(target=lambda: kept.append(np.ones(1 << 20)))  # 8 MB, from a heap
    t.start()
    t.join()
print(heaps() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc")
def test_a_thread_started_during_a_load_uses_the_main_heap() -> None:
    """Its own arena would be fresh pages to fault in (the build's threads cost more than they saved)."""
    out = subprocess.run([sys.executable, "-c", _ARENAS], capture_output=True, text=True, check=True).stdout
    assert int(out) == 0


def test_distinct_ids_are_the_unique_values() -> None:
    from vtui.store.grouping import distinct_ids

    rng = np.random.default_rng(5)
    for n in (0, 1, 50, 3000):
        ids = rng.integers(-1, 40, n).astype(np.int32)
        assert distinct_ids(ids) == [int(v) for v in np.unique(ids) if v >= 0]
    assert distinct_ids(np.full(4, -1)) == []
