"""Export a time range (and a set of tracks) as a Chrome-trace JSON that Perfetto and vtui open.

Every event that overlaps the range is copied byte for byte from the source file: slices (both
B and E of a pair, both ends of an async pair), instants, counter samples (plus each series'
sample just before the range, whose value holds into it), flows whose two ends are both
exported, and the metadata events (names, sort indices) of the exported processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np

from vtui.analysis.selection import counter_rows, instant_rows, slice_rows
from vtui.atomic import atomic_write, check_output_path
from vtui.io.rawevents import pick_events
from vtui.store.store import TraceStore


@dataclass
class ExportPlan:
    """Ordinals to copy, per source file."""

    ordinals: dict[int, np.ndarray]
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def events(self) -> int:
        return sum(len(v) for v in self.ordinals.values())


def plan_export(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> ExportPlan:
    parts: dict[int, list[np.ndarray]] = {}

    def take(source: np.ndarray, ordinal: np.ndarray) -> None:
        keep = ordinal >= 0
        for src in np.unique(source[keep]).tolist():
            parts.setdefault(src, []).append(ordinal[keep & (source == src)].astype(np.int64))

    s, i, c, f = store.slices, store.instants, store.counters, store.flows
    rows = slice_rows(store, t0, t1, tracks)
    take(s.source[rows], s.ordinal[rows])
    take(s.source[rows], s.end_ordinal[rows])
    irows = instant_rows(store, t0, t1, tracks)
    take(i.source[irows], i.ordinal[irows])
    crows = counter_rows(store, t0, t1, tracks)
    take(c.source[crows], c.ordinal[crows])
    exported = np.zeros(len(s), dtype=bool)
    exported[rows] = True
    frows = np.flatnonzero((f.src_slice >= 0) & (f.dst_slice >= 0) & (f.src_event >= 0))
    frows = frows[exported[f.src_slice[frows]] & exported[f.dst_slice[frows]]]
    take(f.source[frows], f.src_event[frows])
    take(f.source[frows], f.dst_event[frows])
    # Metadata of the processes that have exported events.
    used = {int(t) for t in np.concatenate([s.track[rows], i.track[irows], c.track[crows]]).tolist()}
    processes = {(store.tracks[t].source, store.tracks[t].pid) for t in used}
    meta = [(src, ordinal) for src, ordinal, pid in store.metadata_refs if (src, pid) in processes]
    if meta:
        take(np.array([m[0] for m in meta]), np.array([m[1] for m in meta]))
    ordinals = {src: np.unique(np.concatenate(p)) for src, p in parts.items()}
    counts = {"slices": len(rows), "instants": len(irows), "counter_samples": len(crows), "flows": len(frows),
              "metadata": len(meta)}
    return ExportPlan(ordinals=ordinals, counts=counts)


def export_range(store: TraceStore, out: str | Path, t0: int, t1: int, tracks: np.ndarray | None = None,
                 overwrite: bool = False, progress: Callable[[float], None] | None = None) -> ExportPlan:
    """Write the events of [t0, t1] on ``tracks`` to ``out`` (temp file + rename; never over an input)."""
    path = check_output_path(out, [src.path for src in store.sources], overwrite)
    plan = plan_export(store, t0, t1, tracks)
    sources = sorted(plan.ordinals)
    events: list[msgspec.Raw] = []
    for k, src in enumerate(sources):
        def report(frac: float, k: int = k) -> None:
            if progress:
                progress((k + frac) / len(sources))

        events.extend(pick_events(store.sources[src].path, plan.ordinals[src], report))
    metadata = store.sources[0].metadata if len(store.sources) == 1 else {}

    def write(fh: BinaryIO) -> None:
        fh.write(b'{"traceEvents":[\n')
        for n, raw in enumerate(events):
            if n:
                fh.write(b",\n")
            fh.write(raw)
        fh.write(b"\n]")
        for key, value in metadata.items():
            if key != "traceEvents":
                fh.write(b",\n" + msgspec.json.encode(key) + b":" + msgspec.json.encode(value))
        fh.write(b"}\n")

    atomic_write(path, write)
    return plan
