"""`vtui ranks --engine duckdb`'s per-rank Parquet in the cache, checked before reuse as the index
cache's entries are: a cut or edited file is rewritten, never trusted, never fatal; another
user's folder is not used; the folders are this user's only, count in the cap and go with
`vtui cache clear`; a failed run leaves no temp folder; a "{rank}" in the cache path is a path."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import msgspec
import pytest

from benchmarks.ranks_synth import rank_events, slow_rank, write_rank
from vtui.cli import main
from vtui.errors import TraceLoadError
from vtui.store import cache as trace_cache

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

from vtui.query.ranks import run_ranks  # noqa: E402


def folder_of_ranks(tmp_path: Path, ranks: int = 2) -> Path:
    folder = tmp_path / "ranks"
    folder.mkdir()
    for r in range(ranks):
        write_rank(folder, f"trace_rank{r}.json", rank_events(r, ranks, 3, slow_rank(1), clock_us=0, flows=False),
                   r, ranks, None)
    return folder


def report(folder: Path, **kw) -> dict:
    return msgspec.to_builtins(run_ranks(folder, **kw))


def rank_files(name: str) -> list[Path]:
    return sorted((trace_cache.cache_root() / trace_cache.RANKS_FOLDER).glob(f"*/{name}"))


def test_a_cut_file_is_rewritten_not_fatal(tmp_path):
    folder = folder_of_ranks(tmp_path)
    first = report(folder)
    victim = rank_files("colls.parquet")[0]
    victim.write_bytes(victim.read_bytes()[:40])  # "No magic bytes" to a reader that trusts it
    assert report(folder) == first
    assert victim.read_bytes()[-4:] == b"PAR1"  # written again


def test_an_edited_file_never_changes_a_figure(tmp_path):
    import pyarrow.parquet as pq

    folder = folder_of_ranks(tmp_path)
    first = report(folder)
    steps = rank_files("steps.parquet")[0]
    table = pq.read_table(steps)
    forged = table.set_column(table.schema.get_field_index("end_ns"), "end_ns",
                              [[v + 10**12 for v in table.column("end_ns").to_pylist()]])
    pq.write_table(forged, steps)  # a valid Parquet file that says a step took 1000 s more
    assert report(folder) == first


def test_folders_are_private_and_sealed(tmp_path):
    report(folder_of_ranks(tmp_path))
    for path in rank_files("*.parquet") + rank_files("check.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_another_users_or_a_shared_folder_is_left_alone_and_not_used(tmp_path):
    folder = folder_of_ranks(tmp_path)
    first = report(folder)
    shared = rank_files("steps.parquet")[0].parent
    os.chmod(shared, 0o777)
    (shared / "steps.parquet").write_bytes(b"junk")
    assert report(folder) == first
    assert (shared / "steps.parquet").read_bytes() == b"junk"  # not ours to rewrite or delete


def test_cache_clear_removes_them_and_the_cap_counts_them(tmp_path, capsys):
    folder = folder_of_ranks(tmp_path)
    report(folder)
    assert len(trace_cache.ranks_folders()) == 2
    assert main(["cache", "list"]) == 0
    assert "2 per-rank Parquet folders" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert trace_cache.ranks_folders() == [] and rank_files("*.parquet") == []
    report(folder)
    entries, freed = trace_cache.enforce_limit(limit=0)
    assert trace_cache.ranks_folders() == [] and freed > 0


def test_a_failed_rank_is_skipped_and_said_by_both_engines_and_leaves_no_temp(tmp_path, monkeypatch, capsys):
    import json

    folder = folder_of_ranks(tmp_path, ranks=3)
    (folder / "trace_rank2.json").write_text("{ not a trace")
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    said = {}
    for engine in ("python", "duckdb"):
        assert main(["ranks", str(folder), "--engine", engine, "--json", "--no-cache"]) == 0
        doc = json.loads(capsys.readouterr().out)
        said[engine] = (doc["warnings"], doc["missing_ranks"], [r["rank"] for r in doc["ranks"]])
    assert said["python"] == said["duckdb"] and said["duckdb"][1:] == ([2], [0, 1])
    assert any(w.startswith("skipped trace_rank2.json") for w in said["duckdb"][0])
    assert list(temp.iterdir()) == []
    for r in range(2):
        (folder / f"trace_rank{r}.json").write_text("[")
    with pytest.raises(TraceLoadError, match="no rank could be loaded"):
        run_ranks(folder, cache=False)
    assert list(temp.iterdir()) == []


def test_a_brace_in_the_cache_path_is_only_a_path(tmp_path, monkeypatch):
    folder = folder_of_ranks(tmp_path)
    first = report(folder)
    home = tmp_path / "c{rank}{align}'x"
    home.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    assert report(folder) == first
    assert rank_files("colls.parquet") and str(home) in str(rank_files("colls.parquet")[0])
