"""Build a TraceStore from the decoded columns of one or more source files."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
import numpy as np

from vtui.io.events import PH_CODE, UNKNOWN_PH
from vtui.io.exactts import LARGE_US, NO_NS
from vtui.store.containment import nesting_tolerance_ns
from vtui.store.flows import FlowChains, FlowEvents, build_flows, flow_chains
from vtui.store.grouping import group_key
from vtui.store.index import IntervalIndex
from vtui.store.merge import Merged, merge_sources
from vtui.store.nesting import nest
from vtui.store.pairing import pair
from vtui.store.parts import SourcePart
from vtui.store.soon import soon
from vtui.store.sorting import order_by
from vtui.store.store import SourceInfo, TraceStore
from vtui.store.tables import CounterTable, InstantTable, SliceTable
from vtui.store.trackset import TrackSet
from vtui.store.tracktable import TrackTable

X, B, E = PH_CODE["X"], PH_CODE["B"], PH_CODE["E"]
ASYNC_B, ASYNC_N, ASYNC_E = PH_CODE["b"], PH_CODE["n"], PH_CODE["e"]
LEGACY = [PH_CODE[p] for p in "STpF"]
INSTANT = [PH_CODE[p] for p in "iIR"]
KEPT_POINTS = [PH_CODE[p] for p in "PNODVvc()"]  # kept as points, not interpreted
COUNTER, META = PH_CODE["C"], PH_CODE["M"]
FLOW = {PH_CODE["s"]: 0, PH_CODE["t"]: 1, PH_CODE["f"]: 2}


@dataclass
class _Slices:
    """Slices before sorting: parallel lists of arrays, concatenated at the end."""

    parts: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def add(self, **cols: np.ndarray) -> None:
        for k, v in cols.items():
            self.parts.setdefault(k, []).append(np.asarray(v))

    def pop(self, key: str, dtype) -> np.ndarray:
        """One column, concatenated; its parts are dropped (the nesting after is the build's
        memory peak: each page of it is faulted in fresh)."""
        parts = [p for p in self.parts.pop(key, []) if len(p)]
        if len(parts) == 1:  # one kind of slices (a Kineto trace: all X): no copy
            return parts[0].astype(dtype, copy=False)
        return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


def build_store(parts: list[SourcePart], args_blob=None, progress: Callable[[float], None] | None = None) -> TraceStore:
    """``args_blob``: the args file all parts wrote to (None: each part's in-memory blob).
    ``progress`` gets the fraction done at a few milestones (the build of a big trace takes seconds)."""
    report = progress or (lambda _fraction: None)
    sources = [SourceInfo(path=p.path, label=p.label, form=p.form, repaired=p.repaired, events=len(p.cols()),
                          by_phase=p.cols().by_phase, metadata=p.metadata, warnings=p.warnings,
                          fingerprint=p.fingerprint, decode_chunks=list(p.cols().chunks)) for p in parts]
    m = merge_sources(parts, args_blob)
    warnings: list[str] = []
    for part in parts:
        prefix = f"{part.label}: " if len(parts) > 1 else ""
        warnings.extend(prefix + w for w in part.warnings)

    report(0.1)
    ts_ns, dur_ns, valid, origin_us, bad_ts, far_ts = _times(m)
    if bad_ts or far_ts:
        far = f" ({far_ts:,} of them more than 126 years away from most others)" if far_ts else ""
        warnings.append(f"{bad_ts + far_ts:,} events without a usable ts were skipped{far}")
    ph = m.ph
    # Masked maxima (no gathered copies of two 40 MB columns).
    trace_end = int(max(np.max(ts_ns + dur_ns, where=valid, initial=0), np.max(ts_ns, where=valid, initial=0)))
    tolerance = _nesting_tolerance(m, valid, origin_us, trace_end)

    tracks = TrackSet(m)
    tracks.labels = [p.label for p in parts]
    meta_rows = np.flatnonzero(ph == META)
    meta_events = tracks.read_metadata(meta_rows)
    meta_refs = [(int(m.source[r]), int(m.ordinal[r]), m.thread_keys[int(m.thread[r])][1]) for r in meta_rows.tolist()]
    if tracks.metadata_conflicts:
        warnings.append(f"{tracks.metadata_conflicts:,} process/thread names or sort indices were given again "
                        "with a different value (the last one wins)")
    sl = _Slices()

    # X: complete slices.
    rows = np.flatnonzero((ph == X) & valid)
    raw_dur = m.dur_ns[rows]  # same test as _times: missing, negative or past ~126 years is not usable
    bad_dur = (raw_dur < 0) | (raw_dur >= _WINDOW_NS)
    del raw_dur
    if bad_dur.any():
        warnings.append(f"{int(bad_dur.sum()):,} X events had a missing, negative or huge dur (shown as 0)")
    sl.add(nest=np.full(len(rows), -1), row=rows, end_row=np.full(len(rows), -1), start=ts_ns[rows], end=ts_ns[rows] + dur_ns[rows],
           track=tracks.thread_tracks(m.thread[rows]))
    del dur_ns  # X slices only: let the nesting reuse its memory

    # B/E: paired per thread.
    rows = np.flatnonzero(((ph == B) | (ph == E)) & valid)
    p = pair(rows, m.thread[rows], ts_ns[rows], ph[rows] == B, ph[rows] == E, m.name[rows], m.named[m.name[rows]], trace_end,
             cats=m.cat[rows], has_cat=m.named[m.cat[rows]])
    if p.unmatched_ends:
        warnings.append(f"{p.unmatched_ends:,} E events had no open B on their thread (ignored)")
    if p.unclosed_begins:
        warnings.append(f"{p.unclosed_begins:,} B events were never closed (they run to the trace end)")
    begin = np.array(p.begin_rows, dtype=np.int64)
    sl.add(nest=np.full(len(begin), -1), row=begin, end_row=np.array(p.end_rows, dtype=np.int64), start=ts_ns[begin],
           end=np.maximum(np.array(p.end_ns, dtype=np.int64), ts_ns[begin]), track=tracks.thread_tracks(m.thread[begin]))
    end_rows = {b: e for b, e in zip(p.begin_rows, p.end_rows) if e >= 0 and m.args_len[e] > 0}

    # Async: nestable b/n/e and legacy S/T/p/F, paired per (process, cat, id).
    inst_rows: list[np.ndarray] = []
    inst_tracks: list[np.ndarray] = []
    for begin_code, end_code, point_codes, family in ((ASYNC_B, ASYNC_E, [ASYNC_N], 0), (LEGACY[0], LEGACY[3], LEGACY[1:3], 1)):
        is_family = np.isin(ph, [begin_code, end_code, *point_codes]) & valid
        rows = np.flatnonzero(is_family)
        if not len(rows):
            continue
        groups = tracks.async_groups(rows, family)
        p = pair(rows, groups, ts_ns[rows], ph[rows] == begin_code, ph[rows] == end_code, m.name[rows], m.named[m.name[rows]],
                 trace_end, strict_names=family == 0)
        label = "b/e" if family == 0 else "S/F"
        if p.unmatched_ends:
            warnings.append(f"{p.unmatched_ends:,} async {label} ends had no open begin (ignored)")
        if p.unclosed_begins:
            warnings.append(f"{p.unclosed_begins:,} async {label} begins were never ended (they run to the trace end)")
        begin = np.array(p.begin_rows, dtype=np.int64)
        roots = np.array(p.root_rows, dtype=np.int64)
        # Async slices nest only within their own id (Catapult: one tree per id), though one
        # track may draw several ids.
        nest_key = groups[np.searchsorted(rows, begin)] * 2 + family if len(begin) else np.zeros(0, dtype=np.int64)
        sl.add(nest=nest_key, row=begin, end_row=np.array(p.end_rows, dtype=np.int64), start=ts_ns[begin],
               end=np.maximum(np.array(p.end_ns, dtype=np.int64), ts_ns[begin]),
               track=tracks.async_tracks(m.thread[roots], m.name[roots]))
        end_rows.update({b: e for b, e in zip(p.begin_rows, p.end_rows) if e >= 0 and m.args_len[e] > 0})
        points = rows[np.isin(ph[rows], point_codes)]
        roots = np.array([p.instant_roots.get(r, r) for r in points.tolist()], dtype=np.int64)
        inst_rows.append(points)
        inst_tracks.append(tracks.async_tracks(m.thread[roots], m.name[roots]))

    # Instants by scope, and point events kept as they are.
    rows = np.flatnonzero(np.isin(ph, INSTANT + KEPT_POINTS) & valid)
    inst_rows.append(rows)
    inst_tracks.append(tracks.instant_tracks(m.thread[rows], np.where(np.isin(ph[rows], INSTANT), m.scope[rows], 0)))

    counters = _counters(m, np.flatnonzero((ph == COUNTER) & valid), ts_ns, tracks, warnings)

    unknown = [k for k in m.by_phase if _unknown_phase(k)]
    n_unknown = sum(m.by_phase[k] for k in unknown)
    if n_unknown:
        warnings.append(f"{n_unknown:,} events with unknown phases were skipped: " + ", ".join(sorted(repr(k) for k in unknown)))

    # Tracks get their display order now, before slices are sorted by track.
    remap = tracks.finish()
    # The flow events and their chains need neither the slices nor the tracks' stats: on a big
    # trace (FLOW_THREAD_MIN events) a thread finds them while the slices are sorted and
    # nested (numpy releases the GIL). With the tree thread of nest(), 1 GB trace on 2 cores: build
    # 1.31 -> 1.08 s wall for +0.12 s CPU.
    pending_flows = soon(_flow_chains, len(m.ph) >= FLOW_THREAD_MIN, m, ts_ns, valid, tracks, remap)
    slice_row = sl.pop("row", np.int64)
    end_row = sl.pop("end_row", np.int64)
    slice_track = remap[sl.pop("track", np.int32)] if len(slice_row) else np.zeros(0, dtype=np.int32)
    start, end = sl.pop("start", np.int64), sl.pop("end", np.int64)
    order = order_by(slice_track, start, (start - end, slice_row))
    slice_row, slice_track, start, end = slice_row[order], slice_track[order], start[order], end[order]
    end_row = end_row[order]
    nest_key = sl.pop("nest", np.int64)[order]
    del order
    bounds = np.searchsorted(slice_track, np.arange(len(tracks.tracks) + 1))
    report(0.4)
    nested = nest(start, end, bounds, tolerance, slice_track, nest_key)
    report(0.65)
    final = order_by(slice_track, nested.lane)
    inverse = np.empty_like(final)
    inverse[final] = np.arange(len(final))
    parent = nested.parent[final]
    parent = np.where(parent >= 0, inverse[np.maximum(parent, 0)], -1).astype(np.int32)
    slice_row, end_row = slice_row[final], end_row[final]
    slices = SliceTable(
        start_ns=start[final], end_ns=end[final], track=slice_track[final].astype(np.int32),
        depth=nested.depth[final], lane=nested.lane[final], parent=parent,
        name_id=m.name[slice_row], cat_id=m.cat[slice_row], ordinal=m.ordinal[slice_row],
        end_ordinal=np.where(end_row >= 0, m.ordinal[np.maximum(end_row, 0)], -1).astype(np.int32),
        source=m.source[slice_row], args_off=m.args_off[slice_row], args_len=m.args_len[slice_row],
    )
    tracks.set_slice_stats(slices, nested.nested_lanes, nested.overlapping[final])
    extra = {}
    if end_rows:
        pos = np.argsort(slice_row)
        for b, e in end_rows.items():
            row = int(pos[np.searchsorted(slice_row[pos], b)])
            extra[row] = (int(m.args_off[e]), int(m.args_len[e]))

    inst_r = np.concatenate(inst_rows) if inst_rows else np.zeros(0, dtype=np.int64)
    inst_t = remap[np.concatenate(inst_tracks)] if inst_rows else np.zeros(0, dtype=np.int32)
    iorder = order_by(inst_t, ts_ns[inst_r], (inst_r,))
    inst_r, inst_t = inst_r[iorder], inst_t[iorder]
    instants = InstantTable(
        ts_ns=ts_ns[inst_r], track=inst_t.astype(np.int32), ph=ph[inst_r], name_id=m.name[inst_r],
        cat_id=m.cat[inst_r], ordinal=m.ordinal[inst_r], source=m.source[inst_r],
        args_off=m.args_off[inst_r], args_len=m.args_len[inst_r],
    )
    counters.track = remap[counters.track].astype(np.int32) if len(counters) else counters.track
    corder = order_by(counters.track, counters.ts_ns)
    counters = counters.take(corder)
    tracks.set_point_stats(instants, counters)

    index = IntervalIndex(slices, len(tracks.tracks))
    report(0.8)
    flow_events, chains = pending_flows()
    flows, flow_stats = build_flows(slices, index, flow_events, _flow_v2(m, slice_row, ts_ns), m.args_blob, chains)
    # build_flows gives the merged rows of the s/t/f events; the store keeps their file ordinals.
    for column in (flows.src_event, flows.dst_event):
        column[:] = np.where(column >= 0, m.ordinal[np.maximum(column, 0)], -1)
    if flow_stats["flow_ends_without_start"]:
        warnings.append(f"{flow_stats['flow_ends_without_start']:,} flow ends had no start (launched before the trace?)")
    if flow_stats["flow_starts_without_end"]:
        warnings.append(f"{flow_stats['flow_starts_without_end']:,} flow starts had no end")
    if flow_stats["flows_rebound_by_correlation"]:
        warnings.append(f"{flow_stats['flows_rebound_by_correlation']:,} flows joined slices with different correlation "
                        "ids (moved to the slice at the same point with the matching id)")
    if flow_stats["flows_correlation_disagree"]:
        warnings.append(f"{flow_stats['flows_correlation_disagree']:,} flows join slices with different correlation "
                        "ids (kept as the flow events say: no slice there has the matching id)")
    overl = sum(t.overlapping for t in tracks.tracks if t.kind in ("thread", "gpu"))
    if overl:
        warnings.append(f"{overl:,} slices partly overlap a neighbour (shown on extra lanes)")

    store = TraceStore(
        sources=sources,
        strings=m.strings, tracks=TrackTable.from_tracks(tracks.tracks), slices=slices, instants=instants, counters=counters, flows=flows,
        args_blob=m.args_blob, origin_us=origin_us, span_ns=trace_end, warnings=warnings,
        metadata_events=meta_events, extra_end_args=extra, metadata_refs=meta_refs, nesting_tolerance_ns=tolerance,
    )
    store.__dict__["index"] = index  # already built; skip the lazy build
    return store


def _unknown_phase(ph: str) -> bool:
    return not (isinstance(ph, str) and ph and ph[0] in PH_CODE)


_INT64_MAX = int(np.iinfo(np.int64).max)
_WINDOW_NS = 4 * 10**18  # ts_ns relative to the origin must stay below this (int64 with room for dur)


def _times(m: Merged) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int, int]:
    """int64 ns relative to the smallest usable timestamp, from the exact ns of the text: the
    origin is subtracted in integers, so every start sits on the file's absolute ns grid. Also a
    validity mask for ts and counts of events without a usable ts and of events too far from the
    rest.

    When the timestamps span more than int64 ns can hold (~126 years), the origin is the start of
    the ~126-year window that holds the most events, and the events outside it are rejected:
    one event at ts -1e300 or INT64_MIN must not push every other event out of range.
    """
    not_meta = (m.ph != META) & (m.ph != UNKNOWN_PH)
    finite = np.isfinite(m.ts) & not_meta  # a number (its ns may be beyond int64)
    has_ns = m.ts_ns != NO_NS
    far = finite & ~has_ns
    usable = finite & has_ns
    if usable.any() and int(m.ts_ns[usable].max()) - int(m.ts_ns[usable].min()) >= _WINDOW_NS:
        ts = np.sort(m.ts_ns[usable])
        reach = np.minimum(ts, _INT64_MAX - _WINDOW_NS) + _WINDOW_NS  # (a window from near the top ends at it)
        held = np.searchsorted(ts, reach, side="left") - np.arange(len(ts))
        low = int(ts[int(np.argmax(held))])  # the first of the fullest windows
        far |= usable & ~((m.ts_ns >= low) & (m.ts_ns <= min(low + _WINDOW_NS - 1, _INT64_MAX)))
        usable &= ~far
    origin_ns = int(m.ts_ns[usable].min()) if usable.any() else 0
    ts_ns = np.subtract(m.ts_ns, origin_ns, where=usable, out=np.zeros(len(m.ts_ns), dtype=np.int64))
    dur_ns = m.dur_ns.copy()
    dur_ns[(dur_ns < 0) | (dur_ns >= _WINDOW_NS)] = 0  # NO_NS too
    n_far = int(far.sum())
    bad_ts = int((not_meta & ~usable).sum()) - n_far
    return ts_ns, dur_ns, usable, origin_ns / 1000.0, bad_ts, n_far


def _nesting_tolerance(m: Merged, valid: np.ndarray, origin_us: float, span_ns: int) -> int:
    """The nesting tolerance (see ``nesting_tolerance_ns``): only where the file's timestamps
    are doubles coarser than 1 ns, as their values show: values of 2**43 µs and more (a double's
    step there exceeds 1 ns) written with a fraction, but never one finer than 0.1 µs (every one
    a whole 100 ns: "1712195495519695.8", a double near 1.7e15 printed shortest). Text to the ns
    (Kineto's 3 decimals) or whole µs is exact: no tolerance."""
    large = valid & (np.abs(m.ts_ns) >= int(LARGE_US) * 1000)
    if not large.any():
        return 0
    ns = m.ts_ns[large]
    fraction = ns % 1000 != 0
    if not fraction.any() or (ns[fraction] % 100 != 0).any():
        return 0
    return nesting_tolerance_ns(origin_us, span_ns)


def _counters(m: Merged, rows: np.ndarray, ts_ns: np.ndarray, tracks: TrackSet, warnings: list[str]) -> CounterTable:
    ts_l: list[int] = []
    track_l: list[int] = []
    val_l: list[float] = []
    row_l: list[int] = []
    skipped = 0
    decode = msgspec.json.decode
    for r in rows.tolist():
        off, ln = int(m.args_off[r]), int(m.args_len[r])
        try:
            args = decode(m.args_blob[off : off + ln]) if ln else {}
        except (msgspec.DecodeError, ValueError, RecursionError):
            args = None
        if not isinstance(args, dict) or not args:
            skipped += 1
            continue
        for key, value in args.items():
            value = counter_value(value)
            if value is None:
                skipped += 1
                continue
            ts_l.append(int(ts_ns[r]))
            track_l.append(tracks.counter_track(int(m.thread[r]), int(m.name[r]), int(m.id_kind[r]), int(m.id_val[r]),
                                                str(key)))
            val_l.append(value)
            row_l.append(r)
    if skipped:
        warnings.append(f"{skipped:,} counter values were not numbers (or past the float range; skipped)")
    event_rows = np.array(row_l, dtype=np.int64)
    return CounterTable(ts_ns=np.array(ts_l, dtype=np.int64), track=np.array(track_l, dtype=np.int32),
                        value=np.array(val_l, dtype=np.float64), ordinal=m.ordinal[event_rows].astype(np.int32),
                        source=m.source[event_rows].astype(np.int16))


def counter_value(value: object) -> float | None:
    """A counter series' value as Perfetto reads it: a JSON number, or a string ``strtod`` reads
    whole (leading white space, decimal or hex "0x10", inf/nan); None for anything else
    ("1_000", "12 ", true, null, lists)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an int past a double's range (400 digits): that one value is rejected
            return None
    if not isinstance(value, str):
        return None
    text = value.lstrip(" \t\n\v\f\r")
    if not text or "_" in text or text[-1].isspace() or not text.isascii():
        return None
    if _HEX.fullmatch(text):
        return float.fromhex(text)
    if _DECIMAL.fullmatch(text) is None:
        return None
    return float(text)


_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?")
_DECIMAL = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)", re.IGNORECASE)


def _flow_events(m: Merged, ts_ns: np.ndarray, valid: np.ndarray, tracks: TrackSet, remap: np.ndarray) -> FlowEvents:
    codes = np.array(list(FLOW), dtype=np.int8)
    rows = np.flatnonzero(np.isin(m.ph, codes) & valid)
    kind = np.select([m.ph[rows] == c for c in FLOW], list(FLOW.values())).astype(np.int8)
    group = group_key(m.source[rows], m.cat[rows], m.name[rows], m.id_kind[rows])
    return FlowEvents(
        group=group.astype(np.int64), id_val=m.id_val[rows], kind=kind, ts_ns=ts_ns[rows],
        track=remap[tracks.thread_tracks(m.thread[rows], create=False)] if len(rows) else np.zeros(0, dtype=np.int32),
        enclosing=(kind != 2) | m.bp_enclosing[rows], order=rows.astype(np.int64, copy=False), source=m.source[rows],
        name_id=m.name[rows], cat_id=m.cat[rows],
    )


def _flow_chains(m: Merged, ts_ns: np.ndarray, valid: np.ndarray, tracks: TrackSet, remap: np.ndarray
                 ) -> tuple[FlowEvents, FlowChains | None]:
    """The v1 flow events and their chains' edges (None: no events)."""
    events = _flow_events(m, ts_ns, valid, tracks, remap)
    return events, flow_chains(events) if len(events.ts_ns) else None


FLOW_THREAD_MIN = 200_000  # events: below this a thread for the flow chains costs about what it saves


def _flow_v2(m: Merged, slice_row: np.ndarray, ts_ns: np.ndarray) -> list[tuple[int, int, int, bool, bool, int]]:
    if not m.flow_v2:
        return []
    pos = np.argsort(slice_row)
    sorted_rows = slice_row[pos]
    out = []
    for row, key, flow_in, flow_out in m.flow_v2:
        k = int(np.searchsorted(sorted_rows, row))
        if k < len(sorted_rows) and sorted_rows[k] == row:
            out.append((int(pos[k]), key, int(ts_ns[row]), flow_in, flow_out, row))
    return out
