"""Find the events in a trace's JSON (array or object form) and decode them in chunks.

The event array is cut into chunks at ``},{`` boundaries and each chunk is decoded by
msgspec. A cut that falls inside a string or a nested value makes that chunk invalid
JSON, so the decoder itself tells us; the chunk is then shrunk, and a small remainder is
walked event by event with the standard library decoder. That same slow walk repairs a
truncated tail (array or object form), a trailing comma, and skips a corrupt event.
"""

from __future__ import annotations

import json
import mmap
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from vtui.errors import TraceLoadError
from vtui.io.columns import ColumnSink
from vtui.io.events import EVENT_FIELDS, Event
from vtui.io.jsonbytes import (
    RESYNC_CANDIDATES,
    RESYNC_SCAN,
    WS,
    at_array_level,
    lenient_decode,
    object_end,
    rskip,
    skip,
    starts_event,
)

CHUNK = 512 << 10  # bytes per fast-path chunk: small enough that its objects stay in the CPU cache
# (measured: 8 MiB chunks cost 40 % more CPU than 512 KiB ones on a Kineto trace)
SMALL = 256 << 10  # below this a failing region is walked event by event

BOUNDARY = re.compile(rb"\}\s*,\s*\{")
_TRACE_EVENTS_KEY = b'"traceEvents"'
# A JSON string (escapes included) or a bracket: enough to follow the nesting depth of the top-level
# object without decoding it. Possessive, so a long string is one step and never backtracks.
_TOKEN = re.compile(rb'"(?:[^"\\]++|\\.)*+"|[{}\[\]]')
_COLON = re.compile(rb"\s*:\s*")
_DECODER = msgspec.json.Decoder(list[Event])
_RAW_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
_PY_DECODER = json.JSONDecoder()


@dataclass
class ScanResult:
    form: str  # "array" or "object"
    repaired: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


# Decodes events from an array position (just after ``[``) into the sink, returning the
# position up to which it decoded (an event boundary); the scan continues from there.
FastDecode = Callable[[Any, int, ColumnSink], int]


def scan_trace(data: bytes, sink: ColumnSink, progress: Callable[[float], None] | None = None,
               fast: FastDecode | None = None, raw: bool = False) -> ScanResult:
    """Decode every event of ``data`` into ``sink``; return the container's facts.

    ``fast`` (the parallel decoder) gets first go at the event array; whatever it leaves is
    decoded here, so a fast path that stops early (damage, an unsure split) loses nothing.

    With ``raw`` the sink gets each event's source bytes (``msgspec.Raw``) instead of an
    ``Event``, in the same order and with the same events skipped — so the n-th raw event is
    the event whose ordinal is n (export uses this to copy events exactly as written).
    """
    _check_encoding(data)
    start = skip(data, 0, WS + b"\xef\xbb\xbf")  # whitespace and a UTF-8 BOM
    if start >= len(data):
        raise TraceLoadError("file is empty")
    first = data[start : start + 1]
    if first == b"/":
        raise TraceLoadError("not a JSON trace: it starts with a comment (// or /* */), which JSON does not allow")
    if first == b"[":
        result = ScanResult(form="array")
        end = _ArrayScan(data, start + 1, sink, result, progress, fast, raw).run()
        if end is not None and skip(data, end + 1, WS) < len(data):  # no copy of the tail: it may be GBs
            result.warnings.append("ignored data after the closing ] of the event array")
        return result
    if first == b"{":
        return _scan_object(data, start, sink, progress, fast, raw)
    raise TraceLoadError(_describe_non_trace(data, start))


def scan_events_from(data: bytes, pos: int, sink: Any, progress: Callable[[float], None] | None = None) -> None:
    """Hand ``sink`` the raw bytes of each event from ``pos`` (an event's ``{`` where a load's
    decoded chunk began) to the end of its array, as ``scan_trace(raw=True)`` would from there."""
    _ArrayScan(data, pos, sink, ScanResult(form="array"), progress, None, raw=True).run()


_COMMENT_LINE = re.compile(rb"(?m)^[ \t]*//")


def _check_encoding(data) -> None:
    """UTF-16 / UTF-32 (a BOM, or NULs between the first characters): one line with the fix."""
    head = bytes(data[:4])
    wide = head[:2] in (b"\xff\xfe", b"\xfe\xff") or head == b"\x00\x00\xfe\xff" or head[:3] == b"\x00\x00\x00" or (
        len(head) >= 2 and ((head[:1] in (b"[", b"{") and head[1] == 0) or (head[0] == 0 and head[1:2] in (b"[", b"{"))))
    if wide:
        raise TraceLoadError("not a JSON trace: the file looks UTF-16 or UTF-32 encoded; JSON traces are UTF-8 "
                             "(convert it: iconv -f UTF-16 -t UTF-8)")


