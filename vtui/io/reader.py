"""Read a trace file's bytes: plain or gzip, with progress, recovering a cut-short gzip."""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from pathlib import Path

from vtui.errors import TraceLoadError

Progress = Callable[[float], None]

GZIP_MAGIC = b"\x1f\x8b"
_BLOCK = 8 << 20  # read/inflate in 8 MiB steps so progress moves on big files


def read_trace_bytes(path: Path, progress: Progress | None = None) -> tuple[bytes, list[str]]:
    """Return the (decompressed) bytes of ``path`` and warnings about damage found.

    A gzip stream that ends early keeps everything inflated so far; the JSON layer then
    repairs the cut. Progress goes from 0 to 1 over the bytes read.
    """
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == GZIP_MAGIC:
                return _gunzip(fh, size, progress)
            return _read_plain(fh, size, progress), []
    except IsADirectoryError:
        raise TraceLoadError(f"{path}: is a directory") from None
    except PermissionError:
        raise TraceLoadError(f"{path}: permission denied") from None
    except FileNotFoundError:
        raise TraceLoadError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceLoadError(f"{path}: cannot read ({exc.strerror or exc})") from None


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


def _gunzip(fh, size: int, progress: Progress | None) -> tuple[bytes, list[str]]:
    out: list[bytes] = []
    warnings: list[str] = []
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    done = 0
    pending = b""
    try:
        while True:
            block = pending or fh.read(_BLOCK)
            pending = b""
            if not block:
                break
            done += len(block)
            out.append(inflater.decompress(block))
            if inflater.eof and inflater.unused_data:
                # Concatenated gzip members: start a new inflater on the rest.
                pending = inflater.unused_data
                done -= len(pending)
                inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            if progress:
                progress(min(1.0, done / max(size, 1)))
        out.append(inflater.flush())
    except zlib.error as exc:
        if not any(out):
            raise TraceLoadError(f"corrupt gzip data ({exc})") from None
        warnings.append(f"gzip data is corrupt after {sum(map(len, out)):,} bytes; kept what came before")
    if not inflater.eof and not warnings:
        warnings.append("gzip stream ends early (file cut short); kept what was there")
    return b"".join(out), warnings
