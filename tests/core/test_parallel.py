"""The parallel load: byte ranges cut at ``},{`` must give exactly the one-process events,
even when that pattern sits inside strings (names, args) or nested args, and when the file is
damaged. Checked against plain ``json`` and against a one-process load, column for column."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import assert_same_columns
from vtui.io import jsonscan
from vtui.io.argsfile import ArgsFile
from vtui.io.columns import ColumnSink
from vtui.load import parallel
from vtui.load.trace import load_trace

NASTY = ["},{", "}, {", '\\"},{\\"ph\\":\\"X\\"', "}\n,\n{", "{[}]", "\x00", "é€𝄞", "\\\\", '"},{"']


def _events(n: int) -> list[dict]:
    out = []
    for i in range(n):
        nasty = NASTY[i % len(NASTY)]
        out.append({"ph": "X", "name": f"op{i % 7}{nasty}", "cat": "cpu_op", "pid": 1, "tid": 1 + i % 3,
                    "ts": i * 10, "dur": 5,
                    "args": {"s": f"x{nasty}y", "nested": [{"a": nasty}, {"b": [{}, {}]}], "i": i}})
        if i % 5 == 0:
            out.append({"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": i * 10 + 1, "cat": "ac2g", "name": "ac2g"})
            out.append({"ph": "f", "id": i, "pid": 2, "tid": 7, "ts": i * 10 + 2, "cat": "ac2g", "name": "ac2g", "bp": "e"})
    return out


def _doc(events: list[dict]) -> bytes:
    body = ",\n".join(json.dumps(e, ensure_ascii=False) for e in events)
    return ('{"traceEvents": [\n' + body + '\n], "displayTimeUnit": "ns"}').encode()


def _true_boundaries(data: bytes, events: list[dict]) -> set[int]:
    """Positions just after each event's closing brace, found by construction (not by scanning)."""
    out = set()
    pos = data.index(b"[") + 2
    for e in events:
        pos += len(json.dumps(e, ensure_ascii=False).encode())
        out.add(pos)
        pos += 2  # ",\n"
    return out


def test_decode_range_proves_exactly_the_true_boundaries(monkeypatch):
    """For every ``},{`` match, decoding up to it succeeds iff it is a real event boundary."""
    monkeypatch.setattr(jsonscan, "CHUNK", 700)  # many chunk cuts, many of them false
    monkeypatch.setattr(jsonscan, "SMALL", 100)
    events = _events(60)
    data = _doc(events)
    truth = _true_boundaries(data, events)
    start = data.index(b"{", data.index(b"["))
    matches = [m.start() + 1 for m in jsonscan.BOUNDARY.finditer(data)]
    false_cuts = [m for m in matches if m not in truth]
    assert len(false_cuts) > 50  # the test really has cuts inside strings and nested args
    for cut in matches:
        reached = jsonscan.decode_range(data, start, cut, ColumnSink())
        assert (reached == cut) == (cut in truth), cut
        assert reached == cut or reached in {b + 2 for b in truth} | {start}  # an event's start


@pytest.fixture
def tiny_ranges(monkeypatch):
    """Small test files go through the parallel load, cut into ranges of about a KiB."""
    monkeypatch.setattr(parallel, "MIN_RANGE", 1 << 10)
    monkeypatch.setattr("vtui.load.trace.PARALLEL_MIN", 1 << 10)


def _scan(data: bytes, tmp_path: Path, fast=None):
    args = ArgsFile(tmp_path)
    sink = ColumnSink(args=args.writer())
    if fast is not None:
        fast.args = args
    result = jsonscan.scan_trace(data, sink, None, fast)
    cols = sink.finish()
    blob = args.finish()
    return result, cols, blob


def _decoded(cols, blob) -> list[tuple]:
    """Events as plain values: comparable whatever the string/thread ids are."""
    out = []
    for r in range(len(cols)):
        off, ln = int(cols.args_off[r]), int(cols.args_len[r])
        ts = float(cols.ts[r])
        out.append((int(cols.ph[r]), None if ts != ts else ts, cols.strings[cols.name[r]], cols.strings[cols.cat[r]],
                    cols.thread_keys[cols.thread[r]], json.loads(blob[off:off + ln]) if ln else None))
    return out


