"""`vtui info`: what a load produced, as its output Struct (`info_out`) and as text."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from vtui.analysis.health.report import analyse_health
from vtui.present import schema
from vtui.present.health_json import health_lines, health_out
from vtui.present.schema import VERSIONS, Info, Source, TrackInfo
from vtui.safe_text import safe_field, safe_fields
from vtui.store.store import TraceStore
from vtui.store.tracks import show_id
from vtui.store.tracktable import KINDS
from vtui.units import format_duration


class DecodeChunks(msgspec.Struct):
    """How the event chunks were read: ``compiled_helper`` of ``chunks`` by the optional C helper
    (vtui/io/_fastcols.c), the rest by the pure-Python path (same columns)."""

    chunks: int
    compiled_helper: int


def _decode_chunks(store: TraceStore) -> DecodeChunks:
    got = [s.decode_chunks for s in store.sources if len(s.decode_chunks) == 2]
    return DecodeChunks(chunks=sum(c[0] for c in got), compiled_helper=sum(c[1] for c in got))


def info_out(store: TraceStore) -> Info:
    """`vtui info --json`'s report."""
    d = _summary(store)
    d["sources"] = [Source(**s) for s in d["sources"]]
    d["decode_chunks"] = schema.DecodeChunks(**d["decode_chunks"])
    d["origin_us"] = float(d["origin_us"])  # a float in the schema, whole or not
    return Info(schema_version=VERSIONS["info"], **d, health=health_out(analyse_health(store)),
                track_list=_track_list(store))


def _summary(store: TraceStore) -> dict[str, Any]:
    return {
        "sources": [
            {"path": s.path, "label": s.label, "form": s.form, "repaired": s.repaired, "events": s.events,
             "by_phase": dict(sorted(s.by_phase.items())),
             "metadata_keys": sorted(s.metadata)}
            for s in store.sources
        ],
        "form": store.sources[0].form if len(store.sources) == 1 else "folder",
        "repaired": store.repaired,
        "events": store.event_count,
        "by_phase": dict(sorted(store.by_phase.items())),
        "tracks": len(store.tracks),
        "slices": len(store.slices),
        "instants": len(store.instants),
        "counter_samples": len(store.counters),
        "flows": len(store.flows),
        "span_ns": int(store.span_ns),
        "origin_us": store.origin_us,
        "overlapping_slices": store.overlapping_slices,
        "nesting_tolerance_ns": store.nesting_tolerance_ns,
        "decode_chunks": msgspec.structs.asdict(_decode_chunks(store)),
        "warnings": list(store.warnings),
    }


def _track_list(store: TraceStore) -> list[TrackInfo]:
    """One entry per track, from the columns (no Track objects: a million tracks is a million rows)."""
    t = store.tracks
    pcode, ptitles = t.process_titles()
    tcode, ttitles = t.titles()
    ids = [_jsonable(v) for v in t.ids]
    c = {n: t.columns[n].tolist() for n in ("kind", "pid", "tid", "slice_count", "instant_count", "counter_count",
                                             "lanes", "overlapping")}
    return [
        TrackInfo(id=k, kind=KINDS[kind], pid=ids[pid], tid=ids[tid], process=ptitles[p], name=ttitles[n], slices=sl,
                  instants=ins, counter_samples=cs, lanes=ln, overlapping=ov)
        for k, kind, pid, tid, p, n, sl, ins, cs, ln, ov in zip(
            range(len(t)), c["kind"], c["pid"], c["tid"], pcode.tolist(), tcode.tolist(), c["slice_count"],
            c["instant_count"], c["counter_count"], c["lanes"], c["overlapping"])
    ]


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (int, str)) or value is None else str(value)


TITLE_WIDTH = 80  # characters of a process / thread name in the track list


def info_text(store: TraceStore) -> str:
    d = _summary(store)
    lines = []
    for s in d["sources"]:
        state = "repaired" if s["repaired"] else "intact"
        lines.append(f"{safe_field(s['path'], 1000)}: {s['form']} form, {state}, {s['events']:,} events")
    lines.append("events by phase: " + ", ".join(f"{safe_field(ph, 20)} {n:,}" for ph, n in d["by_phase"].items()))
    lines.append(
        f"{d['slices']:,} slices, {d['instants']:,} instants, {d['counter_samples']:,} counter samples, "
        f"{d['flows']:,} flows over {format_duration(d['span_ns'])}"
    )
    lines.append(f"{d['overlapping_slices']:,} slices partly overlap a neighbour (on extra lanes)")
    if d["nesting_tolerance_ns"]:
        lines.append(f"timestamps hold {format_duration(d['nesting_tolerance_ns'])} steps (µs values of 2^43 and more "
                     "written as doubles, to 0.1 µs at best): a child may pass its parent's end by one step and still nest")
    else:
        lines.append("timestamps exact to the ns (read from their decimal text)")
    chunks = d["decode_chunks"]
    if chunks["chunks"]:
        share = 100.0 * chunks["compiled_helper"] / chunks["chunks"]
        lines.append(f"{chunks['chunks']:,} event chunks decoded, {chunks['compiled_helper']:,} ({share:.0f}%) "
                     "through the compiled helper")
    lines.append(f"{d['tracks']} tracks:")
    lines.extend(_track_lines(store))
    if d["warnings"]:
        lines.append(f"{len(d['warnings'])} warnings:")
        lines.extend(f"  - {safe_field(w, 2000)}" for w in d["warnings"])
    else:
        lines.append("no warnings")
    lines.extend(health_lines(analyse_health(store)))
    return "\n".join(lines)


def _track_lines(store: TraceStore) -> list[str]:
    """A line per track, from the columns; each distinct title and id is made safe once."""
    t = store.tracks
    pcode, ptitles = t.process_titles()
    tcode, ttitles = t.titles()
    processes = safe_fields(ptitles, TITLE_WIDTH)
    titles = safe_fields(ttitles, TITLE_WIDTH)
    ids = safe_fields([show_id(v) for v in t.ids], 40)
    width = max((len(processes[p]) for p in np.unique(pcode).tolist()), default=0)
    c = {n: t.columns[n].tolist() for n in ("kind", "pid", "tid", "slice_count", "instant_count", "counter_count")}
    lines = []
    for kind, p, n, pid, tid, sl, ins, cs in zip(c["kind"], pcode.tolist(), tcode.tolist(), c["pid"], c["tid"],
                                                 c["slice_count"], c["instant_count"], c["counter_count"]):
        counts = f"{sl:>9,} slices"
        if ins:
            counts += f" {ins:,} instants"
        if cs:
            counts += f" {cs:,} samples"
        lines.append(f"  {KINDS[kind]:<8} {processes[p]:<{width}}  {titles[n]} (pid {ids[pid]}, tid {ids[tid]}) {counts}")
    return lines
