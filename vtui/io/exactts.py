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
_POW10 = 10 ** np.arange(19, dtype=np.int64)
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

    Plain decimals (``-?digits[.digits]``, all that profilers write) are converted column-wise
    with numpy; anything else (exponents, numeric strings) goes through ``Decimal`` one by one.
    """
    n = len(texts)
    out = np.full(n, NO_NS, dtype=np.int64)
    if not n:
        return out
    lens = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    chars = np.frombuffer(b"".join(texts), dtype=np.uint8)
    simple = lens > 0
    if len(chars):
        simple &= _plain_decimal(chars, lens, out)
    for i in np.flatnonzero(~simple & (lens > 0)).tolist():
        out[i] = _slow_ns(bytes(texts[i]))
    return out


def _plain_decimal(chars: np.ndarray, lens: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` for the values that are plain decimals; return which ones were."""
    n = len(lens)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    seg = np.repeat(np.arange(n), lens)
    pos = np.arange(len(chars), dtype=np.int64) - starts[seg]
    digit = chars.astype(np.int64) - 48
    is_digit = (digit >= 0) & (digit <= 9)
    is_dot = chars == 46
    neg_char = (chars == 45) & (pos == 0)
    bad = np.bincount(seg, weights=~(is_digit | is_dot | neg_char), minlength=n) > 0
    dots = np.bincount(seg, weights=is_dot, minlength=n)
    neg = np.zeros(n, dtype=bool)
    nonempty = lens > 0
    neg[nonempty] = chars[starts[nonempty]] == 45
    dot_at = lens.copy()
    where_dot = np.flatnonzero(is_dot)
    dot_at[seg[where_dot]] = pos[where_dot]
    int_digits = dot_at - neg
    frac_digits = np.where(dots > 0, lens - dot_at - 1, 0)
    ok = nonempty & ~bad & (dots <= 1) & (int_digits >= 1) & (int_digits <= 16) & ((dots == 0) | (frac_digits >= 1))
    # Power of ten of each digit: 0 just before the dot, -1 just after it.
    power = np.where(pos < dot_at[seg], dot_at[seg] - 1 - pos, dot_at[seg] - pos)
    digit = np.where(is_digit, digit, 0)
    whole = np.where(power >= 0, digit * _POW10[np.clip(power, 0, 18)], 0)
    frac = np.where((power < 0) & (power >= -3), digit * _POW10[np.clip(power + 3, 0, 18)], 0)
    first_cut = np.where(power == -4, digit, 0)
    sticky = (power < -4) & (digit > 0)
    rows = np.flatnonzero(ok)
    if not len(rows):
        return ok
    int_part, frac_part, cut, rest = (_segment_sums(a, starts, lens, rows) for a in (whole, frac, first_cut, sticky))
    fits = int_part <= _MAX_INT_PART
    ns = int_part * 1000 + frac_part
    up = (cut > 5) | ((cut == 5) & ((rest > 0) | (ns % 2 == 1)))
    ns = ns + up
    ns = np.where(neg[rows], -ns, ns)
    out[rows[fits]] = ns[fits]
    ok[rows[~fits]] = False
    return ok


def _segment_sums(values: np.ndarray, starts: np.ndarray, lens: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Sum of ``values`` (int64, exact) over each chosen segment; segments are non-empty and in order."""
    bounds = np.empty(2 * len(rows), dtype=np.int64)
    bounds[0::2] = starts[rows]
    bounds[1::2] = starts[rows] + lens[rows]
    padded = np.append(values.astype(np.int64, copy=False), 0)  # an end may be the very last position
    return np.add.reduceat(padded, bounds)[0::2]


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
    if not value.is_finite():
        return int(NO_NS)
    ns = int((value * 1000).to_integral_value(ROUND_HALF_EVEN))
    return ns if NO_NS < ns <= np.iinfo(np.int64).max else int(NO_NS)
