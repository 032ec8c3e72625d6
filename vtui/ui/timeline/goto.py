"""What `g` (or the palette's "go to") accepts: a time, a range, or a step number.

``12.5ms`` centres the window on that time; ``12ms:25.5ms`` (either side may be empty) makes
that the range and frames it; ``#3`` or ``step 3`` makes step 3 (numbered from 0, as Insights
numbers them) the range. Times count from the trace start. Plain Python over the store."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vtui.store.slicetime import time_range
from vtui.store.store import TraceStore
from vtui.units import format_duration, parse_range, parse_time

HINT = "a time (12.5ms), a range (12ms:25.5ms) or a step (#3)"


@dataclass(frozen=True)
class Target:
    time: int | None = None  # centre the window here
    range: tuple[int, int] | None = None  # make this the range and frame it
    what: str = ""  # for the status line / a notification
    note: str = ""  # what was changed to fit the trace (a time past its end): said, not silently clamped


def parse_target(text: str, store: TraceStore) -> Target:
    """``text`` as a Target; ValueError with a message for people when it is none of the three."""
    text = text.strip()
    span = int(store.span_ns)
    step = re.fullmatch(r"(?:#|step\s*#?)\s*(\d+)", text, re.IGNORECASE)
    if step:
        from vtui.analysis.steps.detect import find_step_rows  # noqa: PLC0415 — only a step number needs it

        label, _source, rows = find_step_rows(store)
        k = int(step.group(1))
        if not len(rows):
            raise ValueError("no repeating step found in this trace (Insights, i, says why)")
        if k >= len(rows):
            raise ValueError(f"step #{k} does not exist: this trace has {len(rows)} {label} steps (#0 – #{len(rows) - 1})")
        row = int(rows[k])
        a, b = int(store.slices.start_ns[row]), int(store.slices.end_ns[row])
        return Target(range=(a, b), what=f"step #{k} ({format_duration(b - a)})")
    if ":" in text:
        start, end = parse_range(text)
        inside = time_range(store, start, end)  # the one rule: open ends are the trace's, clamped
        a, b = inside.t0, inside.t1
        if b <= a:
            raise ValueError(f"range {text} is outside the trace (0 – {format_duration(span)})")
        past = end is not None and end > span or start is not None and start < 0
        note = f"{text} reaches past the trace (0 – {format_duration(span)}): cut to it" if past else ""
        return Target(range=(a, b), what=f"range {format_duration(a)} – {format_duration(b)}", note=note)
    try:
        t = parse_time(text)
    except ValueError as exc:
        raise ValueError(f"{exc}; or {HINT}") from None
    if not 0 <= t <= span:
        at = "end" if t > span else "start"
        return Target(time=min(max(t, 0), span), what=format_duration(t),
                      note=f"{format_duration(t)} is past the trace's {at} (0 – {format_duration(span)}): "
                           f"showing its {at}")
    return Target(time=t, what=format_duration(t))
