"""Open a trace file or a folder of per-rank files into a TraceStore (io → store)."""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import cast

from vtui.errors import DISK_FULL, TraceLoadError
from vtui.gcpause import gc_paused
from vtui.io.argsfile import ArgsFile
from vtui.io.columns import ColumnSink
from vtui.io.jsonscan import comment_hint, scan_trace
from vtui.io.nsys import FORM as NSYS_FORM
from vtui.io.nsys import is_sqlite, read_nsys
from vtui.io.pftrace import FORM as PFTRACE_FORM
from vtui.io.pftrace import SUFFIXES as PFTRACE_SUFFIXES
from vtui.io.pftrace import is_pftrace, read_pftrace
from vtui.io.reader import GZIP_MAGIC, file_fingerprint, open_trace_data, read_error
from vtui.load.malloc import give_back_free_memory, load_memory_settings
from vtui.load.parallel import ParallelDecode, can_start_workers, check_not_bootstrapping, default_jobs
from vtui.options import LoadOptions
from vtui.store import cache as trace_cache
from vtui.store.build import build_store
from vtui.store.source_part import SourcePart
from vtui.store.store import TraceStore

Progress = Callable[[float], None]
# .sqlite: an Nsight Systems export; .pftrace / .perfetto-trace (and .gz): a Perfetto protobuf trace
TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", *PFTRACE_SUFFIXES)
_READ_SHARE = 0.15  # of a gzip file's progress (inflating with ISA-L: ~0.5 s of ~4 s at 1 GB); decoding takes the rest
_BUILD_SHARE = 0.3  # of the whole load, at the end (pairing, nesting, index, flows): ~1/3 of a big load
# Below this (decompressed bytes) a second process costs about what it saves (measured, medians
# of 3 on 2 cores, 1 vs 2 processes: 50 MB 0.25 / 0.29 s, 100 MB 0.48 / 0.47 s, 150 MB
# hf_llama_big 0.58 / 0.56 s, 200 MB 0.99 / 0.78 s).
PARALLEL_MIN = 128 << 20
MAX_FILES = 32_767  # the store's `source` columns are int16


def trace_files(path: Path) -> list[Path]:
    """The files a path stands for: itself, or every trace file (``TRACE_SUFFIXES``) in a folder."""
    if not path.exists():
        if path.is_symlink():
            raise TraceLoadError(f"{path}: broken symbolic link (or a link loop)")
        raise TraceLoadError(f"{path}: no such file or directory")
    if not path.is_dir():
        if not path.is_file():  # a pipe blocks and a device never ends: refuse before opening
            raise TraceLoadError(f"{path}: not a regular file")
        return [path]
    try:
        found = [p for p in path.iterdir() if p.name.endswith(TRACE_SUFFIXES) and p.is_file()]
    except PermissionError:
        raise TraceLoadError(f"{path}: permission denied") from None
    if not found:
        raise TraceLoadError(f"{path}: folder holds no *.json, *.json.gz, *.sqlite or *.pftrace trace files")
    if len(found) > MAX_FILES:  # said before any is read, not after a minute of loading
        raise TraceLoadError(f"{path}: {len(found):,} trace files; vtui opens at most {MAX_FILES:,} at once "
                             "(each event keeps its file as a 16-bit id): open a subfolder")
    return sorted(found, key=_natural_key)


def _odd_entries(folder: Path) -> list[str]:
    """Trace-named entries of a folder that cannot be read as files (link loops, pipes…)."""
    try:
        return [f"{p.name}: not a regular file (broken link, link loop, pipe or device)" for p in sorted(folder.iterdir())
                if p.name.endswith(TRACE_SUFFIXES) and not p.is_file() and not p.is_dir()]
    except OSError:
        return []