_NEAR = 1 << 12  # bytes either side of where a scan stopped that may hold the // line that stopped it


def comment_hint(data, stopped_at: int | None = None) -> str:
    """Say so when the trace holds // comment lines (JSON has none): in its head, or (a scan that
    stopped part-way) around where it stopped, which may be far past the head."""
    found = _COMMENT_LINE.search(bytes(data[: 1 << 16])) is not None
    if not found and stopped_at is not None:
        lo = max(0, stopped_at - _NEAR)
        near = bytes(data[max(0, lo - 1) : stopped_at + _NEAR])
        # From offset 1 when it starts mid-file: '^' then matches only after a real newline.
        found = _COMMENT_LINE.search(near, 1 if lo else 0) is not None
    return " (it has // comment lines, which JSON does not allow: remove them)" if found else ""


def _describe_non_trace(data: bytes, start: int) -> str:
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return "not a JSON trace (expected '[' or '{' at the start)"
    kind = {str: "a string", int: "a number", float: "a number", bool: "a boolean"}.get(type(value), "null")
    return f"not a trace: the JSON is {kind}, not an event array or object"


def _top_level_key(data, pos: int, key: bytes = _TRACE_EVENTS_KEY) -> tuple[int, int] | None:
    """(key start, value start) of the next ``key`` of the top-level object, from ``pos`` inside
    it (depth 1); None at the object's end or the file's. Only the top level counts: a
    ``traceEvents`` nested in ``otherData`` (or written inside a string) is data, not the events."""
    depth = 1
    for m in _TOKEN.finditer(data, pos):
        c = data[m.start()]
        if c == 0x22:  # a string: at depth 1 and followed by ':' it is a key
            if depth == 1 and m.end() - m.start() == len(key) and data[m.start() : m.end()] == key:
                colon = _COLON.match(data, m.end())
                if colon is not None:
                    return m.start(), colon.end()
        elif c in (0x7B, 0x5B):  # { [
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return None
    return None


def _scan_object(data: bytes, start: int, sink: ColumnSink, progress, fast: FastDecode | None,
                 raw: bool = False) -> ScanResult:
    result = ScanResult(form="object")
    found = _top_level_key(data, start + 1)
    if found is None:
        try:
            whole = msgspec.json.decode(data)
        except (msgspec.DecodeError, ValueError, RecursionError):
            raise TraceLoadError("not a JSON trace: an object without a traceEvents array") from None
        if not isinstance(whole, dict):
            raise TraceLoadError("not a JSON trace")
        raise TraceLoadError("not a trace: the JSON object has no traceEvents array")
    key_start, bracket = found
    result.metadata.update(_decode_members(data[start:key_start] + b'"":0}', result))
    arrays = 0
    while True:
        if data[bracket : bracket + 1] != b"[":
            if bracket >= len(data):
                result.repaired = True
                result.warnings.append("file ends before the traceEvents array starts")
                return result
            if arrays == 0:
                raise TraceLoadError("not a trace: traceEvents is not an array")
            result.warnings.append("a second top-level traceEvents is not an array: it and the keys after it were ignored")
            break
        # Only the first array gets the parallel decoder: a second one (a duplicate key) is rare.
        end = _ArrayScan(data, bracket + 1, sink, result, progress, fast if arrays == 0 else None, raw).run()
        arrays += 1
        if end is None:
            break
        again = _top_level_key(data, end + 1)
        rest = data[end + 1 : again[0] if again else len(data)].strip(WS)
        if again is not None:  # the keys between two arrays: ', "a": 1, '
            result.metadata.update(_decode_members(b"{" + rest[1:] + b'"":0}', result))
            bracket = again[1]
            continue
        if rest.startswith(b","):
            result.metadata.update(_decode_members(b"{" + rest[1:], result))
        elif not rest.startswith(b"}"):
            result.repaired = True
            result.warnings.append("the trace object is not closed after traceEvents (file cut short)")
        break
    if arrays > 1:
        result.warnings.append(f"the trace object has {arrays} top-level traceEvents arrays: read all of them, "
                               "in file order, as Perfetto does (Python's json would keep only the last)")
    system = result.metadata.get("systemTraceEvents")
    if isinstance(system, str) and system.strip():
        # Perfetto parses this text as systrace (ftrace lines: sched, atrace B|pid|name...); vtui
        # does not, so it says so rather than show a trace without them.
        lines = sum(1 for line in system.splitlines() if line.strip() and not line.startswith("#"))
        result.warnings.append(f"systemTraceEvents holds {lines:,} lines of systrace text: not read (Perfetto "
                               "reads them as ftrace events)")
    return result


