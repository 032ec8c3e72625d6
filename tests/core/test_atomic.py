"""Outputs are written atomically: an error or ctrl-c leaves no file and no temp file, and the
input trace is never an output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.hostile_corpus import X
from vtui.atomic import atomic_write, check_output_path
from vtui.cli import main
from vtui.errors import UsageError
from vtui.load.trace import load_trace


def _half_then(exc: BaseException):
    def write(fh) -> None:
        fh.write(b'{"traceEvents": [')  # half a file already in the temp file
        fh.flush()
        raise exc

    return write


@pytest.mark.parametrize("exc", [ValueError("disk full?"), KeyboardInterrupt()])
def test_error_or_ctrl_c_inside_the_writer_leaves_nothing(tmp_path: Path, exc: BaseException):
    out = tmp_path / "out.json"
    with pytest.raises(type(exc)):
        atomic_write(out, _half_then(exc))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("exc", [ValueError("boom"), KeyboardInterrupt()])
def test_a_failed_overwrite_keeps_the_old_file_whole(tmp_path: Path, exc: BaseException):
    out = tmp_path / "out.json"
    out.write_text("previous result")
    with pytest.raises(type(exc)):
        atomic_write(out, _half_then(exc))
    assert out.read_text() == "previous result"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_bytes_and_callables_both_land_whole(tmp_path: Path):
    atomic_write(tmp_path / "a.bin", b"abc")
    atomic_write(tmp_path / "b.bin", lambda fh: fh.write(b"def"))
    assert (tmp_path / "a.bin").read_bytes() == b"abc" and (tmp_path / "b.bin").read_bytes() == b"def"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.bin"]


def test_the_input_is_refused_as_output_however_it_is_named(tmp_path: Path, monkeypatch):
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps([X()]))
    (tmp_path / "link.json").symlink_to(trace)
    (tmp_path / "ranks").mkdir()
    monkeypatch.chdir(tmp_path)
    for out in [trace, "trace.json", "./sub/../trace.json", tmp_path / "link.json"]:
        with pytest.raises(UsageError, match="input trace"):
            check_output_path(out, [trace], overwrite=True)
    with pytest.raises(UsageError, match="input trace"):  # nothing is written into an input folder
        check_output_path(tmp_path / "ranks" / "x.json", [tmp_path / "ranks"], overwrite=True)
    assert check_output_path(tmp_path / "other.json", [trace]) == tmp_path / "other.json"


def test_a_symlink_loop_is_a_usage_error_not_a_crash(tmp_path: Path):
    (tmp_path / "a.json").symlink_to("b.json")
    (tmp_path / "b.json").symlink_to("a.json")
    out = check_output_path(tmp_path / "out.json", [tmp_path / "a.json"])
    assert out == tmp_path / "out.json"
    with pytest.raises(UsageError):
        check_output_path(tmp_path / "a.json", [tmp_path / "a.json"])


def test_ctrl_c_during_export_leaves_no_file(tmp_path: Path, monkeypatch, capsys):
    """`vtui export` interrupted while writing: exit 130, one line, no output and no temp file."""
    import vtui.export.trace as export

    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps([X(ts=i) for i in range(100)]))
    real = export.copy_events

    seen = [0]

    def interrupting(path, ordinals, write, progress=None, *marks):
        def write_some(raw):  # the writer gets the events one by one: ctrl-c half-way through
            seen[0] += 1
            if seen[0] == 50:
                raise KeyboardInterrupt
            write(raw)

        return real(path, ordinals, write_some, progress, *marks)

    monkeypatch.setattr(export, "copy_events", interrupting)
    out = tmp_path / "out" / "range.json"
    out.parent.mkdir()
    assert main(["export", str(trace), "-o", str(out)]) == 130
    err = capsys.readouterr().err.splitlines()
    assert err == ["vtui: interrupted"]
    assert list(out.parent.iterdir()) == []
    monkeypatch.setattr(export, "copy_events", real)
    assert main(["export", str(trace), "-o", str(out)]) == 0
    assert len(load_trace(out).slices) == 100


def test_a_killed_write_is_cleaned_up_by_the_next_write_of_that_output(tmp_path: Path):
    import subprocess
    import sys

    from vtui.tempfiles import temp_prefix

    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    left = tmp_path / f".out.json.{temp_prefix('out', dead, hidden=False)}abcd.tmp"  # kill -9 mid-write
    mine = tmp_path / f".out.json.{temp_prefix('out', hidden=False)}efgh.tmp"  # a live process's (this one)
    other = tmp_path / f".other.json.{temp_prefix('out', dead, hidden=False)}ijkl.tmp"  # another output's
    for p in (left, mine, other):
        p.write_bytes(b"half")
        os.utime(p, (1, 1))
    atomic_write(tmp_path / "out.json", b"{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.json", mine.name, other.name])
