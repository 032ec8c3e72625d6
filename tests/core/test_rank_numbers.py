"""Rank numbers a trace may state: two files naming the same rank, or a rank past any column
(2^63 and more), are counted apart by file order — in `vtui query`'s rank column, the Parquet
export and `vtui ranks --engine duckdb` — never merged, never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.ranks_synth import rank_events, slow_rank, write_rank
from vtui.cli import main

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")


def folder_of_ranks(tmp_path: Path, ranks_said: list[int]) -> Path:
    folder = tmp_path / "ranks"
    folder.mkdir()
    for pos, said in enumerate(ranks_said):
        name = f"trace_{pos}.json"
        write_rank(folder, name, rank_events(pos, len(ranks_said), 3, slow_rank(1), clock_us=0, flows=False),
                   pos, len(ranks_said), None)
        doc = json.loads((folder / name).read_text())
        doc["distributedInfo"]["rank"] = said
        (folder / name).write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize("said", [[0, 0], [0, 2**63 + 5], [-3, 1]])
def test_query_counts_each_file_as_its_own_rank(tmp_path, capsys, said):
    folder = folder_of_ranks(tmp_path, said)
    sql = "SELECT rank, count(*) AS n FROM slice GROUP BY rank ORDER BY rank"
    assert main(["query", str(folder), sql, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    per_file = [sum(1 for e in json.loads(p.read_text())["traceEvents"] if e.get("ph") == "X")
                for p in sorted(folder.glob("*.json"))]
    assert rows == [[0, per_file[0]], [1, per_file[1]]]


def test_ranks_duckdb_engine_takes_a_huge_rank_in_file_order(tmp_path, capsys):
    folder = folder_of_ranks(tmp_path, [0, 2**63 + 5])
    assert main(["ranks", str(folder), "--engine", "duckdb", "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1] and any("file order" in w for w in doc["warnings"])


def test_parquet_export_of_a_huge_rank_is_not_an_internal_error(tmp_path, capsys):
    folder = folder_of_ranks(tmp_path, [0, 2**63 + 5])
    assert main(["export", str(folder), "--format", "parquet", "-o", str(tmp_path / "out")]) == 0
    assert "internal error" not in capsys.readouterr().err
