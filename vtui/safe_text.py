"""Trace text made safe to show: control characters escaped, huge fields clipped.

Trace names, categories, process names and file names are hostile input: an ESC or OSC sequence
printed raw retitles the terminal, clears it or writes the clipboard (OSC 52), and a newline in a
name breaks a table. Fields are made safe where text output is built (`safe_field`), and
everything the CLI prints goes through `say` once more; UI code can call `escape_controls`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from typing import Any, TextIO

# C0 (incl. ESC, BEL, NUL, tab, newline), DEL and C1 (U+0080-U+009F: 8-bit CSI/OSC/ST).
# Also the bidi-reordering and invisible characters: they can make a name read as another
# (Trojan Source; five different names all reading "aten::mm"): zero-width space/joiners and
# marks, LRE..RLO, LRI..PDI, word joiner and invisible operators, the soft hyphen, the Arabic
# letter mark, the byte-order mark, Hangul and Mongolian fillers, tag characters. And the line
# and paragraph separators (U+2028/2029): a line-splitting reader would see a new line there.
_BIDI = ("\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e"
         "\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f")
_CONTROLS = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_CONTROLS_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_BIDI}]")
_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_BIDI}]")  # json.dumps escapes C0 itself, not DEL, C1 or these
MAX_FIELD = 200  # characters of one name / cell shown in text output


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escape(match: re.Match[str]) -> str:
    """A JSON ``\\uXXXX`` escape (a surrogate pair above U+FFFF): decodes back to the same text."""
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_controls(text: str, keep_newlines: bool = False) -> str:
    """``"a\\x1b]0;x\\x07"`` -> ``"a\\\\x1b]0;x\\\\x07"``: every C0/C1 control character and DEL
    as a visible ``\\xNN``. ``keep_newlines``: ``\\n`` stays (for whole multi-line outputs)."""
    pattern = _CONTROLS_BUT_NEWLINE if keep_newlines else _CONTROLS
    if pattern.search(text) is None:  # the common case: no copy
        return text
    return pattern.sub(_visible, text)


def clip(text: str, limit: int = MAX_FIELD) -> str:
    """At most ``limit`` characters: a longer text ends in ``…``."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def safe_field(text: Any, limit: int = MAX_FIELD) -> str:
    """One value from a trace as a single safe line of at most ``limit`` characters."""
    # Clip first (a 1 MB name costs nothing more), then escape (escapes may lengthen it a little).
    return escape_controls(clip(str(text), limit))


def safe_fields(texts: list[str], limit: int = MAX_FIELD) -> list[str]:
    """``safe_field`` of each of ``texts``; one scan of them all when none needs a change (the common case)."""
    if all(len(t) <= limit for t in texts) and _CONTROLS.search("".join(texts)) is None:
        return texts
    return [safe_field(t, limit) for t in texts]


def json_text(value: Any, indent: int | None = 2) -> str:
    """JSON for a terminal: lossless (the data round-trips), but no raw DEL/C1 byte, bidi or
    invisible character in it (each as a ``\\uXXXX`` escape)."""
    return json_safe(json.dumps(value, indent=indent, ensure_ascii=False))


def json_safe(text: str) -> str:
    """JSON text with DEL, C1, bidi and invisible characters as ``\\uXXXX`` (json.dumps and msgspec
    write them raw)."""
    if _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(_json_escape, text)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A CSV cell that a spreadsheet will not run as a formula: text starting with = + - @
    (or tab / CR) gets a leading ``'``. Numbers stay numbers."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def say(text: str, file: TextIO | None = None, lossless: bool = False) -> None:
    """Print CLI output. ``lossless`` (CSV / JSON text meant for a file or a pipe): escaped only
    when it goes to a terminal; anything else is always escaped (newlines kept)."""
    out = sys.stdout if file is None else file
    if not lossless or _isatty(out):
        text = escape_controls(text, keep_newlines=True)
    print(text, file=out)


def say_parts(parts: Iterable[str], file: TextIO | None = None, lossless: bool = False) -> None:
    """``say`` for an output made piece by piece (a long JSON): each piece written as it comes."""
    out = sys.stdout if file is None else file
    escape = not lossless or _isatty(out)
    for part in parts:
        out.write(escape_controls(part, keep_newlines=True) if escape else part)
    out.write("\n")
    out.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
