"""Time ranges and track selections as the CLI and the app give them to analyses."""

from __future__ import annotations

import numpy as np

from vtui.errors import UsageError
from vtui.regex_guard import UserRegex, compile_user
from vtui.store.slicetime import TimeRange, time_range
from vtui.store.store import TraceStore
from vtui.units import format_duration, parse_range


def resolve_range(store: TraceStore, text: str | None) -> TimeRange:
    """``"10ms:25ms"`` (relative to the trace start) -> the range value every analysis takes; None
    -> whole trace.

    A range that misses the trace entirely is a usage error; one that sticks out is clipped.
    """
    if not text:
        return time_range(store)
    try:
        start, end = parse_range(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if (start is not None and start >= store.span_ns) or (end is not None and end <= 0):
        raise UsageError(f"range {text} is outside the trace (0 – {format_duration(store.span_ns)})")
    return time_range(store, start, end)


def compile_regex(pattern: str, ignore_case: bool = False) -> UserRegex:
    """A user's regex in the guarded engine (vtui/regex_guard.py), or a one-line UsageError."""
    return compile_user(pattern, ignore_case)


LABEL_FORM = "{process} / {title}"  # Track.label: what --track REGEX matches


def tracks_matching(store: TraceStore, pattern: str | None) -> np.ndarray:
    """Track ids whose display name (process and thread/stream name) matches ``pattern``; all if None."""
    if not pattern:
        return np.arange(len(store.tracks), dtype=np.int64)
    regex = compile_regex(pattern)
    code, labels = store.tracks.texts(LABEL_FORM)  # each distinct label matched once
    ids = np.flatnonzero(regex.mask(labels)[code]).astype(np.int64)
    if not len(ids):
        raise UsageError(f"no track matches {pattern!r}")
    return ids
