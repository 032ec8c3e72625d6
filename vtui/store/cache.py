"""The index cache: a loaded TraceStore on disk, memory-mapped on reopen.

Where: ``$XDG_CACHE_HOME/vtui`` (else ``~/.cache/vtui``). One folder per trace, named by a key
over the trace's path, size, mtime and a hash of its first and last 64 KiB (every file of a
folder trace), so a changed file gets a new key and its old entry is simply not found.

An entry holds one ``.npy`` per table column (the tracks' too: ``vtui.store.tracktable``),
``args.bin`` (the raw args bytes the columns point into) and ``meta.json`` (strings, the tracks'
texts and pid/tid values, sources, warnings, and the size and checksum of every file), and,
where they could be worked out, the ATen operators' interned shapes (``derived.*.npy``:
``vtui.store.shapekeys``, checked like the columns and handed to the store's memo on reopen).
It is built in a temp folder and renamed into place, so a reader never sees half an entry. On
reopen every size, dtype and length is checked, and ids are bounds-checked against the tables
they index; anything that does not fit (truncated, foreign, older format) is deleted and the
trace is loaded again. Nothing in an entry is executed or unpickled.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from vtui.atomic import atomic_write
from vtui.io.argsfile import MappedBlob
from vtui.io.reader import file_fingerprint
from vtui.options import DEFAULT_CACHE_MAX, LoadOptions, default_cache_dir
from vtui.store import shapekeys
from vtui.store.store import SourceInfo, TraceStore
from vtui.store.tables import CounterTable, FlowTable, InstantTable, SliceTable
from vtui.store.tracktable import COLUMN_DTYPES as TRACK_DTYPES
from vtui.store.tracktable import TrackTable
from vtui.tempfiles import TempStats, disk_bytes, sweep, system_temp, temp_prefix, temps_in

FORMAT = 15  # bump whenever what is stored changes: older entries are then rebuilt
_TABLES = {"slices": SliceTable, "instants": InstantTable, "counters": CounterTable, "flows": FlowTable}
DEFAULT_LIMIT = DEFAULT_CACHE_MAX  # bytes on disk (see cache_limit): a 1 GB trace's entry is ~0.4 GB
_KEY = re.compile(r"^[0-9a-f]{32}$")  # an entry's folder name; anything else in the folder is not ours
RANKS_FOLDER = "ranks-parquet"  # per-rank Parquet of `vtui ranks --engine duckdb`: in the cap, cleared with it
_RANKS_KEY = re.compile(r"^[0-9a-f]{32}(-t[0-9]{1,4})?-[0-9]{1,6}$")  # <key of the rank's file>[-t<tables version>]-<its position>
# Every TraceStore field the cache writes and reads back (a test checks this is all of them,
# so a new field cannot silently go missing from reopened stores).
STORED_FIELDS = frozenset({"sources", "strings", "tracks", "slices", "instants", "counters", "flows", "args_blob",
                           "origin_us", "span_ns", "warnings", "metadata_events", "extra_end_args", "metadata_refs",
                           "nesting_tolerance_ns"})


def cache_root() -> Path:
    """The default cache folder (``vtui.options.default_cache_dir``: the environment's)."""
    return default_cache_dir()


def work_dir(root: Path | None = None) -> str | None:
    """The cache folder, created if needed; None when it cannot be (then no caching).

    Creates at most ``vtui`` and the folder holding it (``~/.cache``): under a HOME (or an
    XDG_CACHE_HOME's parent) that does not exist, nothing is created and nothing cached.
    """
    root = root or cache_root()
    try:
        if not root.parent.is_dir():
            root.parent.mkdir(exist_ok=True)  # no parents=True: never a whole missing home
        root.mkdir(exist_ok=True)
    except OSError:
        return None
    if not os.access(root, os.W_OK):
        return None
    global _swept
    if not _swept:  # once per process: what killed loads left behind
        _swept = True
        sweep([root, system_temp()])
    return str(root)


_swept = False


def cache_limit() -> int:
    """Bytes the cache may hold by default: ``VTUI_CACHE_MAX`` (``8GiB``, ``500MB``; ``0``: only the
    newest entry; see ``vtui.units.parse_size``), else ``DEFAULT_LIMIT``."""
    return LoadOptions.from_environ().cache_max


def entry_key(files: list[Path]) -> str | None:
    """Key of a trace (one file or a folder's files); None when a file cannot be read. Over each
    file's path and fingerprint (size, mtime, ctime, inode and sampled content): a same-size edit
    with the mtime set back still changes the ctime, so it gets a new key."""
    digest = hashlib.blake2b(f"vtui-cache-{FORMAT}".encode(), digest_size=16)
    try:
        for f in files:
            size, mtime, content, ctime, inode = file_fingerprint(f)
            digest.update(f"{f.resolve()}\0{size}\0{mtime}\0{ctime}\0{inode}\0{content}\0".encode("utf-8", "surrogateescape"))
    except OSError:
        return None
    return digest.hexdigest()


# ---- writing ----------------------------------------------------------------------------
def save_entry(key: str, store: TraceStore, root: Path | None = None, limit: int | None = None) -> bool:
    """Write ``store`` as the entry for ``key``; False (and nothing left behind) on any failure.

    The store's args must be a kept ``MappedBlob`` in the cache folder (``load_trace`` arranges
    that): its file is moved into the entry, not copied. ``root``, ``limit``: the cache folder
    and its size cap (defaults: ``cache_root()``, ``cache_limit()``).
    """
    root = root or cache_root()
    blob = store.args_blob
    tmp: str | None = None
    try:
        tmp = folder = tempfile.mkdtemp(prefix=temp_prefix("entry"), suffix=".tmp", dir=root)
        arrays: dict[str, list] = {}
        columns = [(f"{table_name}.{f.name}.npy", np.ascontiguousarray(getattr(getattr(store, table_name), f.name)))
                   for table_name in _TABLES for f in dataclasses.fields(getattr(store, table_name))]
        columns += [(f"tracks.{name}.npy", np.ascontiguousarray(arr)) for name, arr in store.tracks.columns.items()]
        keys = store.derived.get(shapekeys.MEMO) or shapekeys.build(store)  # the ATen operators' shapes, interned
        if keys is not None:
            columns += [(f"derived.{name}.npy", np.ascontiguousarray(getattr(keys, attr))) for name, attr in DERIVED.items()]
        # Two threads: copying ~250 MB into the page cache is most of a save, and numpy writes
        # without the GIL (1 GB trace: 0.37 s -> see the README's load table).
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda item: np.save(os.path.join(folder, item[0]), item[1], allow_pickle=False), columns))
        for name, arr in columns:
            arrays[name] = [arr.dtype.str, len(arr), os.path.getsize(os.path.join(tmp, name)), checksum(arr)]
        args_size = len(blob)
        if isinstance(blob, MappedBlob) and blob.keep:
            os.replace(blob.path, os.path.join(tmp, "args.bin"))
            moved = True
        else:
            atomic_write(os.path.join(tmp, "args.bin"), bytes(blob[:]))
            moved = False
        meta = {
            "format": FORMAT, "key": key, "created": time.time(), "arrays": arrays, "args_size": args_size,
            "trace": [str(Path(s.path).resolve()) for s in store.sources],
            "events": store.event_count,
            "sources": [dataclasses.asdict(s) for s in store.sources],
            "strings": store.strings,
            "tracks": {"ids": store.tracks.ids, "text": store.tracks.text},  # the columns are .npy files
            "origin_us": store.origin_us, "span_ns": store.span_ns, "warnings": store.warnings,
            "nesting_tolerance_ns": store.nesting_tolerance_ns,
            "metadata_events": store.metadata_events,
            "metadata_refs": store.metadata_refs,
            "extra_end_args": [[row, off, ln] for row, (off, ln) in store.extra_end_args.items()],
        }
        meta_bytes = msgspec.json.encode(meta)
        atomic_write(os.path.join(tmp, "meta.json"), meta_bytes)
        sums = {"format": FORMAT, "meta": _crc32(meta_bytes), "args": _blob_crc(blob)}
        atomic_write(os.path.join(tmp, CHECK), msgspec.json.encode(sums))
        final = root / key
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
        tmp = None
        if isinstance(blob, MappedBlob) and moved:
            blob.path = str(final / "args.bin")  # the same open mapping, now under its final name
        if keys is not None:
            store.derived.setdefault(shapekeys.MEMO, keys)
        enforce_limit(keep=key, limit=limit, root=root)
        return True
    except (OSError, ValueError, TypeError, msgspec.EncodeError):
        return False
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(blob, MappedBlob) and blob.keep and Path(blob.path).parent == root:
            # Still the loader's temp file (the save failed): it must not outlive the process.
            Path(blob.path).unlink(missing_ok=True)
            blob.keep = False


