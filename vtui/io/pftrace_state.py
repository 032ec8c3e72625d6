"""What a Perfetto trace's reader keeps between packets: each sequence's interned strings and
defaults (valid only while its incremental state is), and the tracks by uuid with the process
and thread each one stands for.

Tracks become the (pid, tid) keys every vtui event has, so nothing above the io layer knows a
trace came from a protobuf: a thread track is its (pid, tid); a process track is (pid,
"process"); a custom track sits in the process of its nearest ancestor with one (a root custom
track is a "process" of its own, named as the track), its tid its name. A track name that is a
plain decimal integer reads as that integer (a tid vtui's exporter wrote so: one beyond int32).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]{0,18})")


def text(value: str | bytes) -> str:
    """A string field's text: the protobuf runtime hands a proto2 string that is not UTF-8 over as
    bytes; those are decoded with replacement characters."""
    return value if isinstance(value, str) else bytes(value).decode("utf-8", "replace")


def key_of_name(name: str) -> Any:
    """A track name as a pid / tid: its integer where it is one, written plainly; else the text."""
    return int(name) if _INTEGER.fullmatch(name) else name


@dataclass
class Sequence:
    """One writer's sequence (``trusted_packet_sequence_id``): interned data and defaults."""

    valid: bool = False  # incremental state known (cleared once, nothing lost since)
    names: dict[int, str] = field(default_factory=dict)
    cats: dict[int, str] = field(default_factory=dict)
    arg_names: dict[int, str] = field(default_factory=dict)
    arg_strings: dict[int, str] = field(default_factory=dict)
    default_track: int | None = None  # TrackEventDefaults.track_uuid
    extra_counters: list[int] = field(default_factory=list)
    extra_double_counters: list[int] = field(default_factory=list)
    thread: tuple[int, int] | None = None  # a legacy ThreadDescriptor packet: the sequence's thread
    last_us: int = 0  # legacy timestamp_delta_us base (µs)
    totals: dict[int, float] = field(default_factory=dict)  # incremental counters' running values, by track
    thread_time_us: int = 0  # legacy thread_time_delta_us base
    instructions: int = 0  # legacy thread_instruction_count_delta base


    def clear(self) -> None:
        self.names.clear()
        self.cats.clear()
        self.arg_names.clear()
        self.arg_strings.clear()
        self.default_track = None
        self.extra_counters = []
        self.extra_double_counters = []
        self.totals.clear()
        self.valid = True


@dataclass
class Track:
    uuid: int
    parent: int = 0
    name: str = ""
    pid: int | None = None  # a process or thread track's
    tid: int | None = None  # a thread track's
    counter: bool = False
    scale: float = 1.0  # a counter's unit multiplier
    incremental: bool = False  # a counter whose values are deltas (summed per sequence)


PROCESS_TID = "process"  # the tid of events on a process track itself


class Tracks:
    """Track descriptors by uuid, and the (pid, tid) each stands for."""

    def __init__(self) -> None:
        self.by_uuid: dict[int, Track] = {}
        self._keys: dict[int, tuple[Any, Any]] = {}
        self.unknown = 0  # events on a uuid never described

    def add(self, track: Track) -> bool:
        """Register (or update) a track; True when it is new or changed."""
        old = self.by_uuid.get(track.uuid)
        if old == track:
            return False
        self.by_uuid[track.uuid] = track
        self._keys.clear()  # a changed parent or name moves its descendants too
        return True

    def key(self, uuid: int) -> tuple[Any, Any]:
        got = self._keys.get(uuid)
        if got is None:
            got = self._keys[uuid] = self._resolve(uuid)
        return got

    def _resolve(self, uuid: int) -> tuple[Any, Any]:
        track = self.by_uuid.get(uuid)
        if track is None:
            self.unknown += 1
            return (f"track {uuid}", f"track {uuid}")
        if track.tid is not None and track.pid is not None:
            return (track.pid, track.tid)
        if track.pid is not None:
            return (track.pid, PROCESS_TID)
        label = key_of_name(track.name) if track.name else f"track {uuid}"
        return (self.process_of(track), label)

    def process_of(self, track: Track) -> Any:
        """The pid of the nearest ancestor with one (a process or thread track), else the root's label."""
        seen = {track.uuid}
        at = track
        while at.parent and at.parent in self.by_uuid and at.parent not in seen:
            at = self.by_uuid[at.parent]
            seen.add(at.uuid)
            if at.pid is not None:
                return at.pid
        if at.pid is not None:
            return at.pid
        return key_of_name(at.name) if at.name else f"track {at.uuid}"

    def is_process(self, uuid: int) -> bool:
        track = self.by_uuid.get(uuid)
        return track is not None and track.pid is not None and track.tid is None
