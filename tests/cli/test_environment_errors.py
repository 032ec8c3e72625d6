"""Errors of the machine, not of vtui, are named as such in one line: a full
disk or /dev/full, a file name too long, a read-only folder (before the load), JSON with //
comments, UTF-16/32 files; a long but legal export name works, and so does exporting a folder of
ranks to a sibling folder."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import FIXTURES, ROOT
from vtui.cli import main
from vtui.load.trace import load_trace

TRACE = FIXTURES / "hf_llama_stack.json.gz"
EVENTS = [{"ph": "X", "name": f"e{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(3)]


def _one_line(err: str, says: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "internal error" not in lines[0] and "Traceback" not in err, err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_stdout_to_a_full_device_is_one_line():
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "vtui", "info", str(TRACE), "--no-cache"], cwd=ROOT,
                                stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert result.returncode == 1
    _one_line(result.stderr, "writing the output: No space left on device (the system refused it; not a vtui bug)")


def test_a_long_legal_export_name_works_and_leaves_no_temp_file(tmp_path, capsys):
    out = tmp_path / ("n" * 235 + ".json")  # 240 bytes: legal; the temp name must not add ~36 more
    assert main(["export", str(TRACE), "-o", str(out), "--range", "0:1ms", "--no-cache"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    again = load_trace(out, cache=False)
    assert len(again.slices) > 0


def test_a_name_past_255_bytes_is_one_line(tmp_path, capsys):
    out = tmp_path / ("n" * 300 + ".json")
    assert main(["export", str(TRACE), "-o", str(out), "--no-cache"]) == 1
    _one_line(capsys.readouterr().err, "")
    assert list(tmp_path.iterdir()) == []


def test_a_read_only_folder_is_refused_before_the_load(tmp_path, monkeypatch, capsys):
    import vtui.atomic as atomic
    import vtui.commands.export as export_cmd

    real = os.access
    monkeypatch.setattr(atomic.os, "access", lambda p, mode: False if str(p) == str(tmp_path) else real(p, mode))
    monkeypatch.setattr(export_cmd, "load", lambda opts: pytest.fail("loaded before checking the folder"), raising=False)
    assert main(["export", str(TRACE), "-o", str(tmp_path / "x.json")]) == 1
    _one_line(capsys.readouterr().err, "cannot write in folder")


@pytest.mark.parametrize(("text", "says"), [
    ("// exported by a tool\n" + json.dumps(EVENTS), "starts with a comment"),
    ("[\n// first\n" + json.dumps(EVENTS[0]) + "\n]", "// comment lines, which JSON does not allow"),
    ('{"traceEvents": [\n  // first\n  ' + json.dumps(EVENTS[0]) + "\n]}", "// comment lines")])
def test_json_with_comments_says_so(tmp_path, text, says, capsys):
    path = tmp_path / "c.json"
    path.write_text(text)
    assert main(["info", str(path), "--no-cache"]) == 1
    _one_line(capsys.readouterr().err, says)


def test_a_gzipped_trace_with_comments_says_so_too(tmp_path, capsys):
    path = tmp_path / "c.json.gz"
    path.write_bytes(gzip.compress(("[\n// first\n" + json.dumps(EVENTS[0]) + "\n]").encode()))
    assert main(["info", str(path), "--no-cache"]) == 1
    _one_line(capsys.readouterr().err, "// comment lines, which JSON does not allow")


def test_a_comment_after_some_events_is_named_not_called_a_cut(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("[" + json.dumps(EVENTS[0]) + ",\n// the rest\n" + json.dumps(EVENTS[0]) + "]")
    store = load_trace(path, cache=False)
    assert len(store.slices) == 1
    assert any("// comment lines" in w and "cut short" not in w for w in store.warnings), store.warnings


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be"])
def test_utf16_and_utf32_get_an_encoding_hint(tmp_path, encoding, capsys):
    path = tmp_path / "w.json"
    path.write_bytes(json.dumps(EVENTS).encode(encoding))
    assert main(["info", str(path), "--no-cache"]) == 1
    _one_line(capsys.readouterr().err, "looks UTF-16 or UTF-32 encoded; JSON traces are UTF-8")


def test_a_folder_of_ranks_exports_to_a_sibling_folder(tmp_path, capsys):
    ranks = tmp_path / "ranks"
    shutil.copytree(FIXTURES / "ranks", ranks)
    assert main(["export", str(ranks), "-o", str(tmp_path / "out"), "--no-cache"]) == 0
    assert sorted(p.suffix for p in (tmp_path / "out").iterdir()) == [".json"] * len(load_trace(ranks).sources)
    assert main(["export", str(ranks), "-o", str(ranks / "inner"), "--no-cache"]) == 1  # into the input: still refused
    _one_line(capsys.readouterr().err, "refusing to write into the folder of the input traces")


def test_more_rank_files_than_a_source_id_holds_is_one_line_before_any_load(tmp_path, monkeypatch, capsys):
    import vtui.load.trace as load_mod

    for i in range(4):
        (tmp_path / f"r{i}.json").write_text(json.dumps(EVENTS))
    monkeypatch.setattr(load_mod, "MAX_FILES", 3)  # the real limit (32,767, int16) with a small folder
    monkeypatch.setattr(load_mod, "_load_files", lambda *a, **k: pytest.fail("loaded before counting the files"))
    assert main(["info", str(tmp_path), "--no-cache"]) == 1
    _one_line(capsys.readouterr().err, "4 trace files; vtui opens at most 3 at once")
    monkeypatch.undo()
    assert load_mod.MAX_FILES == np_int16_max()  # the limit is what a source id holds


def np_int16_max() -> int:
    import numpy as np

    return int(np.iinfo(np.int16).max)


def test_out_of_memory_while_loading_is_one_line_and_leaves_no_temp_file(tmp_path, monkeypatch, capsys):
    """A 2 GB name under a 6 GB address-space cap ran out of memory: 'internal error (MemoryError)'.
    (Checked by hand with a real cap: a 400 MB name under `ulimit -v` of 0.8 GiB gives this line.)"""
    import tempfile

    import vtui.load.trace as load_mod

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(load_mod, "scan_trace", exhausted)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = tmp_path / "t.json"
    path.write_text(json.dumps(EVENTS))
    assert main(["info", str(path), "--no-cache"]) == 1
    _one_line(capsys.readouterr().err, "out of memory while loading it")
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]
    monkeypatch.setattr("vtui.commands.info.run", exhausted)  # past the load (an analysis): one line too
    assert main(["info", str(path), "--no-cache"]) == 1
    _one_line(capsys.readouterr().err, "out of memory")


def test_a_comment_far_past_the_head_is_named_not_called_a_cut(tmp_path):
    # 2,000 events (well past the first 64 KiB) and then a // line: the hint looks where the scan stopped.
    head = ",\n".join(json.dumps({**EVENTS[0], "ts": EVENTS[0]["ts"] + i}) for i in range(2000))
    assert len(head) > 1 << 16
    path = tmp_path / "c.json"
    path.write_text("[" + head + ",\n// the rest\n" + json.dumps(EVENTS[0]) + "]")
    store = load_trace(path, cache=False)
    assert len(store.slices) == 2000
    assert any("// comment lines" in w and "cut short" not in w for w in store.warnings), store.warnings