def _blob_crc(blob: Any) -> int:
    """CRC-32 of the args bytes (a mapped file's without a copy)."""
    if isinstance(blob, MappedBlob):
        view = blob.buffer()
        try:
            return _crc32(view)
        finally:
            view.release()
    return _crc32(bytes(blob[:]))


# ---- reading ----------------------------------------------------------------------------
class _Bad(Exception):
    """An entry that does not check out."""


# What every column must be, from the code (not from the entry: a crafted meta.json would agree
# with its own arrays). A test checks a freshly built store has exactly these.
COLUMN_DTYPES = {
    "slices": {"start_ns": "<i8", "end_ns": "<i8", "track": "<i4", "depth": "<i4", "lane": "<i4", "parent": "<i4",
               "name_id": "<i4", "cat_id": "<i4", "ordinal": "<i4", "end_ordinal": "<i4", "source": "<i2",
               "args_off": "<i8", "args_len": "<i4"},
    "instants": {"ts_ns": "<i8", "track": "<i4", "ph": "|i1", "name_id": "<i4", "cat_id": "<i4", "ordinal": "<i4",
                 "source": "<i2", "args_off": "<i8", "args_len": "<i4"},
    "counters": {"ts_ns": "<i8", "track": "<i4", "value": "<f8", "ordinal": "<i4", "source": "<i2"},
    "flows": {"src_slice": "<i4", "dst_slice": "<i4", "src_ts_ns": "<i8", "dst_ts_ns": "<i8", "src_track": "<i4",
              "dst_track": "<i4", "name_id": "<i4", "cat_id": "<i4", "src_event": "<i8", "dst_event": "<i8",
              "source": "<i2"},
}


