"""What a first command line is told: a misspelt command named, a folder without traces refused
before the app starts, `--help` naming every input and schema, `cache list` one line per trace."""

from __future__ import annotations

import os

import pytest

from tests.helpers import X, write_trace
from vtui.cli import main
from vtui.present.schema import OUTPUTS


@pytest.fixture
def no_app(monkeypatch):
    """Fail if the full-screen app would start."""
    from textual.app import App

    def refuse(self, *args, **kwargs):
        raise AssertionError("the app started")

    monkeypatch.setattr(App, "run", refuse)


@pytest.mark.parametrize(("typed", "command"), [("insight", "insights"), ("stat", "stats"), ("insihgts", "insights")])
def test_a_misspelt_command_is_named(tmp_path, capsys, monkeypatch, no_app, typed, command):
    monkeypatch.chdir(tmp_path)
    assert main([typed, "trace.json"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"vtui: error: {typed}: no such file or directory (did you mean `vtui {command}`?)"


def test_a_missing_trace_that_reads_like_no_command_gets_no_hint(tmp_path, capsys, monkeypatch, no_app):
    monkeypatch.chdir(tmp_path)
    assert main(["run.json"]) == 1
    assert capsys.readouterr().err.strip() == "vtui: error: run.json: no such file or directory"


def test_a_folder_without_traces_is_refused_before_the_app(tmp_path, capsys, no_app):
    (tmp_path / "notes.txt").write_text("not a trace")
    for argv in ([str(tmp_path)], [str(tmp_path), str(tmp_path)]):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"vtui: error: {tmp_path}: folder holds no") and "\n" not in err


def test_help_names_sqlite_and_every_schema(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert ".sqlite" in out and "--capture" in out
    schema_line = next(line for line in out.splitlines() if line.strip().startswith("vtui schema"))
    assert all(name in schema_line for name in OUTPUTS) and "ranks" in schema_line and "query" in schema_line


def test_cache_list_shows_one_line_per_trace(tmp_path, capsys):
    """A trace cached, then changed (a new copy) and cached again: one line, its older entry counted."""
    path = write_trace(tmp_path, [X("a", 0, 10)])
    assert main(["info", str(path)]) == 0
    write_trace(tmp_path, [X("a", 0, 10), X("b", 20, 10)])  # same path, new content
    os.utime(path, (1_000_000_000, 1_000_000_000))
    assert main(["info", str(path)]) == 0
    capsys.readouterr()
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if str(path.resolve()) in line]
    assert len(lines) == 1 and "+1 older entry" in lines[0] and " 2 events" in lines[0], out
