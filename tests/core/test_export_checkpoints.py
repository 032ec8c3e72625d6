"""Export reads from the load's checkpoints (byte offset, ordinal) instead of the whole file: the
marks name the right events, and the output is byte for byte the full scan's (the reference)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.core.test_parallel import _doc, _events, _InProcess, _scan
from tests.helpers import FIXTURES, X, load_events
from vtui.export.trace import export_range
from vtui.io import columns, jsonscan, rawevents
from vtui.io.reader import open_trace_data
from vtui.load.trace import load_trace, open_cached
from vtui.options import LoadOptions

JSON_FIXTURES = sorted(p for p in FIXTURES.glob("*.json*"))
RANGES = [(0.0, 0.01), (0.3, 0.5), (0.9, 1.0), (0.0, 1.0)]


@pytest.fixture
def fine_marks(monkeypatch):
    """Small chunks and a mark at every one: many checkpoints even in a small fixture."""
    monkeypatch.setattr(columns, "MARK_STEP", 0)
    monkeypatch.setattr(jsonscan, "CHUNK", 4096)
    monkeypatch.setattr(jsonscan, "SMALL", 1024)


def _reference(store, out: Path, t0: int, t1: int) -> bytes:
    """The export as the full scan writes it (the store's checkpoints put aside)."""
    saved = [s.checkpoints for s in store.sources]
    for s in store.sources:
        s.checkpoints = []
    try:
        export_range(store, out, t0, t1, overwrite=True)
    finally:
        for s, c in zip(store.sources, saved):
            s.checkpoints = c
    return out.read_bytes()


class _FullScans:
    """Counts the full scans an export makes (rawevents' scan_trace)."""

    def __init__(self, monkeypatch) -> None:
        self.calls = 0
        real = rawevents.scan_trace

        def spy(*args, **kwargs):
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(rawevents, "scan_trace", spy)


@pytest.mark.parametrize("path", JSON_FIXTURES, ids=lambda p: p.name)
def test_export_from_checkpoints_equals_the_full_scan(tmp_path, fine_marks, monkeypatch, path):
    store = load_trace(path, cache=False)
    marks = store.sources[0].checkpoints
    if len(marks) < 3:
        pytest.skip("too few events for several checkpoints")
    full = _FullScans(monkeypatch)
    span = store.span_ns
    for a, b in RANGES:
        t0, t1 = int(span * a), int(span * b)
        ref = _reference(store, tmp_path / "ref.json", t0, t1)
        calls = full.calls
        plan = export_range(store, tmp_path / "new.json", t0, t1, overwrite=True)
        assert full.calls == calls  # read from a checkpoint, not from the file's start
        assert (tmp_path / "new.json").read_bytes() == ref, (a, b)
        again = load_trace(tmp_path / "new.json", cache=False)
        assert len(again.slices) == plan.counts["slices"]
        assert sorted(again.strings[n] for n in again.slices.name_id.tolist()) == \
            sorted(store.strings[n] for n in store.slices.name_id[_rows(store, t0, t1)].tolist())


def _rows(store, t0: int, t1: int) -> np.ndarray:
    from vtui.analysis.base.selection import slice_rows

    return slice_rows(store, t0, t1, None)


@pytest.mark.parametrize("parallel", [False, True])
def test_each_mark_is_where_its_event_starts(tmp_path, monkeypatch, parallel):
    """Against the file as written: event ``ordinal``'s own JSON starts at the mark's offset
    (also for marks that come back from decoder ranges, renumbered by the join)."""
    monkeypatch.setattr(columns, "MARK_STEP", 0)
    monkeypatch.setattr(jsonscan, "CHUNK", 900)
    events = _events(400)
    data = _doc(events)
    fast = _InProcess("unused", None, 4, min_range=64) if parallel else None
    _, cols, _ = _scan(data, tmp_path, fast)
    assert len(cols) == len(events)
    if parallel:  # (a range decodes in chunks of the default size: one mark per range here)
        assert len(fast.ranges) == 4 and len(cols.checkpoints) == 4
    else:
        assert len(cols.checkpoints) > 20
    for pos, ordinal in cols.checkpoints:
        assert data.startswith(json.dumps(events[ordinal], ensure_ascii=False).encode(), pos), (pos, ordinal)
    assert [p for p, _ in cols.checkpoints] == sorted({p for p, _ in cols.checkpoints})


def test_marks_are_kept_a_step_apart(tmp_path, monkeypatch):
    monkeypatch.setattr(columns, "MARK_STEP", 10_000)
    monkeypatch.setattr(jsonscan, "CHUNK", 900)
    data = _doc(_events(400))
    _, cols, _ = _scan(data, tmp_path)
    gaps = np.diff([p for p, _ in cols.checkpoints])
    assert len(gaps) >= 3 and (gaps >= 10_000).all()
    assert len(cols.checkpoints) >= len(data) // 10_000 // 2


def test_a_short_read_from_a_mark_starts_over_with_the_full_scan(tmp_path, fine_marks, monkeypatch):
    """Two top-level traceEvents arrays: a read from a mark in the first stops at its ``]``, short
    of the events in the second; the output is rewound and the full scan writes it."""
    one, two = _events(60), _events(60)
    for e in two:
        e["ts"] += 10_000
    body = [",\n".join(json.dumps(e) for e in part) for part in (one, two)]
    path = tmp_path / "two.json"
    path.write_text('{"traceEvents": [\n' + body[0] + '\n], "x": 1, "traceEvents": [\n' + body[1] + "\n]}")
    store = load_trace(path, cache=False)
    assert len(store.sources[0].checkpoints) > 3
    t0, t1 = 300_000, store.span_ns  # from inside the first array (0-600 µs) into the second
    ref = _reference(store, tmp_path / "ref.json", t0, t1)
    full = _FullScans(monkeypatch)
    export_range(store, tmp_path / "new.json", t0, t1, overwrite=True)
    assert full.calls == 1
    assert (tmp_path / "new.json").read_bytes() == ref


@pytest.mark.parametrize("marks", [[[5, 0], [3, 9]], [[0, 0, 0]], "x", [[10**12, 0]], [[-1, 0]], [[7, 3], [9, 3]]])
def test_marks_that_cannot_describe_the_file_are_not_used(marks):
    assert rawevents.usable_marks(marks, 1000) is None


def test_a_mark_not_at_an_event_start_falls_back_to_the_full_scan(tmp_path, fine_marks, monkeypatch):
    path = FIXTURES / "kineto__before_fix_trace.json"
    store = load_trace(path, cache=False)
    ref = _reference(store, tmp_path / "ref.json", 0, store.span_ns)
    pos, ordinal = store.sources[0].checkpoints[1]
    store.sources[0].checkpoints = [[pos + 1, ordinal]]  # inside the event, not at its '{'
    full = _FullScans(monkeypatch)
    export_range(store, tmp_path / "new.json", 0, store.span_ns, overwrite=True)
    assert full.calls == 1 and (tmp_path / "new.json").read_bytes() == ref


def test_checkpoints_come_back_from_the_cache(tmp_path, fine_marks):
    path = FIXTURES / "hf_llama_stack.json.gz"
    options = LoadOptions(cache_dir=tmp_path / "cache")
    first = load_trace(path, options=options)
    again = open_cached(path, tmp_path / "cache")  # the entry, mapped (None: not cached)
    assert again is not None
    assert again.sources[0].checkpoints == first.sources[0].checkpoints
    assert len(first.sources[0].checkpoints) > 10
    data = open_trace_data(path)[0]
    assert all(data[p : p + 1] == b"{" for p, _ in again.sources[0].checkpoints)
    t0, t1 = again.span_ns // 2, again.span_ns // 2 + again.span_ns // 100
    export_range(again, tmp_path / "new.json", t0, t1)
    assert (tmp_path / "new.json").read_bytes() == _reference(first, tmp_path / "ref.json", t0, t1)


def _whole_chains_by_dict(f, frows: np.ndarray) -> np.ndarray:
    """The plain-Python reference: a dict from (source, end event) to the edge ending there."""
    kept = set(frows.tolist())
    before = {(int(src), int(dst)): k for k, (src, dst) in enumerate(zip(f.source.tolist(), f.dst_event.tolist()))
              if dst >= 0}
    out = []
    for k in frows.tolist():
        edge, ok = k, True
        while f.src_event[edge] >= 0:
            prev = before.get((int(f.source[edge]), int(f.src_event[edge])))
            if prev is None:
                break
            if prev not in kept:
                ok = False
                break
            edge = prev
        if ok:
            out.append(k)
    return np.array(out, dtype=np.int64)


def _chains(n: int) -> list[dict]:
    """n s → t → t → f chains, each edge from one slice to the next (some chains reuse an id)."""
    out = []
    for i in range(n):
        base = i * 100
        for step, ph in enumerate("sttf"):
            out.append(X(f"op{step}", base + step * 10, 8, tid=1 + step))
            out.append({"ph": ph, "id": i % (n - 3), "name": "chain", "cat": "c", "pid": 1, "tid": 1 + step,
                        "ts": base + step * 10 + 1, **({"bp": "e"} if ph == "f" else {})})
    return out


def test_flow_chains_kept_as_the_plain_python_walk_keeps_them(tmp_path):
    from vtui.export.trace import _previous_edges, _whole_chains

    f = load_events(tmp_path, _chains(40)).flows
    assert len(f) > 100 and (_previous_edges(f) >= 0).sum() > 60  # real chains, edges before edges
    rng = np.random.default_rng(7)
    for share in (1.0, 0.7, 0.3):
        frows = np.flatnonzero(rng.random(len(f)) < share)
        assert np.array_equal(_whole_chains(f, frows), _whole_chains_by_dict(f, frows)), share


def test_a_narrow_range_decodes_only_the_events_near_it(tmp_path, fine_marks, monkeypatch):
    """Metadata at the file's start, the range in the middle: the read jumps from one checkpoint
    to the next instead of decoding every event between them."""
    meta = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "p"}}]
    store = load_events(tmp_path, meta + [X(f"op{i % 5}", i * 10, 5) for i in range(5000)])
    t0, t1 = store.span_ns // 2, store.span_ns // 2 + store.span_ns // 100
    ref = _reference(store, tmp_path / "ref.json", t0, t1)
    seen = [0]
    real = rawevents._CopySink.add

    def counting(self, events):
        seen[0] += len(events)
        return real(self, events)

    monkeypatch.setattr(rawevents._CopySink, "add", counting)
    plan = export_range(store, tmp_path / "new.json", t0, t1, overwrite=True)
    assert (tmp_path / "new.json").read_bytes() == ref
    assert plan.counts["metadata"] == 1 and plan.counts["slices"] >= 50
    assert seen[0] < 5001 // 10  # the 1 % range, the metadata, and a chunk around each
