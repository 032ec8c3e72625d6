"""The index cache: a reopen equals the fresh store column for column, never parses JSON, and a
changed trace, a damaged or foreign entry, or --no-cache all lead back to the file itself."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import FIXTURES, assert_same_columns
from vtui.cli import main
from vtui.io.argsfile import MappedBlob
from vtui.load import trace as load_mod
from vtui.load.trace import load_trace
from vtui.store import cache

TRACE = FIXTURES / "catapult__main_thread_has_unclosed_slices.json"


def _copy(tmp_path: Path, src: Path = TRACE) -> Path:
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    return dst


def _assert_same(a, b) -> None:
    assert_same_columns(a, b)
    assert a.strings == b.strings and a.tracks == b.tracks and a.warnings == b.warnings
    assert a.sources == b.sources and a.metadata_events == b.metadata_events
    assert a.extra_end_args == b.extra_end_args and a.span_ns == b.span_ns and a.origin_us == b.origin_us
    assert a.metadata_refs == b.metadata_refs
    for r in range(len(a.slices)):
        assert a.slice_args(r) == b.slice_args(r)
    for r in range(len(a.instants)):
        assert a.instant_args(r) == b.instant_args(r)


def _no_parsing(monkeypatch) -> None:
    def boom(*_a, **_k):
        raise AssertionError("parsed the JSON although the cache had it")

    monkeypatch.setattr(load_mod, "scan_trace", boom)


@pytest.mark.parametrize("name", ["catapult__main_thread_has_unclosed_slices.json", "hf_llama_stack.json.gz"])
def test_reopen_equals_fresh_store_and_skips_parsing(tmp_path, monkeypatch, name):
    path = _copy(tmp_path, FIXTURES / name)
    fresh = load_trace(path, cache=False)
    first = load_trace(path)  # parses and writes the entry
    assert len(cache.list_entries()) == 1
    _no_parsing(monkeypatch)
    again = load_trace(path)
    assert isinstance(again.args_blob, MappedBlob) and isinstance(again.slices.start_ns, np.memmap)
    _assert_same(fresh, again)
    _assert_same(first, again)


def test_cache_lives_under_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    load_trace(_copy(tmp_path))
    assert [p.name for p in (tmp_path / "xdg" / "vtui").iterdir() if not p.name.startswith(".")]
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_root() == tmp_path / "home" / ".cache" / "vtui"


def test_modified_trace_invalidates(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    events = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]
    path.write_text(json.dumps(events))
    assert load_trace(path).name(0) == "a"
    events[0]["name"] = "b"  # same size, same mtime second: the head hash still tells
    path.write_text(json.dumps(events))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    assert load_trace(path).name(0) == "b"
    _no_parsing(monkeypatch)
    assert load_trace(path).name(0) == "b"  # and the new version is cached in turn


def _entry(path: Path) -> Path:
    key = cache.entry_key([path])
    return cache.cache_root() / key


@pytest.mark.parametrize("damage", ["truncate_array", "truncate_args", "bad_meta", "foreign", "bad_ids"])
def test_damaged_entry_is_rebuilt(tmp_path, damage):
    path = _copy(tmp_path)
    fresh = load_trace(path, cache=False)
    load_trace(path)
    entry = _entry(path)
    if damage == "truncate_array":
        f = entry / "slices.start_ns.npy"
        f.write_bytes(f.read_bytes()[:-16])
    elif damage == "truncate_args":
        f = entry / "args.bin"
        f.write_bytes(f.read_bytes()[:-1])
    elif damage == "bad_meta":
        (entry / "meta.json").write_text("{not json")
    elif damage == "foreign":
        meta = json.loads((entry / "meta.json").read_text())
        meta["key"] = "0" * 32
        (entry / "meta.json").write_text(json.dumps(meta))
    elif damage == "bad_ids":
        f = entry / "slices.name_id.npy"
        arr = np.load(f)
        arr[0] = 10**6
        np.save(f, arr)
    again = load_trace(path)  # not trusted: parsed again, and the entry written anew, with a one-line note
    note = again.warnings.pop(0)
    assert "rebuilt from the trace" in note and "\n" not in note
    _assert_same(fresh, again)
    assert (entry / "meta.json").is_file()
    _assert_same(fresh, load_trace(path))


def test_no_cache_writes_nothing(tmp_path, capsys):
    path = _copy(tmp_path)
    assert main(["info", "--no-cache", str(path)]) == 0
    assert cache.list_entries() == []
    assert not cache.cache_root().exists() or not any(cache.cache_root().iterdir())


def test_cache_list_and_clear(tmp_path, capsys):
    assert main(["cache", "list"]) == 0
    assert "empty" in capsys.readouterr().out
    path = _copy(tmp_path)
    assert main(["info", str(path)]) == 0
    capsys.readouterr()
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert str(path.resolve()) in out and "3,386 events" in out and "1 cache entry" in out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 cache entry" in capsys.readouterr().out
    assert cache.list_entries() == []


def test_unwritable_cache_still_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file: the cache folder cannot exist
    store = load_trace(_copy(tmp_path))
    assert len(store.slices) == 1684


@pytest.mark.parametrize("use_cache", [True, False])
def test_app_loader_process_hands_over_by_mmap(tmp_path, monkeypatch, use_cache):
    """The app loads big traces in a process; the store comes back through a cache entry
    (a private, deleted one under --no-cache), equal to a direct load."""
    from vtui.load import background as loading

    monkeypatch.setattr(loading, "PROCESS_THRESHOLD", 0)  # take the process path for a small file
    path = _copy(tmp_path)
    seen: list[float] = []
    store = loading.load_in_background(path, seen.append, cache=use_cache)
    _assert_same(load_trace(path, cache=False), store)
    assert seen and seen[-1] == 1.0
    assert isinstance(store.args_blob, MappedBlob)
    assert len(cache.list_entries()) == (1 if use_cache else 0)


def test_big_gzip_is_inflated_to_a_temp_file_and_cleaned_up(tmp_path, monkeypatch):
    from vtui.io import reader

    path = _copy(tmp_path, FIXTURES / "hf_llama_stack.json.gz")
    ref = load_trace(path, cache=False)
    monkeypatch.setattr(reader, "SPILL_GZIP", 0)  # every gzip takes the inflate-to-file path
    _assert_same(ref, load_trace(path, cache=False))
    _assert_same(ref, load_trace(path))  # with the cache: the spill file lives in the cache folder
    leftovers = [p.name for p in cache.cache_root().iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_cache_knows_every_store_field():
    """A field added to TraceStore must be added to the cache too (else reopened stores lack it)."""
    from vtui.store.store import TraceStore

    assert {f.name for f in dataclasses.fields(TraceStore)} == cache.STORED_FIELDS


# ---- what the cache may touch, how big it gets, and disk faults ---------------------------
def _others_in_the_cache_folder(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    root = cache.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    (root / "notes.txt").write_text("mine")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / "link").symlink_to(outside)
    (root / ("ab" * 16)).symlink_to(outside)  # named like an entry, but a link to elsewhere
    keep = {p.name: p for p in root.iterdir()}
    return outside, keep


def test_clear_deletes_only_vtui_entries(tmp_path):
    outside, keep = _others_in_the_cache_folder(tmp_path)
    load_trace(_copy(tmp_path))
    assert len(cache.list_entries()) == 1
    entries, _ = cache.clear()
    assert entries == 1 and cache.list_entries() == []
    assert {p.name for p in cache.cache_root().iterdir()} == set(keep)
    assert (outside / "precious.txt").read_text() == "keep me"
    assert (cache.cache_root() / ".git" / "HEAD").exists()


def test_no_cache_folder_is_made_under_a_missing_home(tmp_path, monkeypatch):
    home = tmp_path / "no-such-home"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(home))
    store = load_trace(_copy(tmp_path))
    assert len(store.slices) == 1684 and not home.exists()


def test_lru_cap_evicts_the_least_recently_used(tmp_path, monkeypatch):
    traces = []
    for i in range(3):
        t = tmp_path / f"t{i}.json"
        t.write_text(json.dumps([{"ph": "X", "name": f"n{i}", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
                                  "args": {"pad": "x" * 20_000}}]))
        traces.append(t)
    load_trace(traces[0])
    one = cache.list_entries()[0].disk_bytes
    monkeypatch.setenv("VTUI_CACHE_MAX", str(int(2.5 * one)))  # room for two entries
    load_trace(traces[1])
    os.utime(cache.cache_root() / cache.list_entries()[0].key, (1, 1))  # make the order certain
    load_trace(traces[0])  # reopened: now the most recent
    load_trace(traces[2])  # evicts t1, the least recently used
    kept = sorted(Path(e.trace[0]).name for e in cache.list_entries())
    assert kept == ["t0.json", "t2.json"]


def test_cache_rm_removes_one_trace_and_list_shows_sizes_and_temps(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    (tmp_path / "b").mkdir()
    a, b = _copy(tmp_path), _copy(tmp_path / "b")
    load_trace(a)
    load_trace(b)
    (cache.cache_root() / ".vtui-args-000000-1-x.tmp").write_bytes(b"x" * 5000)  # another host's, still young
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert "2 cache entries" in out and "KiB" in out and "1 temp file" in out
    assert main(["cache", "rm", str(a)]) == 0
    assert "removed 1 cache entry" in capsys.readouterr().out
    assert [e.trace for e in cache.list_entries()] == [[str(b.resolve())]]
    assert main(["cache", "rm", str(a)]) == 1  # nothing left for it: one line
    assert "no cache entry" in capsys.readouterr().err


def test_a_full_cache_disk_loads_without_the_cache(tmp_path, monkeypatch):
    import errno

    from vtui.io.argsfile import ArgsFile

    real = ArgsFile.append

    def full(self, data):
        if Path(self.path).parent == cache.cache_root():
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(ArgsFile, "append", full)
    path = _copy(tmp_path, FIXTURES / "hf_llama_stack.json.gz")
    store = load_trace(path)
    assert store.warnings[0].startswith("the cache folder") and "is full" in store.warnings[0]
    assert len(store.slices) == len(load_trace(path, cache=False).slices)
    assert cache.list_entries() == [] and not any(cache.cache_root().iterdir())  # no temp left behind


def test_orphaned_temp_files_are_swept_at_the_next_load(tmp_path, monkeypatch):
    import subprocess
    import sys

    from vtui import tempfiles

    monkeypatch.setattr(cache, "_swept", False)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    root = cache.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    orphan = root / (tempfiles.temp_prefix("args", pid) + "x.tmp")
    orphan.write_bytes(b"x" * 1000)
    ranges = root / tempfiles.temp_prefix("ranges", pid)
    ranges.mkdir()
    (ranges / "0.pickle").write_bytes(b"x")
    live = root / (tempfiles.temp_prefix("args") + "mine.tmp")  # this process's: not an orphan
    live.write_bytes(b"x")
    for p in (orphan, ranges, live):
        os.utime(p, (1, 1))
    load_trace(_copy(tmp_path))
    assert not orphan.exists() and not ranges.exists() and live.exists()


def test_cache_list_shows_the_blocks_an_entry_takes_not_its_sparse_size(tmp_path, capsys):
    path = _copy(tmp_path)
    load_trace(path)
    args = cache.cache_root() / cache.list_entries()[0].key / "args.bin"
    with open(args, "r+b") as fh:  # a hole, as a parallel load's reserved-but-short ranges leave
        fh.truncate(256 << 20)
    if args.stat().st_blocks * 512 >= 256 << 20:
        pytest.skip("this file system does not keep sparse files")
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert "on disk" in out and "MiB" not in out.split("events")[0]  # KiB, not the 256 MiB the size says
