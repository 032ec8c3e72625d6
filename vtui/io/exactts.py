"""Timestamps exact to the nanosecond where a float64 cannot hold them.

JSON traces write µs. Near 1.7e15 µs (epoch time, as Kineto writes for some runs) a double holds
only 0.25 µs steps, so ``1712195495519695.8`` reads as ``…695.75``: durations and self times come
out up to 0.25 µs wrong and a child may seem to end after its parent. Below 2**43 µs (~100 days
after the clock's zero) a double's step is under 1 ns, so rounding ts × 1000 gives the exact ns
for the 3 decimals profilers write; digits below the ns (Fuchsia writes 4) round by the double's
noise, though. Only chunks holding larger values or such digits pay for this: their ``ts`` text is
read again and turned, digit by digit, into absolute int64 ns (sub-ns digits rounded half to even).
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

import msgspec
import numpy as np

from vtui.io.events import EMPTY_RAW

LARGE_US = float(2**43)  # |ts| from here on: a double's step exceeds 1 ns
NO_NS = np.iinfo(np.int64).min  # "no exact value" (missing, not a number, out of range): use the double
_MAX_INT_PART = (np.iinfo(np.int64).max - 999) // 1000  # µs whose ns still fit in int64
_NOISE = 1000.0 * 2.0**-52 * 1.01


class _Ts(msgspec.Struct, gc=False):
    ts: msgspec.Raw = EMPTY_RAW


_TS_DECODER = msgspec.json.Decoder(list[_Ts])


def needs_exact(ts: np.ndarray) -> bool:
    """Do these (double) timestamps need their text: values too large for a double to keep to the
    ns, or digits below the ns (a double decides how those round only by its own rounding noise)?"""
    with np.errstate(invalid="ignore", over="ignore"):
        size = np.abs(ts)
        if (size >= LARGE_US).any():
            return True
        scaled = ts * 1000.0
        # Off a whole ns by more than parsing and scaling can move it (together under 1000 steps
        # of a double at ts, each at most ts * 2**-52): there are sub-ns digits.
        off = np.abs(scaled - np.rint(scaled))
        return bool((off > size * _NOISE).any())


def integral_only(events: list) -> bool:
    """Were all these events' ts written as integers (or left out)? Then their doubles are exact."""
    return set(map(type, (e.ts for e in events))) <= _INTEGRAL


_INTEGRAL = {int, type(None)}
_EXACT_DOUBLE = float(2**53)  # integers up to here are exact as doubles


def exact_from_doubles(ts: np.ndarray) -> np.ndarray:
    """Absolute int64 ns of timestamps written as integers (µs), NO_NS where there is none."""
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(ts) & (np.abs(ts) < min(_EXACT_DOUBLE, _MAX_INT_PART))
    return np.where(ok, np.where(ok, ts, 0).astype(np.int64) * 1000, NO_NS)


def chunk_ts_ns(chunk: bytes, count: int) -> np.ndarray | None:
    """Absolute int64 ns of each event's ``ts`` in ``chunk`` (events as in the array, no brackets),
    NO_NS where there is none; None when the chunk does not hold exactly ``count`` events."""
    try:
        items = _TS_DECODER.decode(b"[" + chunk + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if len(items) != count:
        return None
    return texts_to_ns([t.ts for t in items])


def texts_to_ns(texts: list) -> np.ndarray:
    """int64 ns of JSON µs values given as their source bytes (rounded half to even below 1 ns).

    Plain decimals (``-?digits[.digits]``, all that profilers write) take the integer parser;
    anything else (exponents, numeric strings) goes through ``Decimal``. (Measured on an epoch
    Kineto chunk: 0.6 µs a value, 3x faster than splitting the digits with numpy.)
    """
    out = []
    for raw in texts:
        text = bytes(raw)
        try:
            value = _plain_ns(text)
        except ValueError:
            value = _slow_ns(text)
        out.append(value if _MIN_NS <= value <= _MAX_NS else NO_NS)
    return np.array(out, dtype=np.int64)


_MIN_NS, _MAX_NS = int(NO_NS) + 1, int(np.iinfo(np.int64).max)


def _plain_ns(text: bytes) -> int:
    """ns of ``-?digits[.digits]``; ValueError for anything else (a JSON number token has no
    spaces, '+' or '_', which int() would accept)."""
    negative = text[:1] == b"-"
    whole, _, frac = (text[1:] if negative else text).partition(b".")
    ns = int(whole) * 1000
    if frac:
        ns += int(frac[:3].ljust(3, b"0"))
        rest = frac[3:]
        if rest:
            if not rest.isdigit():
                raise ValueError(text)
            first = rest[0]  # the first digit below the ns: round half to even
            if first > 0x35 or (first == 0x35 and (rest[1:].strip(b"0") or ns % 2)):
                ns += 1
    return -ns if negative else ns


def _slow_ns(text: bytes) -> int:
    if text[:1] == b'"':
        try:
            text = json.loads(text).strip().encode()
        except (ValueError, AttributeError):
            return int(NO_NS)
    try:
        value = Decimal(text.decode("ascii"))
    except (InvalidOperation, UnicodeDecodeError):
        return int(NO_NS)
    if not value.is_finite() or value.adjusted() > 30:  # 1e999999: past int64 ns anyway (Decimal would overflow)
        return int(NO_NS)
    ns = int((value * 1000).to_integral_value(ROUND_HALF_EVEN))
    return ns if NO_NS < ns <= np.iinfo(np.int64).max else int(NO_NS)
