"""Cache entries are not trusted: each is checked when opened — a checksum of every
array, the dtypes the code expects, typed meta, the store's invariants, the owner and mode —
and one that fails is rebuilt from the trace with a one-line note. The key also catches a
same-size edit in the middle of the trace whose mtime was set back.

Each damage is written the way an attacker would, keeping meta.json consistent with it (sizes,
dtypes, checksums), so the check that must catch it is the one named by the case. Hangs (a
parent cycle) are bounded by a SIGALRM deadline."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import FIXTURES, assert_same_columns, deadline, write_entry_meta
from vtui.cli import main
from vtui.load.trace import load_trace
from vtui.store import cache

TRACE = FIXTURES / "catapult__main_thread_has_unclosed_slices.json"


@pytest.fixture(autouse=True)
def bounded():
    with deadline(60, "a damaged entry hangs"):
        yield


@pytest.fixture
def cached(tmp_path):
    path = tmp_path / TRACE.name
    shutil.copy(TRACE, path)
    fresh = load_trace(path, cache=False)
    load_trace(path)
    return path, fresh, cache.cache_root() / cache.entry_key([path])


def _meta(entry: Path) -> dict:
    return json.loads((entry / "meta.json").read_text())


def _write_meta(entry: Path, meta: dict) -> None:
    write_entry_meta(entry, meta)


def _forge(entry: Path, name: str, arr: np.ndarray, keep_checksum: bool = False) -> None:
    """Replace one array and make meta.json agree with it (unless ``keep_checksum``)."""
    path = entry / f"{name}.npy"
    np.save(path, arr, allow_pickle=False)
    meta = _meta(entry)
    crc = meta["arrays"][f"{name}.npy"][3] if keep_checksum else cache.checksum(arr)
    meta["arrays"][f"{name}.npy"] = [arr.dtype.str, len(arr), path.stat().st_size, crc]
    _write_meta(entry, meta)


def _slices(entry: Path, column: str) -> np.ndarray:
    return np.load(entry / f"slices.{column}.npy").copy()


def _rebuilt(path: Path, fresh, says: str) -> None:
    again = load_trace(path)
    note = again.warnings[0]
    assert "rebuilt from the trace" in note and says in note and "\n" not in note, again.warnings
    assert_same_columns(fresh, again)
    assert again.warnings[1:] == fresh.warnings
    reopened = load_trace(path)  # the entry was written anew, and now checks out
    assert reopened.warnings == fresh.warnings
    assert_same_columns(fresh, reopened)


def _parent_cycle(entry):
    parent = _slices(entry, "parent")
    kids = np.flatnonzero(parent >= 0)
    a = int(kids[0])
    parent[int(parent[a])] = a  # a's parent now has a as its parent
    return "parent", parent


def _zero_parents(entry):
    return "parent", np.zeros_like(_slices(entry, "parent"))


def _end_before_start(entry):
    end = _slices(entry, "end_ns")
    end[3] = _slices(entry, "start_ns")[3] - 1
    return "end_ns", end


def _unsorted(entry):
    """Two neighbours of one lane swapped (starts and ends): each slice still ends after it starts."""
    start, end, track, lane = (_slices(entry, c) for c in ("start_ns", "end_ns", "track", "lane"))
    k = int(np.flatnonzero((track[:-1] == track[1:]) & (lane[:-1] == lane[1:]) & (start[:-1] < start[1:]))[0])
    end[[k, k + 1]] = end[[k + 1, k]]
    _forge(entry, "slices.end_ns", end)
    start[[k, k + 1]] = start[[k + 1, k]]
    return "start_ns", start


def _float_starts(entry):
    return "start_ns", _slices(entry, "start_ns").astype(np.float64)


@pytest.mark.parametrize(("damage", "says"), [
    (_parent_cycle, "does not contain its child"), (_zero_parents, "does not contain its child"),
    (_end_before_start, "ending before it starts"), (_unsorted, "out of order"),
    (_float_starts, "unexpected dtype")])
def test_a_forged_array_is_refused_and_rebuilt(cached, damage, says, capsys):
    path, fresh, entry = cached
    name, arr = damage(entry)
    _forge(entry, f"slices.{name}", arr)
    if damage in (_parent_cycle, _zero_parents):  # these hung `vtui tree` before
        assert main(["tree", str(path)]) == 0
        assert "Traceback" not in capsys.readouterr().err
        shutil.rmtree(entry, ignore_errors=True)
        load_trace(path)
        entry = cache.cache_root() / cache.entry_key([path])
        _forge(entry, f"slices.{name}", damage(entry)[1])
    _rebuilt(path, fresh, says)


def test_a_bit_flip_is_caught_by_the_checksum(cached):
    path, fresh, entry = cached
    names = _slices(entry, "name_id")
    names[5] ^= 1  # still a valid id: only the checksum can tell
    _forge(entry, "slices.name_id", names, keep_checksum=True)
    _rebuilt(path, fresh, "checksum differs")


@pytest.mark.parametrize(("field", "value", "says"), [
    ("strings", [["a"], "b"], "unreadable"), ("span_ns", 2**80, "span or origin out of range"),
    ("tracks", [{"id": "x"}], "unreadable")])
def test_forged_meta_is_refused_and_rebuilt(cached, field, value, says):
    path, fresh, entry = cached
    meta = _meta(entry)
    meta[field] = value
    _write_meta(entry, meta)
    _rebuilt(path, fresh, says)


@pytest.mark.parametrize(("field", "value", "says"), [
    ("sources", [{"by_phase": "X"}], "unreadable"), ("events", -5, "negative count")])
def test_forged_meta_values_are_refused_by_type(cached, field, value, says):
    path, fresh, entry = cached
    meta = _meta(entry)
    meta[field] = [{**meta["sources"][0], **value[0]}] if field == "sources" else value
    _write_meta(entry, meta)
    _rebuilt(path, fresh, says)


def test_an_edited_meta_json_is_caught_by_its_checksum(cached):
    path, fresh, entry = cached
    meta = _meta(entry)
    meta["warnings"] = ["this trace is fine: ignore every finding"]  # a forged warning, shown as the trace's
    (entry / "meta.json").write_text(json.dumps(meta))
    _rebuilt(path, fresh, "meta.json: checksum differs")


def test_random_args_bytes_are_caught_by_the_checksum(cached):
    path, fresh, entry = cached
    args = entry / "args.bin"
    size = args.stat().st_size
    assert size > 0
    args.write_bytes(os.urandom(size))  # same size: only the checksum can tell
    _rebuilt(path, fresh, "args.bin: checksum differs")


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="no owners here")
def test_an_entry_writable_by_others_is_not_used(cached):
    path, fresh, entry = cached
    os.chmod(entry / "slices.name_id.npy", 0o666)
    _rebuilt(path, fresh, "writable by others")


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="chown needs root")
def test_an_entry_of_another_user_is_not_used(cached):
    path, fresh, entry = cached
    os.chown(entry / "meta.json", 12345, -1)
    _rebuilt(path, fresh, "owned by another user (uid 12345)")


def test_a_same_size_edit_in_the_middle_with_the_mtime_set_back_gets_a_new_entry(tmp_path):
    events = [{"ph": "X", "name": f"n{i:05d}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(20_000)]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(events))  # ~1.3 MB: the middle is far from both 64 KiB ends
    assert load_trace(path).name(10_000) == "n10000"
    st = path.stat()
    data = bytearray(path.read_bytes())
    mid = data.index(b"n10000")
    data[mid : mid + 6] = b"X10000"
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    edited = load_trace(path)
    names = {edited.name(r) for r in range(len(edited.slices))}
    assert "X10000" in names and "n10000" not in names  # plain Python says the same of the bytes
    assert json.loads(path.read_text())[10_000]["name"] == "X10000"


def test_every_column_has_the_dtype_the_cache_expects():
    store = load_trace(FIXTURES / "hf_llama_stack.json.gz", cache=False)
    got = {t: {f.name: getattr(getattr(store, t), f.name).dtype.str for f in dataclasses.fields(getattr(store, t))}
           for t in cache.COLUMN_DTYPES}
    assert got == cache.COLUMN_DTYPES


def test_a_track_column_pointing_past_its_texts_is_refused_and_rebuilt(cached):
    path, fresh, entry = cached
    names = np.load(entry / "tracks.name.npy").copy()
    names[0] = len(_meta(entry)["tracks"]["text"])  # one past the last text
    _forge(entry, "tracks.name", names)
    _rebuilt(path, fresh, "track column name: an id out of range")


def test_a_track_id_that_is_a_list_is_refused_and_rebuilt(cached):
    path, fresh, entry = cached
    meta = _meta(entry)
    meta["tracks"]["ids"][0] = [1, 2]
    _write_meta(entry, meta)
    _rebuilt(path, fresh, "unreadable")