def _natural_key(path: Path) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def load_trace(path: str | os.PathLike, progress: Progress | None = None, cache: bool = True,
               jobs: int | None = None, options: LoadOptions | None = None) -> TraceStore:
    """Load a trace (file or folder). Raises TraceLoadError with a one-line message.

    ``options``: how (the cache's folder and cap, the gzip inflate limit, the pure-Python path);
    without them, the environment's defaults (``LoadOptions.from_environ``: this is an edge).
    ``cache``: False skips the index cache (``vtui.store.cache``) whatever ``options`` say;
    ``jobs``: decoder processes for a big file (default: all cores).
    """
    check_not_bootstrapping()
    options = LoadOptions.from_environ() if options is None else options
    if not cache and options.cache:
        options = dataclasses.replace(options, cache=False)
    root = options.cache_root
    files = trace_files(Path(path))
    key = trace_cache.entry_key(files) if options.cache else None
    problem = ""
    if key is not None:
        store = _open_entry(key, files, root)
        if store is not None:
            if progress:
                progress(1.0)
            return store
        problem = trace_cache.last_problem
    jobs = default_jobs() if jobs is None else max(1, jobs)
    work_dir = trace_cache.work_dir(root) if key is not None else None
    if work_dir is None:
        key = None  # no writable cache folder: load without one
    args = None
    try:
        args = ArgsFile(work_dir)
        # No collections while loading: the small objects made (a protobuf trace's open slices and flow
        # steps, the store's flow bindings) form no cycles, and over a million of them a collection per
        # 700 took 0.3 of 1.8 CPU-s (100 MB pftrace); what is left is freed by reference counts.
        with load_memory_settings(), gc_paused():
            store = _load_files(path, files, progress, args, jobs, work_dir, options)
    except MemoryError:
        if args is not None:
            args.discard()
        raise TraceLoadError(f"{path}: out of memory while loading it{memory_limit_text()}; its largest event "
                             "needs about three times its own size: raise the limit or free memory") from None
    except OSError as exc:
        if args is not None:
            args.discard()
        if exc.errno not in DISK_FULL:
            raise
        if work_dir is None:
            raise TraceLoadError(f"{path}: no space left for the load's temp files in {tempfile.gettempdir()} "
                                 f"({exc.strerror}); free some or point TMPDIR elsewhere") from None
        # The cache folder's disk is full: the temp files go to the temp folder instead.
        store = load_trace(path, progress, cache=False, jobs=jobs, options=options)
        store.warnings.insert(0, f"the cache folder {work_dir} is full ({exc.strerror}): loaded without the cache")
        return store
    except BaseException:
        if args is not None:
            args.discard()
        raise
    if key is not None:
        trace_cache.save_entry(key, store, root, options.cache_max)
    if problem:  # after the save: the note is about this load, not part of the new entry
        store.warnings.insert(0, f"the index cache entry was not used ({problem}): rebuilt from the trace")
    give_back_free_memory()
    if progress:
        progress(1.0)
    return store


def memory_limit_text() -> str:
    """`` (this process may use at most 6.0 GiB)`` where an address-space limit is set, else ``""``."""
    try:
        import resource  # noqa: PLC0415 — not on every platform

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):
        return ""
    return "" if soft == resource.RLIM_INFINITY else f" (this process may use at most {soft / 2**30:.1f} GiB)"


def open_cached(path: str | os.PathLike, root: Path | None = None) -> TraceStore | None:
    """The trace's index-cache entry (in ``root``, default the environment's cache folder),
    mapped (milliseconds); None when it has none. Raises TraceLoadError for a path that is not a
    trace file or folder."""
    files = trace_files(Path(path))
    key = trace_cache.entry_key(files)
    return _open_entry(key, files, root) if key is not None else None


def _open_entry(key: str, files: list[Path], root: Path | None) -> TraceStore | None:
    store = trace_cache.open_entry(key, root)
    if store is not None:
        for src, f in zip(store.sources, files):
            src.path = str(f)  # as given this time (the key is the resolved path)
    return store


def _load_files(path, files: list[Path], progress: Progress | None, args: ArgsFile, jobs: int,
                work_dir: str | None, options: LoadOptions) -> TraceStore:
    sizes = [max(f.stat().st_size, 1) for f in files]
    total = sum(sizes)
    done = 0
    parts: list[SourcePart] = []
    errors: list[str] = _odd_entries(Path(path)) if len(files) > 1 or Path(path).is_dir() else []
    for f, size in zip(files, sizes):
        base, share = done / total, size / total * (1 - _BUILD_SHARE)
        read_share = _READ_SHARE if _is_gzip(f) else 0.0

        def report(frac: float, phase: int, base=base, share=share, read_share=read_share) -> None:
            if progress:
                at = frac * read_share if phase == 0 else read_share + frac * (1 - read_share)
                progress(base + share * at)

        try:
            parts.append(_load_part(f, lambda x: report(x, 0), lambda x: report(x, 1), len(files) > 1,
                                    args, jobs, work_dir, options))
        except TraceLoadError as exc:
            if len(files) == 1:
                raise
            errors.append(f"{f.name}: {exc}")
        done += size
    if not parts:
        raise TraceLoadError(f"{path}: no trace could be loaded ({'; '.join(errors)})")
    if not any(len(p.cols()) for p in parts):
        raise TraceLoadError(f"{path}: the trace holds no events" + (f" (skipped {'; '.join(errors)})" if errors else ""))
    blob = args.finish(keep=work_dir is not None)
    give_back_free_memory()  # before the build: it lowers the peak
    build_from = 1 - _BUILD_SHARE
    store = build_store(parts, blob, (lambda f: progress(build_from + _BUILD_SHARE * f)) if progress else None,
                        threads=jobs)  # the nesting splits over the cores the decoders had
    store.warnings[:0] = [f"skipped {e}" for e in errors]
    return store


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False


