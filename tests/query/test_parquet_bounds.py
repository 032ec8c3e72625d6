"""A Parquet folder given to `vtui query` is bounded like a gzip trace: text that would decode
to far more than the file holds (a dictionary of one long string, repeated) is refused in one
line before it is expanded."""

from __future__ import annotations

import os

import pytest

from vtui.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("duckdb")


def test_a_dictionary_bomb_is_refused_before_it_is_expanded(tmp_path, capsys):
    folder = tmp_path / "export" / "rank0"
    folder.mkdir(parents=True)
    long = os.urandom(50_000).hex()  # 100 KB of text, stored once in the dictionary
    n = 2_000  # -> 200 MB once expanded, from a file of ~100 KB
    names = pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([long]))
    pq.write_table(pa.table({"row": pa.array(range(n), pa.int64()), "name": names}), folder / "slices.parquet")
    assert (folder / "slices.parquet").stat().st_size < 1 << 20
    assert main(["query", str(tmp_path / "export"), "SELECT count(*) FROM slice"]) == 1
    err = capsys.readouterr().err
    assert "decodes to 200,000,000 bytes" in err and err.count("\n") == 1


def test_rows_past_the_bound_are_refused_from_the_footer(tmp_path, capsys, monkeypatch):
    from vtui.query import parquet

    folder = tmp_path / "export" / "rank0"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"row": pa.array([0] * 100_000, pa.int64())}), folder / "slices.parquet")
    monkeypatch.setattr(parquet, "DECODED_MIN", 1_000)
    monkeypatch.setattr(parquet, "DECODED_MAX", 100_000)
    assert main(["query", str(tmp_path / "export"), "SELECT count(*) FROM slice"]) == 1
    assert "100,000 rows" in capsys.readouterr().err