def _decode_members(text: bytes, result: ScanResult) -> dict[str, Any]:
    """Top-level keys around traceEvents; a cut-short tail keeps what decodes."""
    try:
        members = msgspec.json.decode(text)
    except (msgspec.DecodeError, ValueError, RecursionError):
        try:
            members = json.loads(text.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            result.repaired = True
            result.warnings.append("could not read the top-level keys around traceEvents")
            return {}
    if not isinstance(members, dict):
        return {}
    members.pop("", None)
    return members


class _ArrayScan:
    """Walk one event array from just after its ``[``."""

    def __init__(self, data: bytes, pos: int, sink: ColumnSink, result: ScanResult, progress,
                 fast: FastDecode | None = None, raw: bool = False) -> None:
        self.raw = raw
        self.fast = None if raw else fast
        self.released = pos
        self.data = data
        self.pos = pos
        self.sink = sink
        self.result = result
        self.progress = progress
        self.skipped_non_objects = 0
        self.lenient = 0  # events read only as Perfetto's tokenizer would (see lenient_decode)
        self.corrupt: list[tuple[int, int]] = []  # (byte offset, length) of regions skipped

    def run(self) -> int | None:
        """Decode to the closing ``]``; return its index, or None when the file ends first."""
        data, n = self.data, len(self.data)
        closed: int | None = None
        if self.fast is not None:
            self.pos = self.fast(data, self.pos, self.sink)
        self.limit = array_tail_end(data, self.pos)
        size = CHUNK
        while True:
            self.pos = skip(data, self.pos, WS + b",")
            if self.pos >= n:
                break
            if data[self.pos] == 0x5D:  # ]
                closed = self.pos
                break
            if data[self.pos] != 0x7B:  # not '{': let the careful walk deal with it
                state, self.pos = self._walk(self.pos + SMALL)
            else:
                got = decode_chunk(data, self.pos, self.limit, self.raw, size)
                if got is None:
                    state, self.pos = self._walk(self.pos + SMALL)
                    # Start small after damage and grow back: restarting at CHUNK would copy
                    # megabytes per corrupt event (quadratic on a file with many bad events).
                    size = SMALL
                else:
                    events, end = got
                    if not self.raw:
                        self.sink.mark(self.pos)  # where an export may start reading (see rawevents)
                        self.sink.add(events, end - self.pos)
                    else:
                        self.sink.add(events)
                    if not self.raw:
                        self.sink.keep_exact_ts(events, lambda a=self.pos, b=end: data[a:b])
                    del events
                    self.released = release_pages(data, self.released, end)
                    self.pos = end
                    state = "more"
                    size = min(CHUNK, size * 4)
            if self.progress:
                self.progress(min(1.0, self.pos / max(n, 1)))
            if state == "closed":
                closed = self.pos
                break
            if state == "eof":
                break
        if self.skipped_non_objects:
            self.result.warnings.append(f"skipped {self.skipped_non_objects} array elements that are not objects")
        if self.lenient:
            self.result.warnings.append(f"{self.lenient:,} events had raw control characters in a string or a trailing "
                                        "comma in an object (not JSON; read as Perfetto reads them)")
        if self.corrupt:
            self.result.warnings.append(
                f"skipped {len(self.corrupt):,} regions of invalid (or too deeply nested) JSON, "
                f"{sum(n for _, n in self.corrupt):,} bytes in all (first at byte {self.corrupt[0][0]:,})"
            )
        if closed is None:
            self.result.repaired = True
            why = comment_hint(data, self.pos) or " (file cut short)"  # a // line stops the scan as a cut does
            self.result.warnings.append(f"event array is not closed{why}; kept {self.sink.rows:,} complete events")
        return closed

    def _walk(self, limit: int) -> tuple[str, int]:
        """Decode events one by one from ``self.pos`` until past ``limit``.

        Returns ("more" | "closed" | "eof", byte position). Exact but slow; used only
        where the fast path failed.
        """
        data, n = self.data, len(self.data)
        pos = self.pos
        window = SMALL
        while True:
            text = data[pos : pos + window].decode("utf-8", "surrogateescape")
            whole = pos + window >= n
            i = 0
            events: list[Event | msgspec.Raw | None] = []
            pieces: list[str] = []  # each kept event's source text (for exact timestamps)
            outcome = None
            while True:
                lenient_before = self.lenient
                while i < len(text) and text[i] in " \t\r\n,":
                    i += 1
                if i >= len(text):
                    outcome = "eof" if whole else "more"
                    break
                if text[i] == "]":
                    outcome = "closed"
                    break
                try:
                    obj, j = _PY_DECODER.raw_decode(text, i)
                except (ValueError, RecursionError):
                    try:
                        obj, j = lenient_decode(text, i)
                        self.lenient += 1
                    except (ValueError, RecursionError) as exc:
                        if not whole and _maybe_cut(exc, len(text)):
                            break  # maybe just a long event: widen the window
                        obj, j = None, -1
                if j < 0:
                    skip_to = self._skip_corrupt(pos + _nbytes(text[:i]))
                    if skip_to is None:
                        outcome = "eof"
                        break
                    kept = [e for e in events if e is not None]
                    self.skipped_non_objects += len(events) - len(kept)
                    self._add_walked(kept, pieces)
                    return "more", skip_to
                if not isinstance(obj, dict):
                    events.append(None)
                elif self.raw:
                    piece = text[i:j]
                    if self.lenient > lenient_before:  # as valid JSON, so an export stays readable
                        piece = json.dumps(obj, ensure_ascii=False)
                    events.append(msgspec.Raw(piece.encode("utf-8", "surrogateescape")))
                else:
                    events.append(_to_event(obj))
                    pieces.append(text[i:j])
                i = j
                if pos + i >= limit and not whole:
                    outcome = "more"
                    break
            kept = [e for e in events if e is not None]
            self.skipped_non_objects += len(events) - len(kept)
            if outcome is None:  # widen and redo this window
                if events:
                    self._add_walked(kept, pieces)
                    pos += _nbytes(text[:i])
                window *= 4
                continue
            self._add_walked(kept, pieces)
            end = pos + _nbytes(text[:i])
            return outcome, end

    def _add_walked(self, events: list, pieces: list[str]) -> None:
        self.sink.add(events)
        if not self.raw:
            self.sink.keep_exact_ts(events, lambda: ",".join(pieces).encode("utf-8", "surrogateescape"))

    def _skip_corrupt(self, at: int) -> int | None:
        """Jump over an event that does not decode; None when nothing follows (a cut tail).

        Resume only at the event array's level: after the bad object's own closing brace when
        its brackets balance (strings and escapes followed) and a ``,`` or ``]`` comes next;
        else at the first ``},{`` whose ``{`` starts an object with a ``ph``. A bare ``},{``
        may lie inside the bad event's args, and resuming there would read args as events
        and take the args list's ``]`` for the end of the array.
        """
        data = self.data
        end = object_end(data, at, at + RESYNC_SCAN) if data[at : at + 1] == b"{" else None
        if end is not None and at_array_level(data, end):
            resume = end
        else:
            resume = None
            tried = 0
            for match in BOUNDARY.finditer(data, at + 1):
                tried += 1
                if tried > RESYNC_CANDIDATES or starts_event(data, match.end() - 1):
                    resume = match.end() - 1
                    break
            if resume is None:
                return None
        self.corrupt.append((at, resume - at))
        self.result.repaired = True
        return resume


def array_tail_end(data, pos: int) -> int:
    """Where the last chunk ends: before the last ']' (the array's close, if the file is whole)."""
    close = data.rfind(b"]", pos)
    if close < 0:
        return len(data)
    return max(pos, rskip(data, close, WS + b","))


_FIRST_BYTE = operator.itemgetter(0)  # of an event's raw bytes; mapped in C, no Python call per event
RETRIES = 8  # later ``},{`` matches tried when a chunk's end proves to be inside a string


def decode_chunk(data, pos: int, limit: int, raw: bool = False, size: int = CHUNK) -> tuple[list[Event], int] | None:
    """Decode the events of about ``CHUNK`` bytes from ``pos`` (an event's ``{``), ending at a
    ``},{`` match or at ``limit``. Returns (events, end) or None where no try decoded.

    A chunk that starts at an event's ``{`` decodes as a list of objects only if it also ends
    just after an event's ``}``: a cut inside a string leaves that string open, a cut inside a
    nested value leaves it unclosed. So a decoded chunk proves its end is an event boundary.
    A cut that does not decode is most often a ``},{`` inside args (a list of objects): the next
    few matches are tried, then smaller chunks, before giving up. ``raw``: the events' source
    bytes (``msgspec.Raw``), failing on a non-object element exactly as ``list[Event]`` would.
    """
    decoder = _RAW_DECODER if raw else _DECODER
    while True:
        end = limit
        if pos + size < limit:
            match = BOUNDARY.search(data, pos + size, limit)
            if match is not None:
                end = match.start() + 1
        for _ in range(RETRIES):
            try:
                events = decoder.decode(_framed(data, pos, end))
                if raw and bytes(map(_FIRST_BYTE, map(memoryview, events))).count(0x7B) != len(events):
                    raise msgspec.ValidationError("an element is not an object")
                return events, end
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):  # RecursionError: nested too deep
                if end >= limit:
                    break
                match = BOUNDARY.search(data, end, limit)
                end = match.start() + 1 if match is not None else limit
        if size <= SMALL:
            return None
        size //= 4