def _load_part(path: Path, read_progress: Progress, decode_progress: Progress, many: bool, args: ArgsFile,
               jobs: int, work_dir: str | None, options: LoadOptions) -> SourcePart:
    try:
        fingerprint = list(file_fingerprint(path))  # before reading: export checks the file is still this one
    except OSError as exc:
        raise read_error(path, exc) from None
    if is_sqlite(path):
        part = _load_nsys(path, decode_progress, many, args, jobs)
        part.fingerprint = fingerprint
        return part
    if is_pftrace(path):
        part = _load_pftrace(path, decode_progress, many, args, options)
        part.fingerprint = fingerprint
        _check_unchanged(path, fingerprint)
        return part
    if path.name.endswith((".nsys-rep", ".qdrep")):  # the report itself is a private format
        raise TraceLoadError(f"{path}: an Nsight Systems report; vtui reads its SQLite export: "
                             f"nsys export --type sqlite {path.name}")
    data, read_warnings, data_path, spilled = open_trace_data(path, read_progress, work_dir, options.max_inflate)
    sink = ColumnSink(args=args.writer(), pure_python=options.pure_python, expect_bytes=len(data))
    fast = None
    if data_path and jobs > 1 and len(data) >= PARALLEL_MIN and can_start_workers():
        fast = ParallelDecode(data_path, args, jobs, decode_progress, pure_python=options.pure_python)
    head = bytes(data[: 1 << 16])  # inflated: a gzip's comment lines are found too (see below)
    try:
        result = scan_trace(cast(bytes, data), sink, decode_progress, fast)  # an mmap reads as bytes do
    except TraceLoadError as exc:  # with the reader's warnings: "empty" after a cut gzip says why
        _check_unchanged(path, fingerprint)  # a file cut while mapped reads as zeros: say that instead
        raise TraceLoadError(f"{path}: {exc}" + "".join(f" ({w})" for w in read_warnings)) from None
    finally:
        if not isinstance(data, bytes):
            data.close()
        if spilled and data_path:
            os.unlink(data_path)
    columns = sink.finish()
    _check_unchanged(path, fingerprint)
    if not len(columns):
        hint = comment_hint(head)  # is it JSON with comments?
        if hint:
            raise TraceLoadError(f"{path}: the trace holds no events{hint}")
    label = _label(path, result.metadata) if many else ""
    return SourcePart(
        path=str(path), label=label, form=result.form, repaired=result.repaired or bool(read_warnings),
        metadata=result.metadata, warnings=read_warnings + result.warnings, columns=columns,
        fingerprint=fingerprint,
    )


def _check_unchanged(path: Path, fingerprint: list) -> None:
    """The file must still be the one that was read: one rewritten or cut while loading gives
    events from two versions. (A plain file cut shorter while mapped reads as zeros past its new
    end, not SIGBUS, see vtui.io.mapguard; this check then stops the load.)"""
    try:
        now = list(file_fingerprint(path))
    except OSError:
        now = []
    if now != fingerprint:
        raise TraceLoadError(f"{path}: changed while it was being loaded (written to, cut or replaced); "
                             "load it again once it is complete")


def _load_nsys(path: Path, progress: Progress, many: bool, args: ArgsFile, jobs: int) -> SourcePart:
    result = read_nsys(path, args.writer(), progress, jobs)
    return SourcePart(path=str(path), label=_label(path, {}) if many else "", form=NSYS_FORM, repaired=False,
                      metadata=result.metadata, warnings=result.warnings, columns=result.columns)


def _load_pftrace(path: Path, progress: Progress, many: bool, args: ArgsFile, options: LoadOptions) -> SourcePart:
    result = read_pftrace(path, args.writer(), progress, options.max_inflate, options.pure_python)
    return SourcePart(path=str(path), label=_label(path, result.metadata) if many else "", form=PFTRACE_FORM,
                      repaired=False, metadata=result.metadata, warnings=result.warnings, columns=result.columns)


def _label(path: Path, metadata: dict) -> str:
    info = metadata.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return f"rank {info['rank']}"
    name = path.name
    for suffix in (".gz", ".json", ".sqlite", ".pftrace", ".perfetto-trace", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    return name
