"""The build's tracks as columns (a million tracks without a Python object each): the whole-array TrackSet gives the
same tracks, in the same order, with the same slices on them, as the simple path it replaced (one
Track object per track, sorted by a Python key tuple: ``trackset_reference``), on the fixtures, on
the hostile corpus and on generated traces of many threads of odd shapes."""

from __future__ import annotations

import json
import random

import pytest

from tests.core import trackset_reference
from tests.helpers import FIXTURES, assert_same_columns
from tests.hostile_corpus import build_corpus
from vtui.errors import TraceLoadError
from vtui.load.trace import load_trace
from vtui.store import build

TRACES = sorted(p for p in FIXTURES.iterdir() if p.name.endswith((".json", ".json.gz", ".sqlite")))


def _both(path, monkeypatch):
    """The store of ``path`` built by the columns, then by the reference TrackSet."""
    fast = load_trace(path, cache=False, jobs=1)
    with monkeypatch.context() as m:
        m.setattr(build, "TrackSet", trackset_reference.TrackSet)
        simple = load_trace(path, cache=False, jobs=1)
    return fast, simple


def _assert_same(fast, simple) -> None:
    assert list(fast.tracks) == list(simple.tracks)
    assert fast.warnings == simple.warnings
    assert_same_columns(fast, simple)
    assert fast.tracks.check() is None


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_fixture_tracks_match_the_simple_path(path, monkeypatch):
    fast, simple = _both(path, monkeypatch)
    assert len(fast.tracks) > 0
    _assert_same(fast, simple)


def test_hostile_corpus_tracks_match_the_simple_path(tmp_path, monkeypatch):
    compared = 0
    for case, path in build_corpus(tmp_path).values():
        if not case.loads or case.needs:
            continue
        try:
            fast, simple = _both(path, monkeypatch)
        except TraceLoadError:
            continue
        _assert_same(fast, simple)
        compared += 1
    assert compared > 20


def _odd_threads(rng: random.Random, threads: int) -> list[dict]:
    """Threads of every id shape: int, digit string, name, missing; several processes (some named,
    some sorted), thread names and sort indices, B/E, async, instants of each scope, counters."""
    events: list[dict] = []
    pids = [1, 2, "gpu", 7, 10**20]
    for pid in pids[:3]:
        events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"proc {pid}"}})
    events.append({"ph": "M", "name": "process_sort_index", "pid": 2, "args": {"sort_index": -3}})
    events.append({"ph": "M", "name": "process_sort_index", "pid": 7, "args": {"sort_index": 2.5}})
    events.append({"ph": "M", "name": "process_labels", "pid": "gpu", "args": {"labels": "GPU 0"}})
    for k in range(threads):
        pid = rng.choice(pids)
        tid = rng.choice([k, str(k), f"worker-{k % 50}", -k, None, 2**70 + k])
        base = {"pid": pid, "ts": rng.randrange(10_000), "name": f"op{k % 13}", "cat": rng.choice(["cpu_op", "kernel"])}
        if tid is not None:
            base["tid"] = tid
        events.append({**base, "ph": "X", "dur": rng.randrange(1, 50)})
        roll = rng.random()
        if roll < 0.1:
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"t{k % 9}"}})
        elif roll < 0.15:
            events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                           "args": {"sort_index": rng.choice([-1, 0, 5, 1.5])}})
        elif roll < 0.2:
            events += [{**base, "ph": "B"}, {**base, "ph": "E", "ts": base["ts"] + 3}]
        elif roll < 0.25:
            events += [{**base, "ph": "b", "id": k % 5, "cat": "a"}, {**base, "ph": "e", "id": k % 5, "cat": "a", "ts": base["ts"] + 9}]
        elif roll < 0.3:
            events.append({**base, "ph": "i", "s": rng.choice(["t", "p", "g"])})
        elif roll < 0.35:
            events.append({**base, "ph": "C", "args": {"v": k, "w": 1}})
    return events


@pytest.mark.parametrize("seed", range(6))
def test_generated_many_threads_match_the_simple_path(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": _odd_threads(rng, rng.choice([50, 400, 2000]))}))
    fast, simple = _both(path, monkeypatch)
    assert len(fast.tracks) > 20
    _assert_same(fast, simple)


def test_plain_int_threads_take_the_numpy_path_and_match(tmp_path, monkeypatch):
    """Ints only (every usual trace): no dict over the thread ids; the same tracks still."""
    events = [{"ph": "X", "name": "a", "pid": p, "tid": t, "ts": t, "dur": 1} for p in (3, 1) for t in range(2000, 0, -7)]
    events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": 12, "args": {"name": "thread 5"}})  # a title twice
    path = tmp_path / "ints.json"
    path.write_text(json.dumps(events))
    fast, simple = _both(path, monkeypatch)
    _assert_same(fast, simple)
    assert [t.pid for t in fast.tracks[:2]] == [1, 1] and fast.tracks[0].tid == 5 and fast.tracks[1].name == "thread 5"
