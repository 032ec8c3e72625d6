"""Times and sizes for people, written and read (shared by the app, the CLI and the options)."""

from __future__ import annotations

import re

TIME_UNITS = ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns"))  # largest first


def format_duration(ns: float, digits: int = 3) -> str:
    """``1234567`` -> ``1.235 ms``; picks the largest unit that keeps the number ≥ 1."""
    value = abs(ns)
    for scale, unit in TIME_UNITS:
        if value >= scale or scale == 1:
            text = f"{ns / scale:.{digits if scale > 1 else 0}f}"
            if "." in text:
                text = text.rstrip("0").rstrip(".")
            return f"{text} {unit}"
    return f"{ns} ns"  # pragma: no cover


def counted(n: int, word: str, plural: str | None = None) -> str:
    """``1 step`` / ``3 steps`` / ``1,024 steps``."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def format_bytes(n: float) -> str:
    """``1536`` -> ``1.5 KiB`` (binary units, as memory is reported)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


_SIZE = re.compile(r"(\d+(?:\.\d*)?)\s*([kmgt]?)(i?)(b?)")
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str, default: int) -> int:
    """``4GiB`` / ``4G`` -> 4·2³⁰ (binary, as ``format_bytes`` prints); ``4GB`` -> 4·10⁹
    (decimal); ``500`` -> bytes. Empty or unreadable text gives ``default``."""
    m = _SIZE.fullmatch(text.strip().lower())
    if m is None:
        return default
    number, prefix, binary, byte = m.groups()
    decimal = bool(prefix) and byte and not binary  # "GB" is decimal; "G", "GiB", "Gi" binary
    base = 1000 if decimal else 1024
    return int(float(number) * base ** _POWERS[prefix])


_PARSE_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def parse_time(text: str) -> int:
    """``12.5ms`` / ``300us`` / ``2 s`` / ``1500ns`` -> integer ns. Raises ValueError.

    A number needs its unit (``1500`` alone could be ns, µs as in the file, or ms as shown);
    only ``0`` may go without one."""
    match = re.fullmatch(r"\s*(-?\d+(?:\.\d*)?|-?\.\d+)\s*(ns|us|µs|ms|s)?\s*", text)
    if not match:
        raise ValueError(f"not a time: {text!r} (try 12.5ms, 300us, 2s)")
    value = float(match.group(1))
    if match.group(2) is None and value != 0:
        raise ValueError(f"a time needs a unit: {text.strip()!r} (try {match.group(1)}ms, {match.group(1)}us or "
                         f"{match.group(1)}ns)")
    return int(round(value * _PARSE_UNITS[match.group(2) or "ns"]))


def parse_range(text: str) -> tuple[int | None, int | None]:
    """``10ms:25.5ms`` -> (10_000_000, 25_500_000); either side may be empty (``:5ms``, ``1s:``).

    Times are relative to the trace start. Raises ValueError with a message for people.
    """
    if text.count(":") != 1:
        raise ValueError(f"not a range: {text!r} (try 10ms:25.5ms)")
    left, right = (part.strip() for part in text.split(":"))
    start = parse_time(left) if left else None
    end = parse_time(right) if right else None
    if start is not None and end is not None and end <= start:
        raise ValueError(f"empty range: {text!r} (the end must come after the start)")
    return start, end
