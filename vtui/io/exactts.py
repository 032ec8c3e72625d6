"""Exact nanoseconds from the decimal text of ``ts`` and ``dur``.

JSON traces write µs as decimals. Reading them as doubles and rounding later is not exact: near
6.5e12 µs a double's step is ~1 ns, so ``round((ts - origin) * 1000)`` puts a third of the starts
1 ns early; near 1.7e15 (epoch µs) a double holds only 0.25 µs steps. So the decoder keeps each
``ts``/``dur`` as its source text (``msgspec.Raw``) and this module turns the text into int64 ns:
the integer part and the first 3 fraction digits, the digits below the ns rounded half to even.

Two paths give the same numbers (tests compare them): the optional C helper parses the digits
as it reads the struct slots; here, ``times_of`` does it column-wise (plain numbers through
``float`` where a double provably holds the ns, the rest digit by digit).

Non-numbers follow Perfetto's ``CoerceToTs``: a string counts when its whole text is a JSON
number (``json::ParseValue`` on the string's contents, nothing left after it); so ``"1000"`` is
1000 µs and ``"1e3"`` too, while ``"1_000"``, ``"12 "``, ``" 12"``, ``"+5"``, ``"0x10"``, ``"1."``,
``"007"`` are not numbers (the event has no usable ts). ``true``/``false``/``null``, lists and
objects are not numbers either.
"""

from __future__ import annotations

import array
import json
import math
import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from itertools import compress
from typing import Any

import msgspec
import numpy as np

from vtui.io.events import EMPTY_RAW

LARGE_US = float(2**43)  # |µs| from here on: a double's step exceeds 1 ns
# Below this, a double read from text with at most 3 decimals, times 1000, rounds to the exact ns:
# half its step (0.24 ns) plus the product's rounding (0.25 ns) stay under half a ns. From 2**42
# on the two reach 0.98 ns ("4458677117099.727" gave ...726 ns).
FLOAT_EXACT_US = float(2**42)
NO_NS = np.iinfo(np.int64).min  # "no value" (missing, not a number, out of int64 ns)
_MIN_NS, _MAX_NS = int(NO_NS) + 1, int(np.iinfo(np.int64).max)


class _Times(msgspec.Struct, gc=False):
    ts: msgspec.Raw = EMPTY_RAW
    dur: msgspec.Raw = EMPTY_RAW


_TIMES_DECODER = msgspec.json.Decoder(list[_Times])

# Bytes a plain JSON number ``-?digits[.digits]`` is made of (msgspec checked the grammar).
_NOT_PLAIN = np.ones(256, dtype=bool)
_NOT_PLAIN[list(b"0123456789.-")] = False


def times_of(values: list[Any]) -> tuple[np.ndarray, np.ndarray, bool]:
    """(int64 ns, float64 µs, from_text) of each value: its source text (``msgspec.Raw``, from
    the chunk decoder) or a Python value (the event-by-event walk, built events; from_text is
    then False). ns is NO_NS where there is no number; µs is ns / 1000 where there is one (so
    every path agrees), else the number's double (beyond int64 ns) or NaN."""
    n = len(values)
    try:
        lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
        buf = np.frombuffer(b"".join(values), dtype=np.uint8)
    except TypeError:  # Python values (not all texts): one by one
        ns = np.array([value_ns(v) for v in values], dtype=np.int64)
        return ns, _micros(ns, values, np.flatnonzero(ns == NO_NS)), False
    ends = np.cumsum(lens)
    odd = np.zeros(n, dtype=bool)
    odd[np.searchsorted(ends, np.flatnonzero(_NOT_PLAIN[buf]), side="right")] = True
    plain = ~odd & (lens > 0)
    frac = np.zeros(n, dtype=np.int64)  # fraction digits (a JSON number has at most one '.')
    dots = np.flatnonzero(buf == 0x2E)
    at = np.searchsorted(ends, dots, side="right")
    frac[at] = ends[at] - dots - 1
    ns = np.full(n, NO_NS, dtype=np.int64)
    rows = np.flatnonzero(plain)
    if len(rows):
        sub = list(compress(values, plain))
        us = np.frombuffer(array.array("d", map(float, sub)), dtype=np.float64)
        # Below 2**42 µs with at most 3 decimals, ×1000 of the double is within half a ns of the
        # text's ns (FLOAT_EXACT_US): its rounding is the exact ns.
        easy = (frac[rows] <= 3) & (np.abs(us) < FLOAT_EXACT_US)
        ns[rows[easy]] = np.rint(us[easy] * 1000.0).astype(np.int64)
        hard = np.flatnonzero(~easy)
        if len(hard):
            ns[rows[hard]] = [_in_range(_plain_ns(bytes(sub[k]))) for k in hard.tolist()]
    for k in np.flatnonzero(odd).tolist():
        ns[k] = value_ns(values[k])
    return ns, _micros(ns, values, np.flatnonzero((ns == NO_NS) & (lens > 0))), True


