"""Tracks: the rows of the timeline (threads, GPU streams, async groups, counters)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

THREAD = "thread"
GPU = "gpu"
ASYNC = "async"
COUNTER = "counter"
PROCESS = "process"  # process-scoped instants
GLOBAL = "global"  # global-scoped instants

_DIGITS = re.compile(r"-?\d+")


def normalise_pid(value: Any, strings: bool = True) -> Any:
    """Digit-only strings become ints so "123" and 123 meet (``strings=False``: they stay
    strings, as pids do); other strings stay names."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        return int(text) if strings and _DIGITS.fullmatch(text) else value
    if value is None:
        return None
    return str(value)


def id_sort_key(value: Any) -> tuple[int, Any]:
    """Sort ints before strings before missing, without comparing across types."""
    if isinstance(value, int):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    return (2, "")


def show_id(value: Any) -> str:
    return "?" if value is None else str(value)


@dataclass(slots=True)  # a million rows: less memory, made faster
class Track:
    """One timeline row group: a row of the store's ``TrackTable`` (``vtui.store.tracktable``), made
    when asked for. ``lanes`` is filled by the index."""

    id: int
    kind: str
    source: int
    pid: Any
    tid: Any = None
    name: str = ""
    process_name: str = ""
    process_label: str = ""
    group: str = ""  # source file / rank label when several files were opened
    slice_count: int = 0
    instant_count: int = 0
    counter_count: int = 0
    lanes: int = 0
    nested_lanes: int = 0  # lanes below this are nesting depths; the rest hold overlaps
    overlapping: int = 0

    @property
    def process_title(self) -> str:
        """How the process is shown: label for GPUs (Kineto), else name, then pid."""
        if self.kind == GLOBAL:
            return self.group or "global"
        parts = []
        if self.group:
            parts.append(self.group)
        name = self.process_label if self.process_label.startswith("GPU") else self.process_name
        if name:
            parts.append(name)
        if self.pid is not None and show_id(self.pid) not in name:
            parts.append(show_id(self.pid))
        return " ".join(parts) or "?"

    @property
    def title(self) -> str:
        return self.name or show_id(self.tid)

    @property
    def label(self) -> str:
        """Process and row title together, as track filters (``--track REGEX``) match them."""
        return f"{self.process_title} / {self.title}"

