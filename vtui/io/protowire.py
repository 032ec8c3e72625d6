"""The protobuf wire format, read and written by hand: the fields of one message, and the
``TracePacket`` records of a Perfetto trace streamed from a file, one block at a time.

A Perfetto trace is a ``Trace`` message: ``repeated TracePacket packet = 1``, i.e. records of a
tag byte (0x0A), a varint length and the packet's bytes, back to back. Nothing else is needed
to cut a file into packets, so a trace of any size is read with one block in memory.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import BinaryIO

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
PACKET_TAG = 0x0A  # field 1 (Trace.packet), length-delimited
_BLOCK = 8 << 20
MAX_PACKET = 64 << 20  # a longer "packet" is damage (the SDK writes packets of a few KB)
_DOUBLE = struct.Struct("<d")


class WireError(ValueError):
    """Bytes that are not a protobuf message."""


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    result = shift = 0
    while True:
        try:
            b = buf[pos]
        except IndexError:
            raise WireError("varint runs past the end") from None
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 10 bytes")


def fields(buf: bytes, pos: int = 0, end: int | None = None) -> list[tuple[int, int | bytes]]:
    """(field number, value) of each field of the message in ``buf[pos:end]``, in order: an int
    for a varint, the bytes of a length-delimited field or of a fixed64 / fixed32 (see ``double``
    and ``fixed``). Raises WireError for bytes that are not a message."""
    if end is None:
        end = len(buf)
    out: list[tuple[int, int | bytes]] = []
    append = out.append
    while pos < end:
        tag = buf[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = varint(buf, pos)
        kind = tag & 7
        if kind == VARINT:
            v = buf[pos] if pos < end else 0x80
            if v < 0x80:
                pos += 1
                append((tag >> 3, v))
            else:
                value, pos = varint(buf, pos)
                append((tag >> 3, value))
        elif kind == LENGTH:
            n = buf[pos] if pos < end else 0x80
            if n < 0x80:
                pos += 1
            else:
                n, pos = varint(buf, pos)
            stop = pos + n
            if stop > end:
                raise WireError("a field runs past its message")
            append((tag >> 3, buf[pos:stop]))
            pos = stop
        elif kind == FIXED64:
            append((tag >> 3, buf[pos : pos + 8]))
            pos += 8
        elif kind == FIXED32:
            append((tag >> 3, buf[pos : pos + 4]))
            pos += 4
        else:
            raise WireError(f"unknown wire type {kind}")
    if pos != end:
        raise WireError("a field runs past its message")
    return out


def double(raw: int | bytes) -> float:
    """A ``double`` field's value (its 8 bytes)."""
    if isinstance(raw, int) or len(raw) != 8:
        raise WireError("a double is 8 bytes")
    return _DOUBLE.unpack(raw)[0]


def fixed(raw: int | bytes) -> int:
    """A fixed64 / fixed32 field's value (unsigned)."""
    if isinstance(raw, int):
        raise WireError("a fixed field is not a varint")
    return int.from_bytes(raw, "little")


def signed64(value: int) -> int:
    """An ``int64`` varint as the signed value it encodes (negative numbers take 10 bytes)."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def packed_varints(raw: int | bytes) -> list[int]:
    """A repeated varint field: a packed run, or (written unpacked) one value."""
    if isinstance(raw, int):
        return [raw]
    out, pos = [], 0
    while pos < len(raw):
        value, pos = varint(raw, pos)
        out.append(value)
    return out


def packed_fixed64(raw: int | bytes) -> list[int]:
    """A repeated fixed64 field: a packed run (a multiple of 8 bytes) or one value."""
    if isinstance(raw, int):
        raise WireError("a fixed64 field is not a varint")
    return [int.from_bytes(raw[i : i + 8], "little") for i in range(0, len(raw) - 7, 8)]


def packed_doubles(raw: int | bytes) -> list[float]:
    if isinstance(raw, int):
        raise WireError("a double field is not a varint")
    return [v for (v,) in struct.iter_unpack("<d", raw[: len(raw) // 8 * 8])]


# ---- streaming packets -------------------------------------------------------------------


def iter_packets(read: Callable[[int], bytes], on_damage: Callable[[str], None], offset: int = 0) -> Iterator[bytes]:
    """The packets of a ``Trace`` read through ``read(n)`` (a file's read, or an inflater's), in
    order. Top-level fields other than ``packet`` are skipped; a record cut short at the end
    (a trace still being written, a cut download) or bytes that are not a record end the
    stream with one ``on_damage`` message (``offset``: where ``read`` starts in the trace)."""
    buf = b""
    pos = 0
    done = offset  # bytes of the stream before ``buf``
    eof = False
    while True:
        if len(buf) - pos < 16 and not eof:  # a record's head (tag + length) always fits
            block = read(_BLOCK)
            eof = not block
            done += pos
            buf, pos = buf[pos:] + block, 0
        if pos >= len(buf):
            return
        try:
            tag, at = varint(buf, pos)
            kind = tag & 7
            if kind == LENGTH:
                n, at = varint(buf, at)
                if n > MAX_PACKET:
                    raise WireError(f"a record of {n:,} bytes")
            elif kind == VARINT:
                _, at = varint(buf, at)
                n = 0
            elif kind in (FIXED64, FIXED32):
                n = 8 if kind == FIXED64 else 4
            else:
                raise WireError(f"unknown wire type {kind}")
        except WireError as exc:
            if eof or len(buf) - pos >= 16:
                on_damage(f"not a Perfetto trace record at byte {done + pos:,} ({exc}); kept the packets before it")
                return
            continue  # the head is cut by the block: read more
        stop = at + n
        while stop > len(buf) and not eof:  # a record longer than what is read so far
            block = read(max(_BLOCK, stop - len(buf)))
            eof = not block
            done += pos
            buf, at, stop, pos = buf[pos:] + block, at - pos, stop - pos, 0
        if stop > len(buf):
            on_damage(f"the trace ends inside a packet at byte {done + pos:,} (file cut short?); "
                      "kept the packets before it")
            return
        if tag == PACKET_TAG:
            yield buf[at:stop]
        pos = stop


# ---- writing -------------------------------------------------------------------------------


def put_varint(out: bytearray, value: int) -> None:
    value &= (1 << 64) - 1  # negative int64s as protobuf writes them (10 bytes)
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def put_int(out: bytearray, field: int, value: int) -> None:
    put_varint(out, field << 3)
    put_varint(out, value)


def put_bytes(out: bytearray, field: int, data: bytes | bytearray) -> None:
    put_varint(out, (field << 3) | LENGTH)
    put_varint(out, len(data))
    out += data


def put_str(out: bytearray, field: int, text: str) -> None:
    put_bytes(out, field, text.encode("utf-8", "surrogatepass"))


def put_double(out: bytearray, field: int, value: float) -> None:
    put_varint(out, (field << 3) | FIXED64)
    out += _DOUBLE.pack(value)


def put_fixed64(out: bytearray, field: int, value: int) -> None:
    put_varint(out, (field << 3) | FIXED64)
    out += (value & ((1 << 64) - 1)).to_bytes(8, "little")


def write_packet(fh: BinaryIO, packet: bytes | bytearray) -> None:
    head = bytearray([PACKET_TAG])
    put_varint(head, len(packet))
    fh.write(head)
    fh.write(packet)
