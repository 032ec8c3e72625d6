"""Export a time range (and a set of tracks) as a Perfetto protobuf trace (``.pftrace``).

The same events as the JSON export (``vtui.export.trace.plan_export``: slices, instants, counter
samples, metadata of the processes shown), read from the source files and written as TrackEvent
packets (``pftrace_writer``; async, sample and object events as legacy events); the flows between
exported slices are written as flow ids on them. Smaller than the JSON and faster for Perfetto
to open; vtui reads it back (``vtui.io.pftrace``). Metadata events other than names, labels and
sort indices have no place and are counted as not written.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np

from vtui.atomic import atomic_write
from vtui.errors import UsageError
from vtui.export.pftrace_writer import PacketWriter
from vtui.export.trace import SKIPPED_KEYS, ExportPlan, check_unchanged, prepare_export, rank_file_names
from vtui.io.rawevents import copy_events
from vtui.store.store import SourceInfo, TraceStore


def export_pftrace(store: TraceStore, out: str | Path, t0: int, t1: int, tracks: np.ndarray | None = None,
                   overwrite: bool = False, progress: Callable[[float], None] | None = None) -> ExportPlan:
    """Write the events of [t0, t1] on ``tracks`` to ``out`` as a Perfetto trace (temp file +
    rename; a folder of one file per rank for several sources). ``plan.counts`` gains
    ``not_written``: events with no TrackEvent form."""
    path, plan, sources, several = prepare_export(store, out, t0, t1, tracks, overwrite)
    if several:
        path.mkdir(exist_ok=True)
    names = [n.removesuffix(".json") + ".pftrace" for n in rank_file_names([store.sources[s].path for s in sources])]
    flows = _flow_ends(store, plan.flow_rows)
    skipped: dict[str, int] = {}
    for k, src in enumerate(sources):
        def report(frac: float, k: int = k) -> None:
            if progress:
                progress((k + frac) / len(sources))

        target = path / names[k] if several else path
        write = partial(_write_source, store.sources[src], plan.ordinals[src], flows.get(src, ({}, {})), skipped, report)
        atomic_write(target, write)
    if skipped:
        plan.counts["not_written"] = sum(skipped.values())
    return plan


def _flow_ends(store: TraceStore, rows: np.ndarray) -> dict[int, tuple[dict[int, list[int]], dict[int, list[int]]]]:
    """Per source: (event ordinal -> flow ids it starts, ordinal -> ids it ends), one id per
    exported flow edge, at the begin events of its two slices. An edge between two sources (ranks
    are files of their own) has no place in either file."""
    s, f = store.slices, store.flows
    out: dict[int, tuple[dict[int, list[int]], dict[int, list[int]]]] = {}
    src_rows, dst_rows = f.src_slice[rows].astype(np.int64), f.dst_slice[rows].astype(np.int64)
    same = s.source[src_rows] == s.source[dst_rows]
    for ident, (a, b) in enumerate(zip(src_rows[same].tolist(), dst_rows[same].tolist()), 1):
        starts, ends = out.setdefault(int(s.source[a]), ({}, {}))
        starts.setdefault(int(s.ordinal[a]), []).append(ident)
        ends.setdefault(int(s.ordinal[b]), []).append(ident)
    return out


def _write_source(source: SourceInfo, ordinals: np.ndarray, flows: tuple[dict, dict], skipped: dict[str, int],
                  progress: Callable[[float], None], fh: BinaryIO) -> None:
    writer = PacketWriter(fh, flows_out=flows[0], flows_in=flows[1])
    writer.metadata({k: v for k, v in source.metadata.items() if k not in SKIPPED_KEYS})
    order = iter(ordinals.tolist())  # copy_events hands the events over in ordinal order

    def write(raw: msgspec.Raw) -> None:
        writer.event(next(order), bytes(raw))

    def rewind() -> None:  # the read from a checkpoint fell short: start over
        nonlocal writer, order
        fh.seek(0)
        fh.truncate()
        writer = PacketWriter(fh, flows_out=flows[0], flows_in=flows[1])
        writer.metadata({k: v for k, v in source.metadata.items() if k not in SKIPPED_KEYS})
        order = iter(ordinals.tolist())

    copied = copy_events(source.path, ordinals, write, progress, source.checkpoints, rewind)
    if copied != len(ordinals):
        raise UsageError(f"{source.path}: changed while exporting ({copied:,} of {len(ordinals):,} events found)")
    check_unchanged(source)
    for what, n in writer.skipped.items():
        skipped[what] = skipped.get(what, 0) + n