def _micros(ns: np.ndarray, values: list[Any], missing: np.ndarray) -> np.ndarray:
    """µs as ns / 1000; where there are no ns, the number's double (a ts beyond int64 ns is a
    number still, far from the others) or NaN."""
    us = ns.astype(np.float64)
    us /= 1000.0
    us[ns == NO_NS] = np.nan
    for k in missing.tolist():
        us[k] = number_us(values[k])
    return us


def number_us(value: Any) -> float:
    """The double of a value that is a number (as ``value_ns`` reads numbers), else NaN."""
    if isinstance(value, msgspec.Raw):
        text = bytes(value)
        try:
            if text[:1] == b'"':
                value = json.loads(text)
            elif text[:1] and text[:1] in b"-0123456789":
                return float(text)
            else:
                return math.nan
        except ValueError:
            return math.nan
    if isinstance(value, str):
        return float(value) if _STRING_TS.fullmatch(value) else math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.nan


def chunk_times(chunk: bytes, count: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
    """(ns, µs) of each event's ``ts`` and of its ``dur`` in ``chunk`` (events as in the array,
    no brackets); None when the chunk does not decode to exactly ``count`` events."""
    try:
        items = _TIMES_DECODER.decode(b"[" + chunk + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if len(items) != count:
        return None
    return times_of([t.ts for t in items])[:2], times_of([t.dur for t in items])[:2]


def texts_to_ns(texts: list) -> np.ndarray:
    """int64 ns of JSON µs values given as their source bytes (NO_NS: not a number)."""
    return np.array([value_ns(msgspec.Raw(bytes(t))) for t in texts], dtype=np.int64)


def value_ns(value: Any) -> int:
    """ns of one value: a ``Raw`` text or a Python value; NO_NS where it is not a number."""
    if isinstance(value, msgspec.Raw):
        text = bytes(value)
        if not text:
            return int(NO_NS)
        try:
            return _in_range(_plain_ns(text))
        except ValueError:
            pass
        if text[:1] == b'"':
            try:
                value = json.loads(text)
            except ValueError:
                return int(NO_NS)
        else:  # an exponent, true/false/null, a list or an object
            return _decimal_ns(text.decode("ascii", "replace")) if text[:1] in b"-0123456789" else int(NO_NS)
    if isinstance(value, bool) or value is None:
        return int(NO_NS)
    if isinstance(value, int):
        return _in_range(value * 1000)
    if isinstance(value, float):
        # A built event (not from a file's text): its double's shortest text, as Python prints it.
        return _decimal_ns(repr(value)) if math.isfinite(value) else int(NO_NS)
    if isinstance(value, str):
        return _string_ns(value)
    return int(NO_NS)


# A JSON number, the whole text: what current Perfetto's CoerceToTs accepts in a string ts
# (json::ParseNumber: no leading zero, no white space or sign but "-", digits after "." and "e").
_STRING_TS = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _string_ns(text: str) -> int:
    """A string ts as Perfetto's CoerceToTs reads it: its text must be a JSON number, which is
    then read exactly (``"1e3"`` is 1000 µs; ``" 12"``, ``"+5"``, ``"1_000"``, ``"0x10"`` are none)."""
    return _decimal_ns(text) if _STRING_TS.fullmatch(text) else int(NO_NS)


def _plain_ns(text: bytes) -> int:
    """ns of ``-?digits[.digits]`` (sub-ns digits half to even); ValueError for anything else
    (a JSON number token has no spaces, '+' or '_', which int() would accept)."""
    negative = text[:1] == b"-"
    whole, _, frac = (text[1:] if negative else text).partition(b".")
    if not whole.isdigit() or (frac and not frac.isdigit()) or (_ and not frac):
        raise ValueError(text)
    ns = int(whole) * 1000
    if frac:
        ns += int(frac[:3].ljust(3, b"0"))
        rest = frac[3:]
        if rest:
            first = rest[0]  # the first digit below the ns: round half to even
            if first > 0x35 or (first == 0x35 and (rest[1:].strip(b"0") or ns % 2)):
                ns += 1
    return -ns if negative else ns


def _decimal_ns(text: str) -> int:
    try:
        value = Decimal(text)
    except InvalidOperation:
        return int(NO_NS)
    if not value.is_finite() or abs(value) > Decimal(10) ** 17:
        return int(NO_NS)
    return _in_range(int((value * 1000).to_integral_value(ROUND_HALF_EVEN)))


def _in_range(ns: int) -> int:
    return ns if _MIN_NS <= ns <= _MAX_NS else int(NO_NS)
