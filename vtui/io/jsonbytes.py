"""Byte-level help for the JSON scanner (`vtui.io.jsonscan`): skipping whitespace runs in C-sized
blocks, finding where an event's object ends and whether a point starts the next event (to resume
after a bad one), and decoding an event the way Perfetto's lenient tokenizer reads it."""


from __future__ import annotations

import json
import re
from typing import Any

WS = b" \t\r\n"
_STRICT = json.JSONDecoder()


RESYNC_SCAN = 4 << 20  # bytes followed to find a bad event's end (longer: use the candidates)


RESYNC_CANDIDATES = 4096  # ``},{`` matches tried as a resume point before taking the next one blindly


_STRUCTURE = re.compile(rb'["\\{}\[\]]')


def object_end(data, at: int, cap: int) -> int | None:
    """Just past the ``}`` that closes the value opening at ``at``, following strings and
    escapes; None when it does not close before ``cap``."""
    depth = 0
    in_string = False
    k = at
    while True:
        m = _STRUCTURE.search(data, k, cap)
        if m is None:
            return None
        c, p = m.group(), m.start()
        k = p + 1
        if in_string:
            if c == b"\\":
                k = p + 2
            elif c == b'"':
                in_string = False
        elif c == b'"':
            in_string = True
        elif c in (b"{", b"["):
            depth += 1
        else:
            depth -= 1
            if depth <= 0:
                return p + 1


def at_array_level(data, pos: int) -> bool:
    """Does ``pos`` look like the gap between two events: ``,`` then ``{`` or ``]``, or ``]``?"""
    pos = skip(data, pos, WS)
    if data[pos : pos + 1] == b"]":
        return True
    if data[pos : pos + 1] != b",":
        return False
    pos = skip(data, pos + 1, WS)
    return data[pos : pos + 1] in (b"{", b"]")


def starts_event(data, pos: int) -> bool:
    """Does an object that decodes, with a ``ph``, start at ``pos``?"""
    end = object_end(data, pos, pos + RESYNC_SCAN)
    if end is None:
        return False
    text = bytes(data[pos:end]).decode("utf-8", "surrogateescape")
    try:
        obj = _STRICT.decode(text)
    except (ValueError, RecursionError):
        try:
            obj, _ = lenient_decode(text, 0)
        except (ValueError, RecursionError):
            return False
    return isinstance(obj, dict) and "ph" in obj


_LENIENT = json.JSONDecoder(strict=False)  # raw control characters inside strings


_TOKENS = re.compile(r'["\\{}\[\],]')


def lenient_decode(text: str, i: int) -> tuple[Any, int]:
    """Decode the object at ``text[i]`` as Perfetto's JSON tokenizer does: raw control characters
    (a literal newline) inside strings and a trailing comma before ``}`` or ``]`` are accepted.
    Returns (value, end) like ``raw_decode``; raises ValueError where that does not help."""
    try:
        return _LENIENT.raw_decode(text, i)
    except ValueError as exc:
        first_error = exc
    # Drop each comma that only whitespace separates from a closing bracket, outside strings.
    depth, in_string, k, commas = 0, False, i, []
    while True:
        m = _TOKENS.search(text, k)
        if m is None:
            raise first_error
        c, p = m.group(), m.start()
        k = p + 1
        if in_string:
            if c == "\\":
                k = p + 2
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == ",":
            nxt = p + 1
            while nxt < len(text) and text[nxt] in " \t\r\n":
                nxt += 1
            if nxt < len(text) and text[nxt] in "}]":
                commas.append(p)
        elif c in "{[":
            depth += 1
        else:
            depth -= 1
            if depth <= 0:
                break
    if not commas:
        raise first_error
    end = p + 1
    pieces, last = [], i
    for comma in commas:
        pieces.append(text[last:comma])
        last = comma + 1
    pieces.append(text[last:end])
    value = _LENIENT.decode("".join(pieces))
    return value, end


def rskip(data: bytes, end: int, chars: bytes) -> int:
    """Index just after the last byte before ``end`` that is not in ``chars``. Blocks growing
    16-fold are stripped in C: a few bytes cost one small copy, 100 MB of spaces ~0.1 s (a byte
    at a time in Python it was ~6 MB/s)."""
    size = 64
    while end > 0:
        start = max(0, end - size)
        kept = len(data[start:end].rstrip(chars))
        if kept:
            return start + kept
        end, size = start, min(size * 16, 1 << 22)
    return 0


def skip(data: bytes, pos: int, chars: bytes) -> int:
    """Index of the first byte at or after ``pos`` that is not in ``chars`` (blocks, as ``rskip``)."""
    n, size = len(data), 64
    while pos < n:
        block = data[pos:pos + size]
        rest = len(block.lstrip(chars))
        if rest:
            return pos + len(block) - rest
        pos, size = pos + len(block), min(size * 16, 1 << 22)
    return n
