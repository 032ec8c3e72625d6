"""Read a trace file's bytes: plain or gzip, with progress, recovering a cut-short gzip."""

from __future__ import annotations

import hashlib
import mmap
import os
import tempfile
import types
import zlib
from collections.abc import Callable
from pathlib import Path

from vtui.errors import DISK_FULL, TraceLoadError
from vtui.io.mapguard import guarded
from vtui.tempfiles import temp_prefix

_gzip_codec: types.ModuleType
try:  # ISA-L inflates gzip ~2.8x faster than zlib (1 GB of JSON: 0.26 s vs 0.73 s, measured)
    from isal import isal_zlib as _gzip_codec

    _INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, _gzip_codec.error)
except ImportError:  # not installed (a platform without its wheels): the standard library
    _gzip_codec = zlib
    _INFLATE_ERRORS = (zlib.error,)
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip header and trailer around the deflate stream

Progress = Callable[[float], None]

GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 8 << 20  # read/inflate in 8 MiB steps so progress moves on big files
MAX_INFLATE_RATIO = 200.0  # real traces inflate 16-30x; deflate can reach ~1000x, and members repeat


def read_trace_bytes(path: Path, progress: Progress | None = None,
                     max_inflate: float = MAX_INFLATE_RATIO) -> tuple[bytes, list[str]]:
    """Return the (decompressed) bytes of ``path`` and warnings about damage found.

    A gzip stream that ends early keeps everything inflated so far; the JSON layer then
    repairs the cut. Progress goes from 0 to 1 over the bytes read. ``max_inflate``: see
    ``inflate_limit``.
    """
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == GZIP_MAGIC:
                try:
                    return _gunzip(fh, size, progress, max_inflate)
                except TraceLoadError as exc:
                    raise TraceLoadError(f"{path}: {exc}") from None
            return _read_plain(fh, size, progress), []
    except OSError as exc:
        raise read_error(path, exc) from None


def decoded_size(path: Path) -> int:
    """About how many bytes the trace is once inflated: a gzip's own record of it (its last
    4 bytes: the size mod 4 GiB), never less than the file; the file's size otherwise."""
    size = os.path.getsize(path)
    try:
        with open(path, "rb") as fh:
            if fh.read(2) != GZIP_MAGIC or size < 20:
                return size
            fh.seek(-4, os.SEEK_END)
            return max(size, int.from_bytes(fh.read(4), "little"))
    except OSError:  # unreadable: the load itself says so (or skips it, in a folder)
        return size


SPILL_GZIP = 4 << 20  # compressed bytes: above this a gzip is inflated to a file, not into RAM


def open_trace_data(path: Path, progress: Progress | None = None, spill_dir: str | None = None,
                    max_inflate: float = MAX_INFLATE_RATIO) -> tuple[bytes | mmap.mmap, list[str], str | None, bool]:
    """Bytes of a trace for decoding, without holding a big file in RAM.

    Returns (data, warnings, data_path, spilled): a plain file is memory-mapped and
    ``data_path`` is the file itself (``vtui.io.mapguard``: a file cut meanwhile); a big gzip is
    inflated into a temp file in ``spill_dir`` (``spilled``: the caller deletes it) and mapped; a small one is inflated into memory
    (``data_path`` None). Worker processes map ``data_path`` themselves.
    """
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head != GZIP_MAGIC:
                if progress:
                    progress(1.0)
                if size == 0:
                    return b"", [], None, False
                # Mapped, guard or not: without the guard (no compiler at install) a file cut while
                # mapped can still end the process with SIGBUS, but copying a GB trace into memory
                # would cost its size in RAM and the parallel decoders (they map the file themselves).
                guarded()
                return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ), [], str(path), False
            if size < SPILL_GZIP:
                data, warnings = _gunzip(fh, size, progress, max_inflate)
                return data, warnings, None, False
            fd, spill = tempfile.mkstemp(prefix=temp_prefix("gunzip"), suffix=".json", dir=spill_dir)
            try:
                with os.fdopen(fd, "wb") as out:
                    warnings = _gunzip_to(fh, size, progress, out, max_inflate)
                with open(spill, "rb") as inflated:
                    if os.fstat(inflated.fileno()).st_size == 0:
                        os.unlink(spill)
                        return b"", warnings, None, False
                    guarded()
                    mapped = mmap.mmap(inflated.fileno(), 0, access=mmap.ACCESS_READ)
            except BaseException:
                Path(spill).unlink(missing_ok=True)
                raise
            return mapped, warnings, spill, True
    except OSError as exc:
        if exc.errno in DISK_FULL:  # writing the spill, not reading the trace: the caller decides
            raise
        raise read_error(path, exc) from None


def read_error(path: Path, exc: OSError) -> TraceLoadError:
    """An OS error while reading a trace, as the one line the user sees."""
    if isinstance(exc, IsADirectoryError):
        return TraceLoadError(f"{path}: is a directory")
    if isinstance(exc, PermissionError):
        return TraceLoadError(f"{path}: permission denied")
    if isinstance(exc, FileNotFoundError):
        return TraceLoadError(f"{path}: no such file")
    return TraceLoadError(f"{path}: cannot read ({exc.strerror or exc})")