class _InProcess(parallel.ParallelDecode):
    """ParallelDecode with the worker ranges decoded here: same planning, proof and merge."""

    forced: list[tuple[int, int]] | None = None

    def __call__(self, data, pos, sink):
        ranges = self.forced or parallel.plan_ranges(data, pos, self.jobs, self.min_range)
        self.ranges = ranges
        if len(ranges) < 2:
            return pos
        region = self.args.reserve(ranges[-1][1] - ranges[0][0])
        reached = pos
        for s, e in ranges:
            cols, got = parallel._decode_here(data, (s, e), self.args.path, (region + s - ranges[0][0], e - s),
                                              lambda _: None)
            sink.absorb(cols)
            reached = got
            if got != e:
                break
        return reached


@pytest.mark.parametrize("jobs", [2, 3, 5, 8])
def test_split_at_any_candidate_gives_one_process_events(tmp_path, monkeypatch, jobs):
    monkeypatch.setattr(jsonscan, "CHUNK", 900)
    events = _events(120)
    data = _doc(events)
    _, ref_cols, ref_blob = _scan(data, tmp_path)
    fast = _InProcess("unused", None, jobs, min_range=64)
    _, cols, blob = _scan(data, tmp_path, fast)
    assert len(fast.ranges) == jobs
    got = _decoded(cols, blob)
    assert got == _decoded(ref_cols, ref_blob)
    assert [g[2] for g in got] == [e["name"] for e in events]  # against plain json
    assert [g[5] for g in got] == [e.get("args") for e in events]
    for f in ("ph", "ts", "dur", "name", "cat", "thread", "id_kind", "id_val", "scope", "bp_enclosing"):
        assert np.array_equal(getattr(cols, f), getattr(ref_cols, f), equal_nan=f in ("ts", "dur")), f
    assert cols.strings == ref_cols.strings and cols.thread_keys == ref_cols.thread_keys
    assert cols.flow_v2 == ref_cols.flow_v2 and cols.by_phase == ref_cols.by_phase


def test_a_split_at_every_candidate_even_false_ones_gives_the_same_events(tmp_path, monkeypatch):
    """Cuts inside strings and nested args are refuted by the proof and decoded again in order."""
    monkeypatch.setattr(jsonscan, "CHUNK", 400)
    events = _events(40)
    data = _doc(events)
    ref = _decoded(*_scan(data, tmp_path)[1:])
    start = data.index(b"{", data.index(b"["))
    end = jsonscan.array_tail_end(data, start)
    truth = _true_boundaries(data, events)
    refuted = 0
    for match in jsonscan.BOUNDARY.finditer(data, start, end):
        fast = _InProcess("unused", None, 2)
        fast.forced = [(start, match.start() + 1), (match.end() - 1, end)]
        assert _decoded(*_scan(data, tmp_path, fast)[1:]) == ref
        refuted += match.start() + 1 not in truth
    assert refuted > 30


