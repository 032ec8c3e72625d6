"""Export: the exported range re-opens with exactly the source's events; and the CLI commands that export."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import FIXTURES, QWEN, ROOT, SHARED_TRACES, UNCLOSED, norm, raw_events
from vtui.cli import main
from vtui.errors import UsageError
from vtui.export.trace import export_range, plan_export
from vtui.load.trace import load_trace

SHARED = SHARED_TRACES


def _key(e: dict) -> str:
    return json.dumps(e, sort_keys=True)


def test_export_copies_exactly_the_overlapping_events(tmp_path):
    store = load_trace(QWEN)
    t0, t1 = store.span_ns // 3, store.span_ns // 2
    out = tmp_path / "range.json"
    plan = export_range(store, out, t0, t1)
    exported = raw_events(out)
    events = raw_events(QWEN)
    origin = min(e["ts"] for e in events if e.get("ph") != "M")
    a, b = origin + t0 / 1000, origin + t1 / 1000

    def overlaps(e):
        if e["ph"] == "X":
            end = e["ts"] + e.get("dur", 0)
            return (e["ts"] < b and end > a) if end > e["ts"] else a <= e["ts"] <= b
        return e["ph"] in "iI" and a <= e["ts"] <= b

    expected = [e for e in events if e.get("ph") in ("X", "i", "I") and overlaps(e)]
    got = [e for e in exported if e["ph"] in ("X", "i", "I")]
    # float µs vs int ns: allow events within a ns of the edges to differ
    edge = [e for e in expected if min(abs(e["ts"] - a), abs(e["ts"] - b), abs(e["ts"] + e.get("dur", 0) - a)) < 0.002]
    assert abs(len(got) - len(expected)) <= len(edge)
    assert {_key(e) for e in got} >= {_key(e) for e in expected if e not in edge}
    source_keys = {_key(x) for x in events}
    assert all(_key(e) in source_keys for e in exported)  # every event exactly as in the source
    pids = {norm(e["pid"]) for e in got}
    meta = [e for e in exported if e["ph"] == "M"]
    assert meta and {norm(e["pid"]) for e in meta} <= pids
    flows = [e for e in exported if e["ph"] in ("s", "f")]
    assert len(flows) == 2 * plan.counts["flows"]
    doc = json.loads(out.read_text())
    assert set(doc) - {"traceEvents"} == set(store.sources[0].metadata)  # top-level metadata kept
    again = load_trace(out)
    assert len(again.slices) == plan.counts["slices"] and not again.warnings


def test_export_keeps_both_ends_of_a_b_e_pair(tmp_path):
    store = load_trace(UNCLOSED)
    out = tmp_path / "be.json"
    export_range(store, out, store.span_ns // 2, store.span_ns // 2 + 1000)
    exported = raw_events(out)
    begins = sum(1 for e in exported if e["ph"] == "B")
    ends = sum(1 for e in exported if e["ph"] == "E")
    again = load_trace(out)
    assert begins > 0 and ends > 0
    assert len(again.slices) == begins  # every exported B is a slice again
    # Only what was open in the source stays open: the B events left without an E, per thread.
    left_open, source_open = _open_begins(exported), _open_begins(raw_events(UNCLOSED))
    assert 0 < len(left_open) < len(source_open) and left_open <= source_open
    assert _never_closed(again.warnings) == len(left_open) and _never_closed(store.warnings) == len(source_open)


def _open_begins(events: list[dict]) -> set[tuple]:
    """B events with no matching E, by plain stacks per (pid, tid)."""
    stacks: dict[tuple, list[tuple]] = {}
    for e in sorted((e for e in events if e.get("ph") in ("B", "E")), key=lambda e: e["ts"]):
        stack = stacks.setdefault((norm(e["pid"]), norm(e["tid"])), [])
        if e["ph"] == "B":
            stack.append((norm(e["pid"]), norm(e["tid"]), e["name"], e["ts"]))
        elif stack:
            stack.pop()
    return {b for stack in stacks.values() for b in stack}


def _never_closed(warnings: list[str]) -> int:
    """The number in "N B events were never closed", 0 without that warning."""
    counts = [int(w.split()[0].replace(",", "")) for w in warnings if "never closed" in w]
    assert len(counts) <= 1
    return sum(counts)


def test_export_refuses_input_and_existing(tmp_path):
    store = load_trace(QWEN)
    with pytest.raises(UsageError, match="input trace"):
        export_range(store, QWEN, 0, store.span_ns)
    out = tmp_path / "x.json"
    out.write_text("keep me")
    with pytest.raises(UsageError, match="already exists"):
        export_range(store, out, 0, store.span_ns)
    assert out.read_text() == "keep me"
    export_range(store, out, 0, store.span_ns, overwrite=True)
    assert len(load_trace(out).slices) == len(store.slices)
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # no temp file left


def test_cli_stats_json_rows(capsys):
    assert main(["stats", str(QWEN), "--format", "json", "--top", "3", "--range", "10ms:20ms"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == 3
    assert set(rows[0]) == {"name", "count", "total_ns", "self_ns", "avg_ns", "min_ns", "max_ns", "pct"}
    assert rows[0]["total_ns"] >= rows[1]["total_ns"] >= rows[2]["total_ns"]
    assert rows[0]["total_ns"] <= 10_000_000 * 8  # clipped to the 10 ms range (a few tracks)


@pytest.mark.parametrize("fmt", ["csv", "md", "table"])
def test_cli_stats_formats(capsys, fmt):
    assert main(["stats", str(QWEN), "--format", fmt, "--top", "2", "--by", "cat"]) == 0
    out = capsys.readouterr().out
    assert "python_function" in out and "Trace" in out and "cpu_op" not in out  # top 2 only


def test_cli_search_and_export(tmp_path, capsys):
    assert main(["search", str(QWEN), "aten::addmm", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    raw = [e for e in raw_events(QWEN) if e.get("ph") == "X" and e["name"] == "aten::addmm"]
    assert result["count"] == len(raw) == len(result["matches"])
    out = tmp_path / "e.json"
    assert main(["export", str(QWEN), "-o", str(out), "--range", "5ms:15ms", "--track", "stream"]) == 0
    exported = [e for e in raw_events(out) if e["ph"] == "X"]
    assert exported and all(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation") for e in exported)


@pytest.mark.parametrize("args", [
    ["stats", "{Q}", "--range", "900s:901s"],
    ["stats", "{Q}", "--range", "5ms"],
    ["stats", "{Q}", "--by", "colour"],
    ["stats", "{Q}", "--track", "no-such-track"],
    ["search", "{Q}", "("],
    ["export", "{Q}", "-o", "{Q}"],
    ["stats", "{Q}", "--format", "xml"],
])
def test_cli_bad_arguments_one_line(args):
    argv = [a.replace("{Q}", str(QWEN)) for a in args]
    result = subprocess.run([sys.executable, "-m", "vtui", *argv], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and "Traceback" not in result.stderr, result.stderr


def test_export_of_a_folder_of_ranks_keeps_ranks_apart(tmp_path):
    store = load_trace(FIXTURES / "ranks")
    out = tmp_path / "ranks-out"
    plan = export_range(store, out, 0, store.span_ns)
    files = sorted(p.name for p in out.iterdir())
    assert files == ["hta__sampled_rank-0.json", "hta__sampled_rank-1.json"]
    again = load_trace(out)
    assert len(again.tracks) == len(store.tracks) and len(again.slices) == len(store.slices) == plan.counts["slices"]
    with pytest.raises(UsageError, match="folder of the input"):
        export_range(store, FIXTURES / "ranks" / "x", 0, store.span_ns)


def test_ranks_whose_names_differ_only_by_gz_export_to_two_files(tmp_path):
    import gzip

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    one = [{"ph": "X", "name": "on_plain", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]
    two = [{"ph": "X", "name": "on_gz", "ts": 1, "dur": 3, "pid": 1, "tid": 1}]
    (ranks / "r.json").write_text(json.dumps(one))
    (ranks / "r.json.gz").write_bytes(gzip.compress(json.dumps(two).encode()))
    store = load_trace(ranks)
    out = tmp_path / "out"
    export_range(store, out, 0, store.span_ns)
    written = {p.name: [e["name"] for e in json.loads(p.read_text())["traceEvents"] if e.get("ph") == "X"]
               for p in out.iterdir()}
    assert sorted(sum(written.values(), [])) == ["on_gz", "on_plain"]  # no rank lost
    assert len(written) == 2


def test_export_file_mode_follows_umask_and_empty_range_is_refused(tmp_path):
    store = load_trace(QWEN)
    out = tmp_path / "m.json"
    old = os.umask(0o022)
    try:
        export_range(store, out, 0, store.span_ns // 10)
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644
    with pytest.raises(UsageError, match="nothing to export"):
        export_range(store, tmp_path / "empty.json", 0, store.span_ns, tracks=np.array([], dtype=np.int64))
    assert not (tmp_path / "empty.json").exists()


def test_export_flow_chains_come_whole(tmp_path):
    lthi = SHARED / "public" / "catapult__lthi_cats.json.gz"
    if not lthi.exists():
        pytest.skip("../shared/traces is not present")
    store = load_trace(lthi)
    for cut in (0.5, 0.9, 0.99):
        out = tmp_path / f"l{cut}.json"
        plan = export_range(store, out, int(store.span_ns * cut), store.span_ns)
        assert len(load_trace(out).flows) == plan.counts["flows"]


# ---- outputs that are not files, sources that changed, memory -----------------------------
def _small_trace(tmp_path, n: int = 200):
    path = tmp_path / "src.json"
    path.write_text(json.dumps([{"ph": "X", "name": f"n{i % 7}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5}
                                for i in range(n)]))
    return path


@pytest.mark.parametrize("kind", ["dev_null", "fifo", "stdout_link"])
def test_export_refuses_outputs_that_are_not_regular_files(tmp_path, capsys, kind):
    src = _small_trace(tmp_path)
    if kind == "dev_null":
        out = "/dev/null"
    elif kind == "fifo":
        out = str(tmp_path / "pipe.json")
        os.mkfifo(out)
    else:
        out = str(tmp_path / "stdout.json")
        os.symlink("/dev/stdout", out)
    assert main(["export", str(src), "-o", out, "--force"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ("not a regular file" in err[0] or "symbolic link" in err[0]), err
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")  # still the device
    if kind == "fifo":
        assert not os.path.isfile(out)
    if kind == "stdout_link":
        assert os.path.islink(out)


@pytest.mark.parametrize("change", ["rewritten_same_size", "appended", "truncated"])
def test_export_refuses_a_source_changed_since_the_load(tmp_path, change):
    src = _small_trace(tmp_path)
    store = load_trace(src, cache=False)
    data = src.read_bytes()
    if change == "rewritten_same_size":
        src.write_bytes(data.replace(b'"n1"', b'"m1"'))
    elif change == "appended":
        src.write_bytes(data + b" ")
    else:
        src.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out.json"
    with pytest.raises(UsageError, match="changed since it was loaded"):
        export_range(store, out, 0, store.span_ns)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["src.json"]


def test_export_streams_instead_of_holding_the_source(tmp_path):
    """Python allocations during an export stay far below the source's size (the source is
    memory-mapped, each event written as it is met): exporting 10 % of 1 GB peaked at 2 GB."""
    import tracemalloc

    src = _small_trace(tmp_path, n=150_000)  # ~10 MB
    store = load_trace(src, cache=False)
    size = src.stat().st_size
    tracemalloc.start()
    try:
        plan_export(store, 0, store.span_ns)  # the ordinals to copy: ~50 bytes per exported event
        plan_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        export_range(store, tmp_path / "out.json", 0, store.span_ns)  # every event: the worst case
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(load_trace(tmp_path / "out.json", cache=False).slices) == 150_000
    assert peak < plan_peak + size / 10, (peak, plan_peak, size)  # was + the whole source, + every event