def _read_plain(fh, size: int, progress: Progress | None) -> bytes:
    if progress is None or size < 2 * _BLOCK:
        data = fh.read()
        if progress:
            progress(1.0)
        return data
    parts = []
    done = 0
    while block := fh.read(_BLOCK):
        parts.append(block)
        done += len(block)
        progress(min(1.0, done / max(size, 1)))
    return b"".join(parts)


def _gunzip(fh, size: int, progress: Progress | None, max_inflate: float) -> tuple[bytes, list[str]]:
    out: list[bytes] = []
    warnings = _inflate(fh, size, progress, out.append, max_inflate)
    return b"".join(out), warnings


def _gunzip_to(fh, size: int, progress: Progress | None, sink, max_inflate: float) -> list[str]:
    return _inflate(fh, size, progress, sink.write, max_inflate)


INFLATE_FLOOR = 256 << 20  # bytes any gzip may inflate to, whatever its ratio


def inflate_limit(compressed: int, ratio: float = MAX_INFLATE_RATIO) -> int | None:
    """Bytes a gzip of ``compressed`` bytes may inflate to with ``ratio`` (the CLI's
    ``--max-inflate``; 0: no limit), at least ``INFLATE_FLOOR``; None: no limit."""
    return None if ratio <= 0 else max(int(ratio * compressed), INFLATE_FLOOR)


def _inflate(fh, size: int, progress: Progress | None, emit, max_inflate: float) -> list[str]:
    """Inflate gzip member after member, handing each piece to ``emit``; returns warnings.

    Stops with an error past ``inflate_limit``: a few MB of crafted gzip would otherwise fill
    the memory or the disk (a 4 MB file reached 8 GB) before anything could be shown.
    """
    warnings: list[str] = []
    produced = 0
    limit = inflate_limit(size, max_inflate)
    inflater = _gzip_codec.decompressobj(_GZIP_WBITS)
    done = 0
    pending = b""
    try:
        while True:
            block = pending or fh.read(_BLOCK)
            pending = b""
            if not block:
                break
            done += len(block)
            while True:  # bounded pieces: 8 MiB of gzip can inflate to 150 MB at once
                piece = inflater.decompress(block, _BLOCK)
                produced += len(piece)
                if limit is not None and produced > limit:
                    raise TraceLoadError(
                        f"inflates to over {produced / size:,.0f}x its size ({produced >> 20:,} MiB from "
                        f"{size / (1 << 20):,.1f} MiB): a gzip bomb? If the trace is real, load it with "
                        f"--max-inflate 0 (or a higher ratio; default {MAX_INFLATE_RATIO:g})")
                emit(piece)
                if inflater.eof or not inflater.unconsumed_tail:
                    break
                block = inflater.unconsumed_tail
            if inflater.eof and inflater.unused_data:
                # Concatenated gzip members: start a new inflater on the rest.
                pending = inflater.unused_data
                done -= len(pending)
                inflater = _gzip_codec.decompressobj(_GZIP_WBITS)
            if progress:
                progress(min(1.0, done / max(size, 1)))
        piece = inflater.flush()
        produced += len(piece)
        emit(piece)
    except _INFLATE_ERRORS as exc:
        if not produced:
            raise TraceLoadError(f"corrupt gzip data ({exc})") from None
        warnings.append(f"gzip data is corrupt after {produced:,} bytes; kept what came before")
    if not inflater.eof and not warnings:
        warnings.append("gzip stream ends early (file cut short); kept what was there")
    return warnings


_SAMPLES, _SAMPLE = 16, 4096  # blocks hashed between the two ends of a file
_EDGE = 64 << 10  # bytes hashed at each end of a file for its fingerprint


def file_fingerprint(path: str | Path) -> tuple[int, int, str, int, int]:
    """(size, mtime_ns, content hash, ctime_ns, inode): what tells a file changed since it was read.

    The hash covers the first and last 64 KiB and 16 blocks of 4 KiB spread over the rest; the
    ctime catches any other edit, even one of the same size whose mtime was set back (``touch -d``
    and ``os.utime`` set the ctime to now, and nothing short of the clock sets it back)."""
    st = os.stat(path)
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        digest.update(fh.read(_EDGE))
        if st.st_size > 2 * _EDGE:
            inner = st.st_size - 2 * _EDGE
            for k in range(_SAMPLES):
                fh.seek(_EDGE + inner * k // _SAMPLES)
                digest.update(fh.read(_SAMPLE))
        if st.st_size > _EDGE:
            fh.seek(max(_EDGE, st.st_size - _EDGE))
            digest.update(fh.read(_EDGE))
    return st.st_size, st.st_mtime_ns, digest.hexdigest(), st.st_ctime_ns, st.st_ino