def _framed(data, pos: int, end: int) -> bytes:
    """``[`` + the chunk + ``]``, copied once (slicing a mapped file and then joining copied it twice)."""
    with memoryview(data) as view:
        return b"".join((b"[", view[pos:end], b"]"))


def decode_range(data, start: int, end: int, sink: ColumnSink,
                 progress: Callable[[int], None] | None = None) -> int:
    """Fast path only: decode the events in ``data[start:end]`` into ``sink``, chunk by chunk.

    ``start`` must be where an event begins. Returns the position reached: ``end`` when every
    chunk decoded, else the start of the first chunk that did not (damage, or ``end`` is not an
    event boundary). Exact because each decoded chunk proves its end a boundary (see
    ``decode_chunk``), so a run of them from a true start proves ``end`` one too.
    """
    pos = released = start
    while True:
        pos = _skip_to(data, pos, end)
        if pos >= end or data[pos] != 0x7B:  # done, or not an object: the careful scan decides
            return min(pos, end)
        got = decode_chunk(data, pos, end)
        if got is None:
            return pos
        events, chunk_end = got
        sink.mark(pos)
        sink.add(events, chunk_end - pos)
        sink.keep_exact_ts(events, lambda a=pos, b=chunk_end: data[a:b])
        del events
        released = release_pages(data, released, chunk_end)
        pos = chunk_end
        if progress:
            progress(pos)