def test_damaged_range_falls_back_to_one_process(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonscan, "CHUNK", 900)
    events = _events(120)
    data = bytearray(_doc(events))
    cut = data.index(b'"op5', len(data) * 2 // 3)
    data[cut:cut + 4] = b"@@@@"  # one corrupt event in the last range
    data = bytes(data)
    ref = _scan(data, tmp_path)
    fast = _InProcess("unused", None, 3, min_range=64)
    res = _scan(data, tmp_path, fast)
    assert res[0].repaired and res[0].warnings == ref[0].warnings
    assert _decoded(res[1], res[2]) == _decoded(ref[1], ref[2])
    assert 0 < len(res[1]) < len(events)  # (the one-process repair skips to a boundary it can trust)


def test_truncated_file_in_parallel_keeps_every_complete_event(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonscan, "CHUNK", 900)
    events = _events(120)
    full = _doc(events)
    data = full[: len(full) - 3000]
    ref = _scan(data, tmp_path)
    fast = _InProcess("unused", None, 4, min_range=64)
    res = _scan(data, tmp_path, fast)
    assert res[0].repaired
    assert _decoded(res[1], res[2]) == _decoded(ref[1], ref[2])
    complete = len([b for b in _true_boundaries(full, events) if b <= len(data)])
    assert len(res[1]) == complete


def test_parallel_load_in_processes_equals_one_process(tmp_path, tiny_ranges, monkeypatch):
    """The real thing: spawned decoder processes, through load_trace, against jobs=1."""
    events = _events(3000)
    path = tmp_path / "nasty.json"
    path.write_bytes(_doc(events))
    used = []
    real = parallel.ParallelDecode.__call__

    def spy(self, data, pos, sink):
        reached = real(self, data, pos, sink)
        used.append((self.used_ranges, self.ranges_total))
        return reached

    monkeypatch.setattr(parallel.ParallelDecode, "__call__", spy)
    monkeypatch.setattr(parallel.ParallelDecode, "steal", False)  # so the worker surely decodes some
    scratch = tmp_path / "scratch"  # where the args file and the workers' range files go (no cache)
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    one = load_trace(path, cache=False, jobs=1)
    two = load_trace(path, cache=False, jobs=2)
    ranges = 2 * parallel.RANGES_PER_JOB
    assert used == [(ranges, ranges)]  # all decoded in parallel (the worker claimed all but the first) and proven
    assert not list(scratch.iterdir())  # the workers' range files and the args file are gone
    assert_same_columns(one, two, skip=("args_off",))  # same bytes, different place in the args file
    assert one.strings == two.strings and one.tracks == two.tracks and one.warnings == two.warnings
    names = {e["name"] for e in events if e["ph"] == "X"}
    assert {one.name(r) for r in range(len(one.slices))} == names
    for r in range(0, len(one.slices), 97):
        assert one.slice_args(r) == two.slice_args(r)
        assert re.match(r"op\d", two.name(r))


def test_workers_that_fail_leave_the_rest_to_one_process(tmp_path, monkeypatch):
    """A worker that dies (here: it cannot open the bytes) decodes nothing; the ranges it left
    are decoded here, in order, and no range file is left behind."""
    monkeypatch.setattr(jsonscan, "CHUNK", 900)
    events = _events(300)
    data = _doc(events)
    ref = _scan(data, tmp_path)
    fast = parallel.ParallelDecode(str(tmp_path / "missing.json"), None, 2, min_range=64)
    fast.steal = False  # the parent takes only the first range: the rest was the worker's
    res = _scan(data, tmp_path, fast)
    assert fast.used_ranges == 1 and fast.ranges_total == 2 * parallel.RANGES_PER_JOB
    assert _decoded(res[1], res[2]) == _decoded(ref[1], ref[2])
    assert [g[2] for g in _decoded(res[1], res[2])] == [e["name"] for e in events]
    assert not list(tmp_path.glob(".vtui-ranges-*"))


def test_no_decoder_process_can_start_and_the_load_still_works(tmp_path, tiny_ranges, monkeypatch):
    """Starting a worker can fail (in the app, spawning with a captured stderr raised
    ValueError: bad value(s) in fds_to_keep); the load then decodes everything here."""

    def refuse(*_args, **_kwargs):
        raise ValueError("bad value(s) in fds_to_keep")

    monkeypatch.setattr(parallel.cf.ProcessPoolExecutor, "submit", refuse)
    path = tmp_path / "nasty.json"
    path.write_bytes(_doc(_events(600)))
    one = load_trace(path, cache=False, jobs=1)
    two = load_trace(path, cache=False, jobs=2)
    assert np.array_equal(one.slices.start_ns, two.slices.start_ns) and one.strings == two.strings
    assert len(one.flows) == len(two.flows) > 0


def test_decoded_size_reads_the_gzip_trailer(tmp_path):
    import gzip

    from vtui.io.reader import decoded_size

    raw = _doc(_events(200))
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(raw))
    plain = tmp_path / "t.json"
    plain.write_bytes(raw)
    assert decoded_size(gz) == len(raw) > gz.stat().st_size
    assert decoded_size(plain) == len(raw)


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_runs_from_0_to_1_through_decode_and_build(tmp_path, tiny_ranges, monkeypatch, jobs):
    """Progress never goes back, stays within [0, 1], ends at 1, and moves during the build too."""
    monkeypatch.setattr(jsonscan, "CHUNK", 4096)  # several decode steps on a small file
    path = tmp_path / "nasty.json"
    path.write_bytes(_doc(_events(600)))
    seen: list[float] = []
    load_trace(path, cache=False, jobs=jobs, progress=seen.append)
    assert seen == sorted(seen) and 0 <= seen[0] and seen[-1] == 1.0
    from vtui.load.trace import _BUILD_SHARE

    build = [f for f in seen if 1 - _BUILD_SHARE < f < 1]
    assert len(set(build)) >= 3  # milestones inside the build
    assert len({f for f in seen if f <= 1 - _BUILD_SHARE}) >= 5  # and steps while decoding


