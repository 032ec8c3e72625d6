"""Build a TraceStore from the decoded columns of one or more source files."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
import numpy as np

from vtui.io.events import PH_CODE, UNKNOWN_PH
from vtui.io.exactts import LARGE_US, NO_NS
from vtui.store.build_thread import in_threads, soon
from vtui.store.build_warnings import BuildWarning, warning_if
from vtui.store.containment import nesting_tolerance_ns
from vtui.store.flows import FlowChains, FlowEvents, build_flows, flow_chains
from vtui.store.grouping import group_key
from vtui.store.index import IntervalIndex
from vtui.store.merge import Merged, merge_sources
from vtui.store.nesting import nest
from vtui.store.pairing import pair
from vtui.store.sorting import order_by
from vtui.store.source_part import SourcePart
from vtui.store.store import SourceInfo, TraceStore
from vtui.store.tables import CounterTable, FlowTable, InstantTable, SliceTable
from vtui.store.trackset import TrackSet

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


def build_store(parts: list[SourcePart], args_blob=None, progress: Callable[[float], None] | None = None,
                threads: int = 1) -> TraceStore:
    """``args_blob``: the args file all parts wrote to (None: each part's in-memory blob).
    ``progress`` gets the fraction done at a few milestones (the build of a big trace takes seconds).
    ``threads``: how many threads the nesting may split over (the cores free; the store is the same)."""
    report = progress or (lambda _fraction: None)
    sources = _sources(parts)
    m = merge_sources(parts, args_blob)
    report(0.1)
    ts_ns, dur_ns, valid, origin_us, bad_ts, far_ts, bad_dur, open_x = _times(m, threads)
    found = warning_if("unusable_ts", bad_ts + far_ts, f"{far_ts:,}" if far_ts else "")
    # Masked maxima (no gathered copies of two 40 MB columns).
    trace_end = int(max(np.max(ts_ns + dur_ns, where=valid, initial=0), np.max(ts_ns, where=valid, initial=0)))
    tolerance = _nesting_tolerance(m, valid, origin_us, trace_end)
    tracks = TrackSet(m)
    tracks.labels = [p.label for p in parts]
    meta_events, meta_refs = _metadata(m, tracks)
    found += warning_if("metadata_conflict", tracks.metadata_conflicts)

    sl = _Slices()
    points = _Points()
    _complete_slices(m, ts_ns, dur_ns, valid, trace_end, tracks, sl, threads)
    found += warning_if("bad_dur", bad_dur) + warning_if("open_x", open_x)
    del dur_ns  # X slices only: let the nesting reuse its memory
    end_rows: dict[int, int] = {}
    found += _begin_end_slices(m, ts_ns, valid, trace_end, tracks, sl, end_rows)
    found += _async_slices(m, ts_ns, valid, trace_end, tracks, sl, end_rows, points)
    _instant_points(m, valid, tracks, points)
    counters, not_numbers = _counters(m, np.flatnonzero((m.ph == COUNTER) & valid), ts_ns, tracks)
    found += warning_if("counter_not_number", not_numbers)
    found += _unknown_phases(m)
    # A v1 flow event without an id joins nothing (Perfetto: flow_invalid_id).
    found += warning_if("flow_without_id", int((_flow_rows(m, valid) & (m.id_kind == 0)).sum()))

    # Tracks get their display order now, before slices are sorted by track.
    remap = tracks.finish()
    # The flow events and their chains need neither the slices nor the tracks' stats: on a big
    # trace (FLOW_THREAD_MIN events) a thread finds them while the slices are sorted and
    # nested (numpy releases the GIL). With the tree thread of nest(), 1 GB trace on 2 cores: build
    # 1.31 -> 1.08 s wall for +0.12 s CPU.
    pending_flows = soon(_flow_chains, len(m.ph) >= FLOW_THREAD_MIN, m, ts_ns, valid, tracks, remap)
    slices, slice_row, extra = _slice_table(m, sl, remap, tracks, tolerance, end_rows, report, threads)
    instants = _instant_table(m, ts_ns, points, remap)
    counters = _sorted_counters(counters, remap)
    tracks.set_point_stats(instants, counters)

    index = IntervalIndex(slices, len(tracks))
    report(0.8)
    flows, flow_found = _flows(m, slices, index, pending_flows, slice_row, ts_ns, threads)
    found += flow_found
    found += warning_if("overlapping_slices", tracks.thread_overlaps())

    store = TraceStore(
        sources=sources,
        strings=m.strings, tracks=tracks.table(), slices=slices, instants=instants, counters=counters, flows=flows,
        args_blob=m.args_blob, origin_us=origin_us, span_ns=trace_end,
        warnings=_part_warnings(parts) + [w.text for w in found],
        metadata_events=meta_events, extra_end_args=extra, metadata_refs=meta_refs, nesting_tolerance_ns=tolerance,
    )
    store.set_index(index)  # built already (the flows needed it)
    return store


@dataclass
class _Points:
    """Rows of the instants and kept point events, with their tracks (before the track remap)."""

    rows: list[np.ndarray] = field(default_factory=list)
    tracks: list[np.ndarray] = field(default_factory=list)

    def add(self, rows: np.ndarray, tracks: np.ndarray) -> None:
        self.rows.append(rows)
        self.tracks.append(tracks)


def _sources(parts: list[SourcePart]) -> list[SourceInfo]:
    return [SourceInfo(path=p.path, label=p.label, form=p.form, repaired=p.repaired, events=len(p.cols()),
                       by_phase=p.cols().by_phase, metadata=p.metadata, warnings=p.warnings,
                       fingerprint=p.fingerprint, decode_chunks=list(p.cols().chunks),
                       checkpoints=[list(c) for c in p.cols().checkpoints]) for p in parts]


def _part_warnings(parts: list[SourcePart]) -> list[str]:
    """The readers' warnings, each named by its file when there are several."""
    out: list[str] = []
    for part in parts:
        prefix = f"{part.label}: " if len(parts) > 1 else ""
        out.extend(prefix + w for w in part.warnings)
    return out


def _metadata(m: Merged, tracks: TrackSet) -> tuple[list[dict], list[tuple[int, int, object]]]:
    """M events: names and sort indices go to the tracks; the others are kept. Also every M
    event's (source, ordinal, pid)."""
    rows = np.flatnonzero(m.ph == META)
    events = tracks.read_metadata(rows)
    refs = [(int(m.source[r]), int(m.ordinal[r]), m.thread_keys[int(m.thread[r])][1]) for r in rows.tolist()]
    return events, refs


def _complete_slices(m: Merged, ts_ns: np.ndarray, dur_ns: np.ndarray, valid: np.ndarray, trace_end: int,
                     tracks: TrackSet, sl: _Slices, threads: int = 1) -> None:
    """X events: one slice each (a negative or huge dur is not valid: see ``_times``). One with no
    dur is a call still open when the trace stopped: it runs to the trace end, as a B never closed.
    (Found by rows over ``threads``; the tracks in one pass after, so new ones are made in order.)"""
    def piece(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = np.flatnonzero((m.ph[lo:hi] == X) & valid[lo:hi]) + lo
        start = ts_ns[rows]
        end = np.where(m.dur_ns[rows] == NO_NS, max(trace_end, 0), start + dur_ns[rows])  # (the rest: see _times)
        return rows, start, np.maximum(end, start)

    n = len(m.ph)
    spans = _row_spans(n, threads if n >= TIMES_SPLIT_MIN else 1)
    got = in_threads([lambda lo=lo, hi=hi: piece(lo, hi) for lo, hi in spans], len(spans))
    rows, start, end = got[0] if len(got) == 1 else [np.concatenate(cols) for cols in zip(*got)]
    sl.add(nest=np.full(len(rows), -1), row=rows, end_row=np.full(len(rows), -1), start=start, end=end,
           track=tracks.thread_tracks(m.thread[rows]))


def _begin_end_slices(m: Merged, ts_ns: np.ndarray, valid: np.ndarray, trace_end: int, tracks: TrackSet,
                      sl: _Slices, end_rows: dict[int, int]) -> list[BuildWarning]:
    """B/E events, paired per thread. ``end_rows`` gets begin row -> end row where the E has args."""
    ph = m.ph
    rows = np.flatnonzero(((ph == B) | (ph == E)) & valid)
    p = pair(rows, m.thread[rows], ts_ns[rows], ph[rows] == B, ph[rows] == E, m.name[rows], m.named[m.name[rows]],
             trace_end, cats=m.cat[rows], has_cat=m.named[m.cat[rows]])
    begin = np.array(p.begin_rows, dtype=np.int64)
    sl.add(nest=np.full(len(begin), -1), row=begin, end_row=np.array(p.end_rows, dtype=np.int64), start=ts_ns[begin],
           end=np.maximum(np.array(p.end_ns, dtype=np.int64), ts_ns[begin]), track=tracks.thread_tracks(m.thread[begin]))
    end_rows.update({b: e for b, e in zip(p.begin_rows, p.end_rows) if e >= 0 and m.args_len[e] > 0})
    return warning_if("unmatched_end", p.unmatched_ends) + warning_if("unclosed_begin", p.unclosed_begins)


def _async_slices(m: Merged, ts_ns: np.ndarray, valid: np.ndarray, trace_end: int, tracks: TrackSet, sl: _Slices,
                  end_rows: dict[int, int], points: _Points) -> list[BuildWarning]:
    """Async: nestable b/n/e and legacy S/T/p/F, paired per (process, cat, id); their steps
    (n, T/p) become points on the track of their slice."""
    ph = m.ph
    found: list[BuildWarning] = []
    # Without an id or a pid an async event belongs to nothing: skipped (Perfetto's
    # json_parser_failure; Catapult skips one without an id too).
    with_pid = np.array([key[1] is not None for key in m.thread_keys] or [False])
    anonymous = 0
    for begin_code, end_code, point_codes, family in ((ASYNC_B, ASYNC_E, [ASYNC_N], 0), (LEGACY[0], LEGACY[3], LEGACY[1:3], 1)):
        rows = np.flatnonzero(np.isin(ph, [begin_code, end_code, *point_codes]) & valid)
        keep = (m.id_kind[rows] != 0) & with_pid[m.thread[rows]]
        anonymous += int(len(rows) - keep.sum())
        rows = rows[keep]
        if not len(rows):
            continue
        groups = tracks.async_groups(rows, family)
        p = pair(rows, groups, ts_ns[rows], ph[rows] == begin_code, ph[rows] == end_code, m.name[rows], m.named[m.name[rows]],
                 trace_end, strict_names=family == 0)
        label = "b/e" if family == 0 else "S/F"
        found += warning_if("async_unmatched_end", p.unmatched_ends, label)
        found += warning_if("async_unclosed_begin", p.unclosed_begins, label)
        begin = np.array(p.begin_rows, dtype=np.int64)
        roots = np.array(p.root_rows, dtype=np.int64)
        # Async slices nest only within their own id (Catapult: one tree per id), though one
        # track may draw several ids.
        nest_key = groups[np.searchsorted(rows, begin)] * 2 + family if len(begin) else np.zeros(0, dtype=np.int64)
        sl.add(nest=nest_key, row=begin, end_row=np.array(p.end_rows, dtype=np.int64), start=ts_ns[begin],
               end=np.maximum(np.array(p.end_ns, dtype=np.int64), ts_ns[begin]),
               track=tracks.async_tracks(m.thread[roots], m.name[roots]))
        end_rows.update({b: e for b, e in zip(p.begin_rows, p.end_rows) if e >= 0 and m.args_len[e] > 0})
        steps = rows[np.isin(ph[rows], point_codes)]
        roots = np.array([p.instant_roots.get(r, r) for r in steps.tolist()], dtype=np.int64)
        points.add(steps, tracks.async_tracks(m.thread[roots], m.name[roots]))
    return found + warning_if("async_anonymous", anonymous)


def _instant_points(m: Merged, valid: np.ndarray, tracks: TrackSet, points: _Points) -> None:
    """Instants by scope, and point events kept as they are."""
    rows = np.flatnonzero(np.isin(m.ph, INSTANT + KEPT_POINTS) & valid)
    points.add(rows, tracks.instant_tracks(m.thread[rows], np.where(np.isin(m.ph[rows], INSTANT), m.scope[rows], 0)))


def _unknown_phases(m: Merged) -> list[BuildWarning]:
    unknown = [k for k in m.by_phase if _unknown_phase(k)]
    return warning_if("unknown_phase", sum(m.by_phase[k] for k in unknown), ", ".join(sorted(repr(k) for k in unknown)))


def _slice_table(m: Merged, sl: _Slices, remap: np.ndarray, tracks: TrackSet, tolerance: int,
                 end_rows: dict[int, int], report: Callable[[float], None], threads: int = 1
                 ) -> tuple[SliceTable, np.ndarray, dict[int, tuple[int, int]]]:
    """The slices sorted by track and start, nested into lanes, then ordered by (track, lane);
    also each slice's merged row and the args of the E events of B/E pairs (slice -> args)."""
    slice_row = sl.pop("row", np.int64)
    end_row = sl.pop("end_row", np.int64)
    slice_track = remap[sl.pop("track", np.int32)] if len(slice_row) else np.zeros(0, dtype=np.int32)
    start, end = sl.pop("start", np.int64), sl.pop("end", np.int64)
    order = order_by(slice_track, start, (start - end, slice_row))
    slice_row, slice_track, start, end = _gathers([(a, order) for a in (slice_row, slice_track, start, end)], threads)
    end_row = end_row[order]
    nest_key = sl.pop("nest", np.int64)[order]
    del order
    bounds = np.searchsorted(slice_track, np.arange(len(tracks) + 1))
    report(0.4)
    nested = nest(start, end, bounds, tolerance, slice_track, nest_key, threads)
    report(0.65)
    final = order_by(slice_track, nested.lane)
    inverse = np.empty_like(final)
    inverse[final] = np.arange(len(final))
    parent = nested.parent[final]
    parent = np.where(parent >= 0, inverse[np.maximum(parent, 0)], -1).astype(np.int32)
    # Into the final order: gathers, each on its own (numpy releases the GIL), so split over threads.
    slice_row, end_row, start, end, slice_track, depth, lane = _gathers(
        [(a, final) for a in (slice_row, end_row, start, end, slice_track, nested.depth, nested.lane)], threads)
    name_id, cat_id, ordinal, source, args_off, args_len = _gathers(
        [(a, slice_row) for a in (m.name, m.cat, m.ordinal, m.source, m.args_off, m.args_len)], threads)
    slices = SliceTable(
        start_ns=start, end_ns=end, track=slice_track.astype(np.int32),
        depth=depth, lane=lane, parent=parent,
        name_id=name_id, cat_id=cat_id, ordinal=ordinal,
        end_ordinal=np.where(end_row >= 0, m.ordinal[np.maximum(end_row, 0)], -1).astype(np.int32),
        source=source, args_off=args_off, args_len=args_len,
    )
    tracks.set_slice_stats(slices, nested.nested_lanes, nested.overlapping[final])
    extra = {}
    if end_rows:
        pos = np.argsort(slice_row)
        for b, e in end_rows.items():
            row = int(pos[np.searchsorted(slice_row[pos], b)])
            extra[row] = (int(m.args_off[e]), int(m.args_len[e]))
    return slices, slice_row, extra


def _gathers(pairs: list[tuple[np.ndarray, np.ndarray]], threads: int) -> list[np.ndarray]:
    """``values[rows]`` of each (values, rows) pair, on up to ``threads`` threads (from
    ``GATHER_MIN`` rows: below, a thread costs more than the gather)."""
    big = bool(pairs) and len(pairs[0][1]) >= GATHER_MIN
    return in_threads([lambda v=values, r=rows: v[r] for values, rows in pairs], threads if big else 1)


GATHER_MIN = 200_000


def _instant_table(m: Merged, ts_ns: np.ndarray, points: _Points, remap: np.ndarray) -> InstantTable:
    """The points sorted by (track, ts, row)."""
    inst_r = np.concatenate(points.rows) if points.rows else np.zeros(0, dtype=np.int64)
    inst_t = remap[np.concatenate(points.tracks)] if points.rows else np.zeros(0, dtype=np.int32)
    iorder = order_by(inst_t, ts_ns[inst_r], (inst_r,))
    inst_r, inst_t = inst_r[iorder], inst_t[iorder]
    return InstantTable(
        ts_ns=ts_ns[inst_r], track=inst_t.astype(np.int32), ph=m.ph[inst_r], name_id=m.name[inst_r],
        cat_id=m.cat[inst_r], ordinal=m.ordinal[inst_r], source=m.source[inst_r],
        args_off=m.args_off[inst_r], args_len=m.args_len[inst_r],
    )


def _sorted_counters(counters: CounterTable, remap: np.ndarray) -> CounterTable:
    """The counter values on their final tracks, sorted by (track, ts)."""
    counters.track = remap[counters.track].astype(np.int32) if len(counters) else counters.track
    return counters.take(order_by(counters.track, counters.ts_ns))


def _flows(m: Merged, slices: SliceTable, index: IntervalIndex, pending_flows: Callable, slice_row: np.ndarray,
           ts_ns: np.ndarray, threads: int = 1) -> tuple[FlowTable, list[BuildWarning]]:
    """The flow arrows between slices, from the v1 events (found on a thread meanwhile) and the v2 fields."""
    flow_events, chains = pending_flows()
    flows, stats = build_flows(slices, index, flow_events, _flow_v2(m, slice_row, ts_ns), m.args_blob, chains, threads)
    # build_flows gives the merged rows of the s/t/f events; the store keeps their file ordinals.
    for column in (flows.src_event, flows.dst_event):
        column[:] = np.where(column >= 0, m.ordinal[np.maximum(column, 0)], -1)
    found = warning_if("flow_end_without_start", stats["flow_ends_without_start"])
    found += warning_if("flow_end_after_end", stats["flow_ends_after_end"])
    found += warning_if("flow_start_without_end", stats["flow_starts_without_end"])
    found += warning_if("flow_rebound", stats["flows_rebound_by_correlation"])
    found += warning_if("flow_correlation_disagree", stats["flows_correlation_disagree"])
    return flows, found


def _unknown_phase(ph: str) -> bool:
    return not (isinstance(ph, str) and ph and ph[0] in PH_CODE)


_INT64_MAX = int(np.iinfo(np.int64).max)
_WINDOW_NS = 4 * 10**18  # ts_ns relative to the origin must stay below this (int64 with room for dur)


def _times(m: Merged, threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int, int, int, int]:
    """int64 ns relative to the smallest usable timestamp, from the exact ns of the text: the
    origin is subtracted in integers, so every start sits on the file's absolute ns grid. Also a
    validity mask for ts and counts of events without a usable ts, of events too far from the
    rest, of X events with a negative dur or one past ~126 years (skipped, as Perfetto skips
    them: ``slice_negative_duration``; they neither make a slice nor set the origin or the end)
    and of X events with no dur (missing or not a number: Chrome writes those for calls still
    open when tracing stopped, the last events of their threads; they stay valid and run to the
    trace end, as Catapult's ``didNotFinish``; Perfetto drops them, ``json_parser_failure``).

    When the timestamps span more than int64 ns can hold (~126 years), the origin is the start of
    the ~126-year window that holds the most events, and the events outside it are rejected:
    one event at ts -1e300 or INT64_MIN must not push every other event out of range.
    ``threads``: the passes (each row on its own, but for the origin) split by rows over that many.
    """
    n = len(m.ph)
    spans = _row_spans(n, threads if n >= TIMES_SPLIT_MIN else 1)
    not_meta, far, usable = np.empty(n, dtype=bool), np.empty(n, dtype=bool), np.empty(n, dtype=bool)
    open_x, no_dur = np.empty(n, dtype=bool), np.empty(n, dtype=bool)

    def marks(lo: int, hi: int) -> tuple[int, int]:
        ph, ts_ns, dur_ns = m.ph[lo:hi], m.ts_ns[lo:hi], m.dur_ns[lo:hi]
        here = np.not_equal(ph, META, out=not_meta[lo:hi])
        here &= ph != UNKNOWN_PH
        finite = np.isfinite(m.ts[lo:hi]) & here  # a number (its ns may be beyond int64)
        has_ns = ts_ns != NO_NS
        np.logical_and(finite, ~has_ns, out=far[lo:hi])
        use = np.logical_and(finite, has_ns, out=usable[lo:hi])
        is_x = use & (ph == X)
        opened = np.logical_and(is_x, dur_ns == NO_NS, out=open_x[lo:hi])  # no number at all (1e300 or inf is FAR_NS: see merge)
        np.logical_and(is_x & ~opened, (dur_ns < 0) | (dur_ns >= _WINDOW_NS), out=no_dur[lo:hi])
        use &= ~no_dur[lo:hi]
        return (int(np.min(ts_ns, where=use, initial=_INT64_MAX)), int(np.max(ts_ns, where=use, initial=-_INT64_MAX - 1)))

    bounds = in_threads([lambda lo=lo, hi=hi: marks(lo, hi) for lo, hi in spans], len(spans))
    any_usable = bool(usable.any())
    if any_usable and max(hi for _, hi in bounds) - min(lo for lo, _ in bounds) >= _WINDOW_NS:
        ts = np.sort(m.ts_ns[usable])
        reach = np.minimum(ts, _INT64_MAX - _WINDOW_NS) + _WINDOW_NS  # (a window from near the top ends at it)
        held = np.searchsorted(ts, reach, side="left") - np.arange(len(ts))
        low = int(ts[int(np.argmax(held))])  # the first of the fullest windows
        far |= usable & ~((m.ts_ns >= low) & (m.ts_ns <= min(low + _WINDOW_NS - 1, _INT64_MAX)))
        usable &= ~far
        origin_ns = int(m.ts_ns[usable].min()) if usable.any() else 0
    else:
        origin_ns = min(lo for lo, _ in bounds) if any_usable else 0
    ts_ns = np.zeros(n, dtype=np.int64)
    dur_ns = np.empty(n, dtype=np.int64)

    def shift(lo: int, hi: int) -> None:
        np.subtract(m.ts_ns[lo:hi], origin_ns, where=usable[lo:hi], out=ts_ns[lo:hi])
        dur = dur_ns[lo:hi]
        dur[:] = m.dur_ns[lo:hi]
        dur[(dur < 0) | (dur >= _WINDOW_NS)] = 0  # NO_NS too (events other than X may have none)

    in_threads([lambda lo=lo, hi=hi: shift(lo, hi) for lo, hi in spans], len(spans))
    n_far = int(far.sum())
    n_no_dur = int(no_dur.sum())
    bad_ts = int((not_meta & ~usable).sum()) - n_far - n_no_dur
    return ts_ns, dur_ns, usable, origin_ns / 1000.0, bad_ts, n_far, n_no_dur, int((open_x & usable).sum())


TIMES_SPLIT_MIN = 1_000_000  # events: below this the time passes are not worth a thread


def _row_spans(n: int, pieces: int) -> list[tuple[int, int]]:
    """[lo, hi) row ranges: ``pieces`` about equal ones covering n rows (one when n is 0)."""
    pieces = max(1, min(pieces, n))
    cuts = [n * k // pieces for k in range(pieces + 1)]
    return list(zip(cuts[:-1], cuts[1:]))


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


def _counters(m: Merged, rows: np.ndarray, ts_ns: np.ndarray, tracks: TrackSet) -> tuple[CounterTable, int]:
    """C events: one value per numeric arg key; also how many values were skipped (not numbers)."""
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
            args = _lenient_args(m.args_blob[off : off + ln])
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
    event_rows = np.array(row_l, dtype=np.int64)
    table = CounterTable(ts_ns=np.array(ts_l, dtype=np.int64), track=np.array(track_l, dtype=np.int32),
                         value=np.array(val_l, dtype=np.float64), ordinal=m.ordinal[event_rows].astype(np.int32),
                         source=m.source[event_rows].astype(np.int16))
    return table, skipped


def _finite_or_none(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _lenient_args(raw: bytes) -> object:
    """Args msgspec would not decode whole, read by the standard parser: a number past the
    float range (``1e400``) is then one value that is not a number, not the loss of the event's
    other series (Perfetto reads each value on its own). None where that fails too."""
    try:
        return json.loads(bytes(raw).decode("utf-8", "replace"), strict=False, parse_float=_finite_or_none,
                          parse_constant=lambda _name: None)
    except (ValueError, RecursionError):
        return None


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


def _flow_rows(m: Merged, valid: np.ndarray) -> np.ndarray:
    """The v1 flow events (s/t/f) with a usable ts, as a mask."""
    return np.isin(m.ph, np.array(list(FLOW), dtype=np.int8)) & valid


def _flow_events(m: Merged, ts_ns: np.ndarray, valid: np.ndarray, tracks: TrackSet, remap: np.ndarray) -> FlowEvents:
    rows = np.flatnonzero(_flow_rows(m, valid) & (m.id_kind != 0))  # without an id: see build_store
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
    if not len(slice_row):
        return []
    pos = np.argsort(slice_row)
    sorted_rows = slice_row[pos]
    # Each binding's slice in one searchsorted (a protobuf trace binds every flow end: ~1 per 3 events).
    rows = np.fromiter((f[0] for f in m.flow_v2), dtype=np.int64, count=len(m.flow_v2))
    k = np.minimum(np.searchsorted(sorted_rows, rows), len(sorted_rows) - 1)
    hit = sorted_rows[k] == rows
    return [(s, key, t, flow_in, flow_out, row)
            for (row, key, flow_in, flow_out), s, t, h in zip(m.flow_v2, pos[k].tolist(), ts_ns[rows].tolist(), hit.tolist())
            if h]
