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


def process_title_of(is_global: bool, group: str, process_label: str, process_name: str, pid: Any) -> str:
    """A track's process title from its fields (``Track.process_title``; the track table calls it once
    per distinct process, not per track)."""
    if is_global:
        return group or "global"
    parts = []
    if group:
        parts.append(group)
    name = process_label if process_label.startswith("GPU") else process_name.strip()  # the name as written
    if name:
        parts.append(name)
    if pid is not None and show_id(pid) not in name:
        parts.append(show_id(pid))
    return " ".join(parts) or "?"


def title_of(name: str, tid: Any) -> str:
    """A track's row title: its name, else its tid."""
    return name or show_id(tid)


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
    process_name: str = ""  # the process_name as written (not trimmed)
    process_label: str = ""
    group: str = ""  # source file / rank label when several files were opened
    # The name Perfetto's JSON importer gives it, exact ("" for none): a thread's thread_name (or its
    # string tid), a counter series' "name[ id: ID] key". ``name`` is the title shown.
    exact_name: str = ""
    slice_count: int = 0
    instant_count: int = 0
    counter_count: int = 0
    lanes: int = 0
    nested_lanes: int = 0  # lanes below this are nesting depths; the rest hold overlaps
    overlapping: int = 0

    @property
    def process_title(self) -> str:
        """How the process is shown: label for GPUs (Kineto), else name, then pid."""
        return process_title_of(self.kind == GLOBAL, self.group, self.process_label, self.process_name, self.pid)

    @property
    def title(self) -> str:
        return title_of(self.name, self.tid)

    @property
    def label(self) -> str:
        """Process and row title together, as track filters (``--track REGEX``) match them."""
        return f"{self.process_title} / {self.title}"