def _mixed_id_events(n: int) -> list[dict]:
    """Flows, async slices and counters whose ids take every form: ints (negative, past int64),
    hex and plain strings, id2 local/global, scoped — so interning order matters."""
    forms = [lambda i: {"id": i}, lambda i: {"id": -i - 1}, lambda i: {"id": 2**64 - 1 - i},
             lambda i: {"id": hex(2**63 + i)}, lambda i: {"id": f"req-{i}"}, lambda i: {"id2": {"local": i}},
             lambda i: {"id2": {"global": hex(i)}}, lambda i: {"id": i, "scope": "s"}, lambda i: {"id": True}]
    out = []
    for i in range(n):
        ident = forms[i % len(forms)](i // len(forms))
        out.append({"ph": "X", "name": f"op{i % 5}", "cat": "c", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5})
        out.append({"ph": "X", "name": f"k{i % 3}", "cat": "kernel", "pid": 2, "tid": 7, "ts": i * 10 + 2, "dur": 2})
        out.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": i * 10 + 1, **ident})
        out.append({"ph": "f", "cat": "ac2g", "name": "ac2g", "pid": 2, "tid": 7, "ts": i * 10 + 2, "bp": "e", **ident})
        out.append({"ph": "b", "cat": "req", "name": "request", "pid": 1, "tid": 3, "ts": i * 10, **ident})
        out.append({"ph": "e", "cat": "req", "name": "request", "pid": 1, "tid": 3, "ts": i * 10 + 4, **ident})
        if i % 7 == 0:
            out.append({"ph": "C", "name": "mem", "pid": 1, "tid": 1, "ts": i * 10, "args": {"v": i}, **ident})
    return out


def test_every_kind_of_id_loads_the_same_in_processes(tmp_path, tiny_ranges, monkeypatch):
    monkeypatch.setattr(parallel.ParallelDecode, "steal", False)  # the worker decodes all but the first range
    path = tmp_path / "ids.json"
    path.write_bytes(_doc(_mixed_id_events(900)))
    one = load_trace(path, cache=False, jobs=1)
    two = load_trace(path, cache=False, jobs=2)
    assert len(one.flows) > 800 and len(one.slices) > 2000
    assert_same_columns(one, two, skip=("args_off",))
    assert [t.label for t in one.tracks] == [t.label for t in two.tracks]
    assert one.warnings == two.warnings


def test_an_unreadable_rank_does_not_stop_the_app_sizing_a_folder(tmp_path, monkeypatch):
    """The app sizes a folder before loading it; a file it cannot open counts by its size on
    disk, and the load then skips it with a warning (as the CLI does), instead of failing."""
    from vtui.io import reader
    from vtui.load.background import _total_size

    for rank in (0, 1):
        (tmp_path / f"rank{rank}.json").write_bytes(_doc(_events(20)))
    real_open = open

    def guarded(path, *args, **kwargs):
        if str(path).endswith("rank1.json"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(reader, "open", guarded, raising=False)
    assert _total_size(tmp_path) == sum(p.stat().st_size for p in tmp_path.iterdir())


def test_load_memory_settings_are_put_back():
    """numpy's huge-page hint is off only during a load (the setting is process-wide)."""
    from vtui.load import malloc

    setter = malloc._hugepage_setter()
    if setter is None:
        pytest.skip("this numpy has no huge-page switch")
    before = setter(True)
    try:
        with malloc.load_memory_settings():
            assert setter(False) is False  # off inside (the call returns the value it replaces)
        assert setter(True) is True  # back on after
    finally:
        setter(before)


@pytest.mark.parametrize(("cores", "load", "jobs"), [
    (2, 0.0, 2),  # a quiet machine: every core
    (2, 0.4, 2),
    (2, 1.0, 1),  # one core held by another job: one decoder
    (2, 0.7, 1),
    (2, 4.7, 1),  # both held (a busy shared machine): still one
    (1, 0.0, 1),
    (8, 3.2, 5),
    (64, 0.0, parallel.MAX_JOBS),
    (4, -1.0, 4),  # a nonsense load average counts as none
])
def test_decode_jobs_counts_the_idle_cores(cores, load, jobs):
    assert parallel.decode_jobs(cores, load) == jobs


def test_default_jobs_reads_the_load_average(monkeypatch):
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (1.2, 0.0, 0.0))
    assert parallel.default_jobs() == 1
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (0.1, 0.0, 0.0))
    assert parallel.default_jobs() == 2

    def no_load_average():
        raise OSError("no load average")

    monkeypatch.setattr(parallel.os, "getloadavg", no_load_average)
    assert parallel.default_jobs() == 2
