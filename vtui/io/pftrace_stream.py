"""A Perfetto trace file's bytes as a stream (plain, or gzip inflated block by block), with the
fraction read so far, so a trace of any size passes through one block of memory; and whether a
file's first bytes are a trace's first record."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from vtui.errors import TraceLoadError
from vtui.io.protowire import PACKET_TAG, WireError, fields, varint
from vtui.io.reader import _GZIP_WBITS, _INFLATE_ERRORS, GZIP_MAGIC, MAX_INFLATE_RATIO, _gzip_codec, inflate_limit

_BLOCK = 4 << 20


class TraceStream:
    """``read(n)`` over the trace's (inflated) bytes; ``fraction()`` of the file read;
    ``warnings`` about a damaged or cut gzip (what came before is kept)."""

    def __init__(self, fh: BinaryIO, size: int, max_inflate: float = MAX_INFLATE_RATIO) -> None:
        self.fh = fh
        self.size = max(size, 1)
        self.done = 0
        self.warnings: list[str] = []
        head = fh.read(2)
        fh.seek(0)
        self.gzip = head == GZIP_MAGIC
        self._limit = inflate_limit(size, max_inflate)
        self._produced = 0
        self._inflater = _gzip_codec.decompressobj(_GZIP_WBITS) if self.gzip else None
        self._tail = b""
        self._ended = False

    def fraction(self) -> float:
        return min(1.0, self.done / self.size)

    def read(self, n: int) -> bytes:
        if not self.gzip:
            block = self.fh.read(n)
            self.done += len(block)
            return block
        while not self._ended:
            piece = self._inflate(n)
            if piece:
                return piece
        return b""

    def _inflate(self, n: int) -> bytes:
        inflater = self._inflater
        assert inflater is not None
        data = self._tail or inflater.unconsumed_tail
        self._tail = b""
        if not data:
            data = self.fh.read(_BLOCK)
            self.done += len(data)
            if not data:
                self._ended = True
                if not inflater.eof and self._produced:
                    self.warnings.append("gzip stream ends early (file cut short); kept what was there")
                return inflater.flush()
        try:
            piece = inflater.decompress(data, n)
        except _INFLATE_ERRORS as exc:
            self._ended = True
            if not self._produced:
                raise TraceLoadError(f"corrupt gzip data ({exc})") from None
            self.warnings.append(f"gzip data is corrupt after {self._produced:,} bytes; kept what came before")
            return b""
        if inflater.eof and inflater.unused_data:  # concatenated gzip members
            self._tail = inflater.unused_data
            self._inflater = _gzip_codec.decompressobj(_GZIP_WBITS)
        self._produced += len(piece)
        if self._limit is not None and self._produced > self._limit:
            raise TraceLoadError(
                f"inflates to over {self._produced / self.size:,.0f}x its size: a gzip bomb? If the trace is real, "
                f"load it with --max-inflate 0 (or a higher ratio; default {MAX_INFLATE_RATIO:g})")
        return piece


def open_stream(path: Path, max_inflate: float = MAX_INFLATE_RATIO) -> tuple[BinaryIO, TraceStream]:
    """The open file (the caller closes it) and its stream."""
    fh = open(path, "rb")  # noqa: SIM115 - closed by the caller
    try:
        size = fh.seek(0, 2)
        fh.seek(0)
        return fh, TraceStream(fh, size, max_inflate)
    except BaseException:
        fh.close()
        raise


def looks_like_packets(head: bytes) -> bool:
    """A first ``packet`` record whose opening fields parse as a TracePacket's."""
    if head[:1] != bytes([PACKET_TAG]):
        return False
    rest = head[1:].lstrip()
    if rest[:1] in (b"{", b"["):
        return False  # JSON after a newline
    try:
        size, at = varint(head, 1)
        body = head[at : at + size]
        if len(body) < size:  # the packet goes on past the sniffed bytes: check what is there
            body = body[: _last_whole_field(body)]
        return bool(fields(body)) or size == 0
    except (WireError, IndexError):
        return False


def _last_whole_field(body: bytes) -> int:
    pos = last = 0
    try:
        while pos < len(body):
            tag, pos = varint(body, pos)
            kind = tag & 7
            if kind == 0:
                _, pos = varint(body, pos)
            elif kind == 2:
                n, pos = varint(body, pos)
                pos += n
            else:
                pos += 8 if kind == 1 else 4
            if pos <= len(body):
                last = pos
    except WireError:
        pass
    return last
