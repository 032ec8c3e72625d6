"""Export a time range (and a set of tracks) as a Chrome-trace JSON that Perfetto and vtui open.

Every event that overlaps the range is copied byte for byte from the source file: slices (both
B and E of a pair, both ends of an async pair), instants, counter samples (plus each series'
sample just before the range, whose value holds into it), flows whose two ends are both
exported, and the metadata events (names, sort indices) of the exported processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np

from vtui.analysis.base.selection import counter_rows, instant_rows, slice_rows
from vtui.atomic import atomic_write, check_output_folder, check_output_path
from vtui.errors import UsageError
from vtui.io.rawevents import copy_events, sorted_unique
from vtui.io.reader import file_fingerprint
from vtui.store.store import SourceInfo, TraceStore


@dataclass
class ExportPlan:
    """Ordinals to copy, per source file."""

    ordinals: dict[int, np.ndarray]
    counts: dict[str, int] = field(default_factory=dict)
    flow_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # the flows exported

    @property
    def events(self) -> int:
        return sum(len(v) for v in self.ordinals.values())


def plan_export(store: TraceStore, t0: int, t1: int, tracks: np.ndarray | None = None) -> ExportPlan:
    parts: dict[int, list[np.ndarray]] = {}

    def take(source: np.ndarray, ordinal: np.ndarray) -> None:
        keep = ordinal >= 0
        for src in sorted_unique(source[keep]).tolist():
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
    frows = np.flatnonzero((f.src_slice >= 0) & (f.dst_slice >= 0))
    frows = frows[exported[f.src_slice[frows]] & exported[f.dst_slice[frows]]]
    frows = _whole_chains(f, frows)  # bind_id flows ride inside their slices; s/t/f need their events
    v1 = frows[f.src_event[frows] >= 0]
    take(f.source[v1], f.src_event[v1])
    take(f.source[v1], f.dst_event[v1])
    # Metadata of the processes that have exported events.
    used = {int(t) for t in np.concatenate([s.track[rows], i.track[irows], c.track[crows]]).tolist()}
    processes = {(store.tracks[t].source, store.tracks[t].pid) for t in used}
    meta = [(src, ordinal) for src, ordinal, pid in store.metadata_refs if (src, pid) in processes]
    if meta:
        take(np.array([m[0] for m in meta]), np.array([m[1] for m in meta]))
    ordinals = {src: sorted_unique(np.concatenate(p)) for src, p in parts.items()}
    counts = {"slices": len(rows), "instants": len(irows), "counter_samples": len(crows), "flows": len(frows),
              "metadata": len(meta)}
    return ExportPlan(ordinals=ordinals, counts=counts, flow_rows=frows)


def _whole_chains(f, frows: np.ndarray) -> np.ndarray:
    """Keep an s/t/f edge only when every edge before it in its chain (back to the ``s``) is kept
    too: a ``t`` → ``f`` edge without its ``s`` would load as a flow with no start."""
    prev = _previous_edges(f)
    kept = set(frows.tolist())
    out = []
    for k in frows.tolist():
        edge, ok, seen = k, True, {k}
        while (before := int(prev[edge])) >= 0 and before not in seen:  # (seen: a cycle ends the walk)
            if before not in kept:
                ok = False
                break
            seen.add(before)
            edge = before
        if ok:
            out.append(k)
    return np.array(out, dtype=np.int64)


def _previous_edges(f) -> np.ndarray:
    """Per flow edge, the edge whose end event starts it (same source; the last such edge), or -1:
    the edge starts its chain. One sort over all edges, no Python loop over them."""
    def key(source: np.ndarray, event: np.ndarray) -> np.ndarray:
        return (source.astype(np.int64) << 32) | event.astype(np.int64)

    prev = np.full(len(f.src_event), -1, dtype=np.int64)
    ends = np.flatnonzero(f.dst_event >= 0)
    order = np.argsort(key(f.source[ends], f.dst_event[ends]), kind="stable")
    end_edges = ends[order]
    end_keys = key(f.source[end_edges], f.dst_event[end_edges])
    starts = np.flatnonzero(f.src_event >= 0)
    wanted = key(f.source[starts], f.src_event[starts])
    at = np.searchsorted(end_keys, wanted, side="right") - 1  # the last edge with that end, as a dict keeps
    hit = at >= 0
    hit[hit] = end_keys[at[hit]] == wanted[hit]
    prev[starts[hit]] = end_edges[at[hit]]
    return prev


SKIPPED_KEYS = ("traceEvents", "systemTraceEvents")  # event data, not metadata: never copied whole


def prepare_export(store: TraceStore, out: str | Path, t0: int, t1: int, tracks: np.ndarray | None,
                   overwrite: bool) -> tuple[Path, ExportPlan, list[int], bool]:
    """What every export checks first: the output path (a folder for several sources), the plan of
    [t0, t1] on ``tracks`` (never empty), and each source still the file that was loaded.
    Returns (path, plan, the sources in it, whether there are several)."""
    inputs = [src.path for src in store.sources]
    several = len(store.sources) > 1
    path = check_output_folder(out, inputs, overwrite) if several else check_output_path(out, inputs, overwrite)
    plan = plan_export(store, t0, t1, tracks)
    if not plan.events:
        raise UsageError("nothing to export: no event of the chosen tracks lies in that range")
    sources = sorted(plan.ordinals)
    for src in sources:
        check_unchanged(store.sources[src])
    return path, plan, sources, several


def export_range(store: TraceStore, out: str | Path, t0: int, t1: int, tracks: np.ndarray | None = None,
                 overwrite: bool = False, progress: Callable[[float], None] | None = None) -> ExportPlan:
    """Write the events of [t0, t1] on ``tracks`` to ``out`` (temp file + rename; never over an input).

    The events are copied from the source files, so each must still be the file that was
    loaded (size, mtime and a hash of its ends): a changed source is refused in one line.
    """
    path, plan, sources, several = prepare_export(store, out, t0, t1, tracks, overwrite)
    if several:  # one file per rank, each exactly as written, so ranks with equal pids stay apart
        path.mkdir(exist_ok=True)
    names = rank_file_names([store.sources[src].path for src in sources])
    for k, src in enumerate(sources):
        def report(frac: float, k: int = k) -> None:
            if progress:
                progress((k + frac) / len(sources))

        source = store.sources[src]
        target = path / names[k] if several else path
        atomic_write(target, partial(_write_trace, source, plan.ordinals[src], report))
    return plan


def rank_file_names(paths: list[str]) -> list[str]:
    """One distinct output name per rank file, written as plain JSON: ``r.json.gz`` -> ``r.json``,
    ``r.sqlite`` (or ``r.pftrace``, ``r.perfetto-trace``) -> ``r.json``. Ranks that would share a name (``r.json`` and ``r.json.gz`` in
    one folder) keep their full source name before ``.json``, so no rank overwrites another."""
    def plain(path: str) -> str:
        name = Path(path).name.removesuffix(".gz")
        for other in (".sqlite", ".pftrace", ".perfetto-trace"):
            if name.endswith(other):
                return name.removesuffix(other) + ".json"
        return name

    names = [plain(p) for p in paths]
    taken = {n: names.count(n) for n in names}
    out: list[str] = []
    for path, name in zip(paths, names):
        if taken[name] > 1:
            stem = Path(path).name.replace(".", "_")
            name = f"{stem}.json"
        while name in out:  # still equal (only by odd names): number them
            name = f"{Path(name).stem}_{len(out)}.json"
        out.append(name)
    return out


def check_unchanged(source: SourceInfo) -> None:
    """A UsageError when ``source``'s file is no longer the one that was loaded."""
    if not source.fingerprint:
        return  # a store built without one (in memory, in tests): nothing to compare
    try:
        now = list(file_fingerprint(source.path))
    except OSError as exc:
        raise UsageError(f"{source.path}: cannot read the source again ({exc.strerror or exc}); "
                         "export copies events from it") from None
    if now != list(source.fingerprint):
        old = list(source.fingerprint)
        what = "size" if now[0] != old[0] else "content" if now[2] != old[2] else "mtime" if now[1] != old[1] else \
            "written or replaced: its ctime or inode differ"
        raise UsageError(f"{source.path}: changed since it was loaded ({what}); export copies events from the file, "
                         "so load it again first")


def _write_trace(source: SourceInfo, ordinals: np.ndarray, progress: Callable[[float], None],
                 fh: BinaryIO) -> None:
    fh.write(b'{"traceEvents":[\n')
    events_at = fh.tell()
    first = [True]

    def write(raw: msgspec.Raw) -> None:
        if not first[0]:
            fh.write(b",\n")
        first[0] = False
        fh.write(raw)

    def rewind() -> None:  # the read from a checkpoint fell short: the full scan starts over
        fh.seek(events_at)
        fh.truncate()
        first[0] = True

    copied = copy_events(source.path, ordinals, write, progress, source.checkpoints, rewind)
    if copied != len(ordinals):  # the file no longer holds those events (changed under us)
        raise UsageError(f"{source.path}: changed while exporting ({copied:,} of {len(ordinals):,} events found)")
    check_unchanged(source)  # and not rewritten in place meanwhile
    fh.write(b"\n]")
    for key, value in source.metadata.items():
        if key not in SKIPPED_KEYS:
            fh.write(b",\n" + msgspec.json.encode(key) + b":" + msgspec.json.encode(value))
    fh.write(b"}\n")
