"""`vtui export --format parquet -o DIR` where DIR is a link loop, or holds a link where a rank
folder goes: one line and exit 1, nothing written through the link."""

from __future__ import annotations

import pytest

from tests.helpers import FIXTURES
from vtui.cli import main

pytest.importorskip("pyarrow")

TRACE = FIXTURES / "speedscope__simple-partial-trailing-comma.json"


def test_a_link_loop_as_the_output_is_one_line(tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert main(["export", str(TRACE), "--format", "parquet", "-o", str(loop)]) == 1
    err = capsys.readouterr().err
    assert "link loop" in err and err.count("\n") == 1 and "internal error" not in err


def test_a_link_where_a_rank_folder_goes_is_not_written_through(tmp_path, capsys):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    assert main(["export", str(TRACE), "--format", "parquet", "-o", str(out)]) == 0
    capsys.readouterr()
    (rank_folder,) = list(out.iterdir())
    for f in rank_folder.iterdir():
        f.unlink()
    rank_folder.rmdir()
    rank_folder.symlink_to(elsewhere)
    assert main(["export", str(TRACE), "--format", "parquet", "-o", str(out), "--force"]) == 1
    assert "symbolic link" in capsys.readouterr().err and list(elsewhere.iterdir()) == []