# Optional parts of an entry: worked out from the store when it is written (``shapekeys``), absent
# when they could not be. Entry file name part -> ShapeKeys attribute; the dtypes are the code's.
DERIVED = {"shape_key": "keys", "shape_first": "first"}
DERIVED_DTYPES = {"shape_key": "<i4", "shape_first": "<i8"}


class _TrackLists(msgspec.Struct):
    ids: list[int | str | None]
    text: list[str]


CHECK = "check.json"  # CRC-32 of meta.json and args.bin: an edited or damaged one is rebuilt, not shown


class _Check(msgspec.Struct):
    format: int
    meta: int
    args: int


class _Meta(msgspec.Struct):
    """meta.json, typed: a string that is a list, a number that is text, is refused on decode."""

    format: int
    key: str
    created: float
    arrays: dict[str, tuple[str, int, int, int]]
    args_size: int
    trace: list[str]
    events: int
    sources: list[SourceInfo]  # each field's type checked (a by_phase that is no dict of ints is refused)
    strings: list[str]
    tracks: _TrackLists
    origin_us: float
    span_ns: int
    warnings: list[str]
    nesting_tolerance_ns: int
    metadata_events: Any
    metadata_refs: list[tuple[int, int, Any]]
    extra_end_args: list[tuple[int, int, int]]


def checksum(arr: np.ndarray) -> int:
    """CRC-32 of an array's bytes (ISA-L's where installed: ~8 GB/s, vs ~2.5 GB/s for zlib's)."""
    view = np.ascontiguousarray(arr).reshape(-1).view(np.uint8).data if arr.size else b""
    return _crc32(view)


try:
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover — isal has no wheel here
    from zlib import crc32 as _crc32

last_problem = ""  # why the last entry opened was refused (for the one-line note of the rebuild)


def open_entry(key: str, root: Path | None = None, verify: bool = True) -> TraceStore | None:
    """The cached store for ``key``, or None (a bad entry is deleted so the next save replaces it;
    ``last_problem`` says why).

    ``root``: another cache folder (the app's loader process uses a private one for --no-cache).
    ``verify`` False: an entry this program's own loader process has just written from the store
    it built: its columns' checksums, id bounds and order are not read again (one pass over every
    column, ~0.1-0.2 CPU-s at 1 GB, before the app's first frame); sizes, dtypes, lengths, the
    owner and the track table are still checked.
    """
    global last_problem
    last_problem = ""
    folder = (root or cache_root()) / key
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        return None
    try:
        _check_owner(folder)
        store = _open(folder, key, meta_path, verify)
        _touch(folder)
        return store
    except _Foreign as exc:
        last_problem = str(exc)
        return None  # not ours to delete
    except (_Bad, OSError, ValueError, TypeError, KeyError, IndexError, OverflowError, msgspec.DecodeError,
            msgspec.ValidationError) as exc:
        last_problem = str(exc) if isinstance(exc, _Bad) else f"unreadable ({type(exc).__name__})"
        shutil.rmtree(folder, ignore_errors=True)
        return None


