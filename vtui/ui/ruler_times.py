"""Times that stay readable at any zoom: when ticks would print alike (``1.043s 1.043s``), an
anchor time with enough digits and offsets from it (``+2µs``)."""

from __future__ import annotations

import math

from vtui.units import TIME_UNITS, format_duration


def precise_time(t: float, resolution: float) -> str:
    """``t`` in its own unit with the decimals that tell apart times ``resolution`` ns apart."""
    value = abs(t)
    scale, unit = next((s, u) for s, u in TIME_UNITS if value >= s or s == 1)
    decimals = max(0, math.ceil(math.log10(scale / max(resolution, 1)))) if scale > 1 else 0
    return f"{t / scale:.{decimals}f} {unit}"


def tick_times(t0: float, t1: float, step: float) -> list[float]:
    first = math.ceil(t0 / step) * step
    count = int((t1 - first) // step) + 1 if t1 >= first else 0
    return [first + i * step for i in range(count)]


def tick_labels(ticks: list[float], step: float) -> tuple[str | None, list[str]]:
    """(anchor, labels): plain times when they all differ, else an anchor and ``+offset`` labels."""
    plain = [format_duration(t, 3).replace(" ", "") for t in ticks]
    if len(set(plain)) == len(plain):
        return None, plain
    anchor = ticks[0]
    offsets = ["+" + format_duration(t - anchor, 3).replace(" ", "") for t in ticks]
    return precise_time(anchor, step).replace(" ", ""), offsets


def window_text(t0: int, t1: int) -> str:
    """``1.2 ms – 3.4 ms (2.2 ms)``, or ``1.0432160 s +4 µs`` where the two ends would print alike."""
    span = t1 - t0
    a, b = format_duration(t0), format_duration(t1)
    if a != b and (span <= 0 or span * 1000 >= max(abs(t0), abs(t1))):
        return f"{a} – {b} ({format_duration(span)})"
    return f"{precise_time(t0, max(span / 100, 1))} +{format_duration(span)}"
