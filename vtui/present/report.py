"""`vtui info`: what a load produced, as plain data and as text."""

from __future__ import annotations

from typing import Any

import msgspec

from vtui.fmt import format_duration
from vtui.safe_text import safe_field
from vtui.store.store import TraceStore
from vtui.store.tracks import show_id


class DecodeChunks(msgspec.Struct):
    """How the event chunks were read: ``compiled_helper`` of ``chunks`` by the optional C helper
    (vtui/io/_fastcols.c), the rest by the pure-Python path (same columns)."""

    chunks: int
    compiled_helper: int


def _decode_chunks(store: TraceStore) -> DecodeChunks:
    got = [s.decode_chunks for s in store.sources if len(s.decode_chunks) == 2]
    return DecodeChunks(chunks=sum(c[0] for c in got), compiled_helper=sum(c[1] for c in got))


def info_dict(store: TraceStore) -> dict[str, Any]:
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
        "track_list": [
            {"id": t.id, "kind": t.kind, "pid": _jsonable(t.pid), "tid": _jsonable(t.tid), "process": t.process_title,
             "name": t.title, "slices": t.slice_count, "instants": t.instant_count, "counter_samples": t.counter_count,
             "lanes": t.lanes, "overlapping": t.overlapping}
            for t in store.tracks
        ],
    }


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (int, str)) or value is None else str(value)


TITLE_WIDTH = 80  # characters of a process / thread name in the track list


def info_text(store: TraceStore) -> str:
    d = info_dict(store)
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
    width = max((len(safe_field(t.process_title, TITLE_WIDTH)) for t in store.tracks), default=0)
    for t in store.tracks:
        counts = f"{t.slice_count:>9,} slices"
        if t.instant_count:
            counts += f" {t.instant_count:,} instants"
        if t.counter_count:
            counts += f" {t.counter_count:,} samples"
        process, title = safe_field(t.process_title, TITLE_WIDTH), safe_field(t.title, TITLE_WIDTH)
        lines.append(f"  {t.kind:<8} {process:<{width}}  {title} (pid {safe_field(show_id(t.pid), 40)}, tid {safe_field(show_id(t.tid), 40)}) {counts}")
    if d["warnings"]:
        lines.append(f"{len(d['warnings'])} warnings:")
        lines.extend(f"  - {safe_field(w, 2000)}" for w in d["warnings"])
    else:
        lines.append("no warnings")
    return "\n".join(lines)
