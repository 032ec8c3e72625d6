"""TraceStore: the immutable, columnar result of loading one trace (or a folder of ranks)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import msgspec
import numpy as np

from vtui.io.argsfile import MappedBlob
from vtui.store.containment import self_time
from vtui.store.index import IntervalIndex
from vtui.store.tables import CounterTable, FlowTable, InstantTable, SliceTable
from vtui.store.tracktable import TrackTable

T = TypeVar("T")
_MISSING = object()


@dataclass
class SourceInfo:
    """One file that went into the store."""

    path: str
    label: str  # short name shown for its processes (rank or file name)
    form: str  # "array" or "object"
    repaired: bool
    events: int  # event objects read (metadata included)
    by_phase: dict[str, int]
    metadata: dict[str, Any]  # top-level keys other than traceEvents
    warnings: list[str] = field(default_factory=list)
    fingerprint: list[Any] = field(default_factory=list)  # [size, mtime_ns, edge hash] when it was read
    decode_chunks: list[int] = field(default_factory=list)  # [chunks decoded, of them by the C helper] ([] : none)
    # [byte offset, ordinal] of event starts in the (inflated) file, ascending, ~4 MiB apart: an export
    # reads from the one before its first event (vtui.io.rawevents); [] : from the start
    checkpoints: list[list[int]] = field(default_factory=list)

    @property
    def display_time_unit(self) -> str:
        unit = self.metadata.get("displayTimeUnit")
        return unit if unit in ("ms", "ns") else "ms"


@dataclass
class TraceStore:
    sources: list[SourceInfo]
    strings: list[str]
    tracks: TrackTable  # reads as a list of Track; the rows are made when asked for
    slices: SliceTable
    instants: InstantTable
    counters: CounterTable
    flows: FlowTable
    args_blob: bytes | MappedBlob  # MappedBlob: the args file, mapped (a big load, a cache entry)
    origin_us: float  # smallest timestamp as written (µs), i.e. relative time 0
    span_ns: int
    warnings: list[str]
    metadata_events: list[dict[str, Any]]  # M events other than names / sort indices
    extra_end_args: dict[int, tuple[int, int]] = field(default_factory=dict)  # slice row -> E args
    metadata_refs: list[tuple[int, int, Any]] = field(default_factory=list)  # every M event: (source, ordinal, pid)
    # How far a child may pass its parent's end and still nest: one double step of the timestamps
    # where some were too large to read exactly, else 0 (see vtui.store.containment).
    nesting_tolerance_ns: int = 0

    @cached_property
    def index(self) -> IntervalIndex:
        """Built on first use (a store read from the cache) unless given by ``set_index``."""
        return IntervalIndex(self.slices, len(self.tracks))

    def set_index(self, index: IntervalIndex) -> None:
        """Keep an index built already over these slices (the build needs one for its flows)."""
        self.index = index  # a cached_property takes an assigned value as its cached one

    @cached_property
    def derived(self) -> dict[Any, Any]:
        """The store's one memo (per-slice masks, Arrow tables, memory series, call-tree parts,
        reports per range): the store never changes once built, so each is computed once per
        store and goes with it. Filled through ``memo``."""
        return {}

    def memo(self, key: Any, compute: Callable[[], T]) -> T:
        """``compute()`` once per ``key``; an array comes back read-only, as every caller shares it
        (other values are shared too: callers do not change them)."""
        got = self.derived.get(key, _MISSING)
        if got is _MISSING:
            got = compute()
            if isinstance(got, np.ndarray):
                got.flags.writeable = False
            self.derived[key] = got
        return got

    def string_ids(self, text: str) -> list[int]:
        """The ids of the interned strings equal to ``text`` (one at most: the build interns each
        text once), found once per store by the list's own search (C, not a Python loop over a
        million names) and memoised."""

        def find() -> list[int]:
            out: list[int] = []
            i = -1
            while True:
                try:
                    i = self.strings.index(text, i + 1)
                except ValueError:
                    return out
                out.append(i)

        return list(self.memo(("string_ids", text), lambda: tuple(find())))

    # ---- counts -------------------------------------------------------------------
    @property
    def event_count(self) -> int:
        return sum(s.events for s in self.sources)

    @property
    def by_phase(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for src in self.sources:
            for ph, n in src.by_phase.items():
                total[ph] = total.get(ph, 0) + n
        return total

    @property
    def repaired(self) -> bool:
        return any(s.repaired for s in self.sources)

    @property
    def overlapping_slices(self) -> int:
        return self.tracks.overlapping

    # ---- per-row access -------------------------------------------------------------
    def name(self, row: int) -> str:
        return self.strings[self.slices.name_id[row]]

    def slice_args(self, row: int) -> dict[str, Any]:
        """Args of a slice, decoded now (B/E and b/e pairs: both events' args merged deeply)."""
        args = self._decode(int(self.slices.args_off[row]), int(self.slices.args_len[row]))
        if row in self.extra_end_args:
            args = merge_args(args, self._decode(*self.extra_end_args[row]))
        return args

    def instant_args(self, row: int) -> dict[str, Any]:
        return self._decode(int(self.instants.args_off[row]), int(self.instants.args_len[row]))

    def _decode(self, off: int, length: int) -> dict[str, Any]:
        if length <= 0:
            return {}
        raw = self.args_blob[off : off + length]
        try:
            value = msgspec.json.decode(raw)
        except (msgspec.DecodeError, ValueError, RecursionError):  # args nested too deep
            return {"<undecodable args>": raw.decode("utf-8", "replace")}
        return value if isinstance(value, dict) else {"<args>": value}

    @cached_property
    def self_ns(self) -> np.ndarray:
        """Self time per slice: duration minus the union of its direct children's intervals."""
        return self_time(self.slices.parent, self.slices.start_ns, self.slices.end_ns)

    def ts_to_abs_us(self, ts_ns: int) -> float:
        """A relative time back to the file's own microseconds."""
        return self.origin_us + ts_ns / 1000.0

    @property
    def nbytes(self) -> int:
        """Memory held by the columns (args blob excluded)."""
        return self.slices.nbytes + self.instants.nbytes + self.counters.nbytes + self.flows.nbytes


def merge_args(begin: dict[str, Any], end: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """The end event's args over the begin's, objects merged key by key at every level (as
    Perfetto and Catapult do: ``{"p": {"a": 1}}`` + ``{"p": {"b": 2}}`` keeps both). Past 64
    levels (hostile nesting) the end's value wins, so the merge never runs out of stack."""
    out = dict(begin)
    for key, value in end.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict) and depth < 64:
            value = merge_args(old, value, depth + 1)
        out[key] = value
    return out