def release_pages(data, lo: int, hi: int) -> int:
    """Drop decoded pages of a mapped file from this process's resident set (the OS page cache
    keeps them); returns the new low-water mark. A no-op for ``bytes``."""
    if not isinstance(data, mmap.mmap):
        return lo
    a = lo - lo % mmap.PAGESIZE
    b = hi - hi % mmap.PAGESIZE
    if b - a < (4 << 20):  # in 4 MiB steps: fewer system calls
        return lo
    try:
        data.madvise(mmap.MADV_DONTNEED, a, b - a)
    except (OSError, ValueError, AttributeError):
        pass
    return b


def _skip_to(data, pos: int, end: int) -> int:
    while pos < end and data[pos] in b" \t\r\n,":
        pos += 1
    return pos


def _maybe_cut(exc: Exception, length: int) -> bool:
    """Could this decode error come from the window ending mid-event (not from bad JSON)?

    Widening on every error would re-read the rest of the file per corrupt event (quadratic);
    a cut shows as an error at the very end of the text or a string running off its end.
    """
    if not isinstance(exc, json.JSONDecodeError):
        return False  # RecursionError: nested too deep, a wider window cannot help
    return exc.pos >= length - 16 or exc.msg.startswith("Unterminated string")


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def _to_event(obj: dict[str, Any]) -> Event:
    fields = {k: obj[k] for k in EVENT_FIELDS if k in obj}
    if "args" in obj:
        try:
            fields["args"] = msgspec.Raw(json.dumps(obj["args"], ensure_ascii=False).encode("utf-8", "surrogateescape"))
        except UnicodeEncodeError:  # a lone "\ud800" escape: keep it escaped (shown as undecodable args)
            fields["args"] = msgspec.Raw(json.dumps(obj["args"]).encode("ascii"))
        except (TypeError, ValueError, RecursionError):
            pass
    return Event(**fields)