class _Foreign(Exception):
    """An entry this user does not own alone: never read, never deleted."""


def _check_owner(folder: Path) -> None:
    """The entry and every file in it belong to this user and nobody else may write them:
    another user's entry could say anything about a trace."""
    if not hasattr(os, "getuid"):
        return
    uid = os.getuid()
    for path in [folder, *folder.iterdir()]:
        st = path.lstat()
        if st.st_uid != uid:
            raise _Foreign(f"{path.name} is owned by another user (uid {st.st_uid})")
        if st.st_mode & 0o022:
            raise _Foreign(f"{path.name} is writable by others (mode {st.st_mode & 0o777:o})")
        if path != folder and not (path.is_file() and not path.is_symlink()):
            raise _Foreign(f"{path.name} is not a regular file")


def _open(folder: Path, key: str, meta_path: Path, verify: bool = True) -> TraceStore:
    meta_bytes = meta_path.read_bytes()
    raw = msgspec.json.decode(meta_bytes)
    if not isinstance(raw, dict) or raw.get("format") != FORMAT or raw.get("key") != key:
        raise _Bad("foreign or older entry")
    sums = msgspec.json.decode((folder / CHECK).read_bytes(), type=_Check)
    if sums.format != FORMAT or _crc32(meta_bytes) != sums.meta:
        raise _Bad("meta.json: checksum differs (the file changed after it was written)")
    meta = msgspec.convert(raw, _Meta)
    if meta.events < 0 or meta.args_size < 0 or any(v < 0 for s in meta.sources for v in s.by_phase.values()):
        raise _Bad("meta.json: a negative count")
    tables = {}
    for table_name, cls in _TABLES.items():
        tables[table_name] = cls(**_columns(folder, meta, table_name, COLUMN_DTYPES[table_name], verify))
    args_path = folder / "args.bin"
    if args_path.stat().st_size != meta.args_size:
        raise _Bad("args.bin: wrong size")
    args_blob = MappedBlob(args_path, keep=True) if meta.args_size else b""
    if verify and _blob_crc(args_blob) != sums.args:
        raise _Bad("args.bin: checksum differs (the file changed after it was written)")
    tracks = TrackTable(_columns(folder, meta, "tracks", TRACK_DTYPES, verify), meta.tracks.ids, meta.tracks.text)
    if (problem := tracks.check()) is not None:
        raise _Bad(problem)
    if not 0 <= meta.span_ns < 2**62 or not np.isfinite(meta.origin_us):
        raise _Bad("span or origin out of range")
    if verify:
        _check_bounds(tables, len(meta.strings), len(tracks), meta.args_size)
        _check_invariants(tables, meta.span_ns)
    store = TraceStore(
        sources=list(meta.sources), strings=meta.strings, tracks=tracks,
        slices=tables["slices"], instants=tables["instants"], counters=tables["counters"], flows=tables["flows"],
        args_blob=args_blob,
        origin_us=float(meta.origin_us), span_ns=int(meta.span_ns), warnings=list(meta.warnings),
        metadata_events=meta.metadata_events,
        extra_end_args={int(r): (int(o), int(n)) for r, o, n in meta.extra_end_args},
        metadata_refs=[(int(src), int(ordinal), pid) for src, ordinal, pid in meta.metadata_refs],
        nesting_tolerance_ns=int(meta.nesting_tolerance_ns),
    )
    if "derived.shape_key.npy" in meta.arrays:
        keys = shapekeys.ShapeKeys(*(_array(folder, meta, f"derived.{name}.npy", DERIVED_DTYPES[name], verify)
                                           for name in DERIVED))
        if (problem := keys.problem(len(store.slices))) is not None:
            raise _Bad(problem)
        store.derived[shapekeys.MEMO] = keys
    return store


def _columns(folder: Path, meta: _Meta, table_name: str, dtypes: dict[str, str],
             verify: bool = True) -> dict[str, np.ndarray]:
    """One table's columns, mapped, each checked: size, dtype, length, checksum (``verify``); all one length."""
    cols = {column: _array(folder, meta, f"{table_name}.{column}.npy", want, verify) for column, want in dtypes.items()}
    if len({len(c) for c in cols.values()}) > 1:
        raise _Bad(f"{table_name}: columns of different lengths")
    return cols


def _array(folder: Path, meta: _Meta, name: str, want: str, verify: bool = True) -> np.ndarray:
    """One array of the entry, mapped, checked against meta.json and the code: size, dtype, length,
    checksum (``verify``)."""
    dtype, length, size, crc = meta.arrays[name]
    path = folder / name
    if path.stat().st_size != size:
        raise _Bad(f"{name}: truncated")
    arr = np.load(path, mmap_mode="r" if length else None, allow_pickle=False)
    if arr.dtype.str != want or arr.shape != (length,) or dtype != arr.dtype.str:
        raise _Bad(f"{name}: unexpected dtype or shape")
    if verify and checksum(arr) != crc:
        raise _Bad(f"{name}: checksum differs (the file changed after it was written)")
    return arr


def _check_bounds(tables: dict[str, Any], n_strings: int, n_tracks: int, args_size: int) -> None:
    """Ids must index what they point to, so a damaged entry cannot crash the app later."""
    s, i, c, f = tables["slices"], tables["instants"], tables["counters"], tables["flows"]
    n_slices = len(s)
    checks = [
        (s.name_id, n_strings), (s.cat_id, n_strings), (s.track, n_tracks), (s.parent, n_slices),
        (i.name_id, n_strings), (i.cat_id, n_strings), (i.track, n_tracks), (c.track, n_tracks),
        (f.src_slice, n_slices), (f.dst_slice, n_slices), (f.src_track, n_tracks), (f.dst_track, n_tracks),
        (f.name_id, n_strings), (f.cat_id, n_strings),
    ]
    for arr, limit in checks:
        if len(arr) and (int(arr.max()) >= limit or int(arr.min()) < -1):
            raise _Bad("an id out of range")
    for table in (s, i):
        if len(table) and (int((table.args_off + table.args_len).max()) > args_size or int(table.args_off.min()) < 0
                           or int(table.args_len.min()) < 0):
            raise _Bad("args out of range")


def _check_invariants(tables: dict[str, Any], span_ns: int) -> None:
    """What the store's readers rely on, checked in a few vectorised passes: slices sorted by
    (track, lane, start), inside [0, span], never ending before they start; a parent on the same
    track, one level up (so parent chains end: no cycle), starting no later than its child."""
    s = tables["slices"]
    if not len(s):
        return
    start, end = s.start_ns, s.end_ns
    if int(start.min()) < 0 or int(end.max()) > span_ns or bool((end < start).any()):
        raise _Bad("a slice outside the trace or ending before it starts")
    if int(s.depth.min()) < 0 or int(s.lane.min()) < 0:
        raise _Bad("a negative depth or lane")
    dt, dl, ds = np.diff(s.track), np.diff(s.lane), np.diff(start)
    if bool(((dt < 0) | ((dt == 0) & ((dl < 0) | ((dl == 0) & (ds < 0))))).any()):
        raise _Bad("slices out of order")
    child = np.flatnonzero(s.parent >= 0)
    if len(child):
        par = s.parent[child]
        if bool(((s.track[par] != s.track[child]) | (s.depth[par] != s.depth[child] - 1)
                 | (start[par] > start[child])).any()):
            raise _Bad("a parent that does not contain its child (or a cycle)")
    for table in (tables["instants"], tables["counters"]):
        if len(table) and (int(table.ts_ns.min()) < 0 or int(table.ts_ns.max()) > span_ns):
            raise _Bad("a point event outside the trace")


# ---- managing -----------------------------------------------------------------------------
@dataclasses.dataclass
class EntryInfo:
    key: str
    trace: list[str]
    events: int
    disk_bytes: int
    created: float
    used: float  # last opened or written (the LRU order)


def _entry_folders(root: Path) -> list[Path]:
    """vtui's own entries: folders named by a key, not links (a link may point anywhere)."""
    try:
        return sorted(p for p in root.iterdir() if _KEY.match(p.name) and not p.is_symlink() and p.is_dir())
    except OSError:
        return []


def ranks_folders(root: Path | None = None) -> list[Path]:
    """The per-rank Parquet folders in the cache, named as vtui names them, not links."""
    parent = (root or cache_root()) / RANKS_FOLDER
    if parent.is_symlink():
        return []
    try:
        return sorted(p for p in parent.iterdir() if _RANKS_KEY.match(p.name) and not p.is_symlink() and p.is_dir())
    except OSError:
        return []


def owner_problem(folder: Path) -> str | None:
    """Why a cached folder cannot be trusted (another user's, writable by others, a link or
    odd entry in it), or None."""
    try:
        _check_owner(folder)
    except _Foreign as exc:
        return str(exc)
    except OSError as exc:
        return f"unreadable ({type(exc).__name__})"
    return None


def list_entries(root: Path | None = None) -> list[EntryInfo]:
    out = []
    for folder in _entry_folders(root or cache_root()):
        meta_path = folder / "meta.json"
        try:
            meta = msgspec.json.decode(meta_path.read_bytes())
            trace, events, created = list(meta["trace"]), int(meta["events"]), float(meta["created"])
        except (OSError, ValueError, TypeError, KeyError, msgspec.DecodeError):
            trace, events, created = ["(unreadable entry)"], 0, 0.0
        out.append(EntryInfo(folder.name, trace, events, disk_bytes(folder), created, _used(folder)))
    return out


def _used(folder: Path) -> float:
    try:
        return folder.stat().st_mtime
    except OSError:
        return 0.0


def _touch(folder: Path) -> None:
    """Mark an entry used now (the folder's mtime; the LRU cap evicts the oldest)."""
    try:
        os.utime(folder)
    except OSError:
        pass


def _remove_entry(folder: Path) -> int:
    size = disk_bytes(folder)
    try:
        shutil.rmtree(folder)
    except OSError:
        return 0
    return size


def clear(root: Path | None = None) -> tuple[int, int]:
    """Delete every entry and orphaned temp file; returns (entries, bytes) freed. Nothing else
    in the folder is touched (notes, a ``.git``, links and what they point to)."""
    root = root or cache_root()
    entries = freed = 0
    for folder in _entry_folders(root) + ranks_folders(root):
        size = _remove_entry(folder)
        entries += bool(size)
        freed += size
    swept = sweep([root, system_temp()])
    return entries, freed + swept.bytes


def remove(paths: list[Path], root: Path | None = None) -> tuple[int, int]:
    """Delete the entries of a trace (its current version, and any older one of the same
    files); returns (entries, bytes) freed."""
    wanted = sorted(str(p.resolve()) for p in paths)
    key = entry_key(paths) if all(p.is_file() for p in paths) else None
    root = root or cache_root()
    entries = freed = 0
    for info in list_entries(root):
        if info.key == key or sorted(info.trace) == wanted:
            size = _remove_entry(root / info.key)
            entries += 1
            freed += size
    return entries, freed


def enforce_limit(keep: str | None = None, limit: int | None = None, root: Path | None = None) -> tuple[int, int]:
    """Evict least recently used entries (and per-rank Parquet folders) until the cache fits
    ``limit`` (default ``cache_limit()``); never ``keep`` (the entry just written). Returns
    (entries, bytes)."""
    limit = cache_limit() if limit is None else limit
    # Sizes and last use only (no meta.json read: it holds every string of the trace).
    root = root or cache_root()
    found = sorted(((_used(f), disk_bytes(f), f) for f in _entry_folders(root) + ranks_folders(root)), key=lambda e: e[0])
    total = sum(size for _, size, _ in found)
    entries = freed = 0
    for _, size, folder in found:
        if total <= limit:
            break
        if folder.name == keep:  # the app maps the entry just written: it stays, whatever the limit
            continue
        freed += _remove_entry(folder)
        total -= size
        entries += 1
    return entries, freed


def temp_stats(root: Path | None = None) -> TempStats:
    """vtui temp files in the cache and temp folders (a running load's, or left by a killed one)."""
    out = TempStats()
    for folder in (root or cache_root(), system_temp()):
        for path in temps_in(folder):
            out.count += 1
            out.bytes += disk_bytes(path)
    return out
