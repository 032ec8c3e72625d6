"""The critical path of each step: what the step's end waited on, back to its start.

The dependency graph: CPU time in order on each thread; a launch call → the device work it
launched; device work in order on each stream; a blocking host call (``cuda|hip`` Stream / Device /
Event ``Synchronize``, a synchronous ``Memcpy``) → the device work it waited for (the latest work
ending while it was blocked, or the copy it issued); collectives are device work. Each node's
start is set by its last-arriving dependency, so the longest path to the step's end is found by
walking back from it along those: on a thread back to the last blocking call that waited (the
CPU time in between is on the path), through it to the device work it waited for, back along the
stream while each piece of work started right after the one before it (a run: numpy prefix sums,
not a Python step per kernel), and at a run's first piece to its launch call, on its thread. Edge
times: CPU time (``cpu``), device work (``gpu``, ``comm`` for collectives), and waiting (launch to
start, between pieces of work, from the work's end to the blocking call's return).

All the steps walk together (``_walk_all``): each numpy pass takes one hop of every step still
walking, and the names on the paths are summed over every step at once; ``_walk`` is the same walk
one step at a time, the reference the tests hold it equal to. The graph (device work, blocking
calls) and each report are kept per store. The device work's per-stream columns come from one
pass of the C helper (``_vtui_fastcols.device_runs``; numpy's passes are the reference and the
fallback), and each step's segments are made only when read (``_PathSegments``).

A step is ``comm`` when collectives are the largest part of its path; ``sync`` when the blocking
calls on it serialise CPU work with device work that could have overlapped (per call, the smaller
of the CPU time after it and the device time before it, ≥ 25 % of the step); else ``cpu`` or
``gpu``, whichever is more of the path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import msgspec
import numpy as np

from vtui.analysis.roofline import launched_by
from vtui.store.devices import cpu_op_mask, string_mask
from vtui.store.grouping import distinct_ids
from vtui.store.store import TraceStore

try:
    from _vtui_fastcols import device_runs as _device_runs
except ImportError:  # pragma: no cover - depends on the install (an older build lacks it too)
    _device_runs = None


@dataclass(frozen=True)
class _Cols:
    """The slice columns the walk reads, as plain arrays: a store reopened from the cache holds
    np.memmap columns, and each fancy index of a memmap runs Python-level code (a few µs), which
    the per-step walk pays thousands of times."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    track: np.ndarray
    name_id: np.ndarray

    def __len__(self) -> int:
        return len(self.start_ns)


def _cols(store: TraceStore) -> _Cols:
    got = store.derived.get("critical_cols")
    if got is None:
        s = store.slices
        got = store.derived["critical_cols"] = _Cols(*(np.asarray(getattr(s, n)) for n in ("start_ns", "end_ns", "track", "name_id")))
    return got

def _named(store: TraceStore, regex: re.Pattern[str]) -> np.ndarray:
    """Per interned string: ``regex.search`` of it (the walk asks about a few rows, or none)."""
    return store.memo(("critical_named", regex.pattern), lambda: string_mask(store, regex.search))


def _rows_named(store: TraceStore, regex: re.Pattern[str]) -> np.ndarray:
    """The slice rows whose name matches; no pass over the slices when no name does (a trace
    without syncs or events)."""
    named = _named(store, regex)
    if not named.any():
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(named[_cols(store).name_id])


BLOCKING = re.compile(r"^(cuda|hip)(StreamSynchronize|DeviceSynchronize|EventSynchronize|Memcpy|MemcpyWithStream|Memcpy2D)$")
COLLECTIVE = re.compile(r"(?i)nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv")
SYNC_SHARE = 0.25  # blocking calls that cost this share of the step make it sync-bound
MAX_HOPS = 4096  # CPU <-> device switches walked per step (each is O(log n)); past it the rest is "wait"
TOP = 5
LAUNCH_CHUNK = 1 << 22  # device work laid out at once by last_launched_all (memory bound)
MAX_STEPS = 2000  # steps walked per call (~0.1 ms each); more are sampled evenly, and the report says so


@dataclass
class Segment:
    kind: str  # cpu / gpu / comm / wait / queue (waiting behind device work launched before the step)
    track: int
    start: int
    end: int
    ns: int  # its time on the path (a run of device work: the work alone, its gaps are a wait segment)
    rows: Sequence[int] | np.ndarray = ()  # the slices on the path in this segment (device work, the blocking call)


@dataclass
class StepPath:
    index: int  # the step's position in the range's steps
    row: int
    start: int
    end: int  # the path's end: the step's, or later where device work it launched ran on
    step_end: int
    bound: str
    cpu_ns: int
    gpu_ns: int
    comm_ns: int
    wait_ns: int
    sync_ns: int  # what the blocking calls serialised (the sync test's figure)
    top: list[tuple[str, str, int]]  # (kind, name, ns), heaviest first
    segments: Sequence[Segment] = field(default_factory=list)  # step end first
    queue_ns: int = 0  # of wait_ns: the step's device work queued behind work launched before it

    def path_rows(self) -> np.ndarray:
        """The slices on the path: the step, the device work, the blocking calls and the CPU operators."""
        return np.unique(np.concatenate([[self.row], *(np.asarray(seg.rows, dtype=np.int64) for seg in self.segments)]))


@dataclass
class CriticalReport:
    present: bool
    bound: str = ""  # the verdict covering most step time
    steps: list[StepPath] = field(default_factory=list)
    by_bound_ns: dict[str, int] = field(default_factory=dict)
    steps_total: int = 0  # steps given; ``steps`` holds an even sample of MAX_STEPS when there are more


class _Device:
    """Device work sorted by (stream, start), with the arrays a walk needs (whole trace, once)."""

    def __init__(self, store: TraceStore, use_c: bool = True) -> None:
        s = _cols(store)
        self._s = s
        rows, launch = launched_by(store)
        got = self._runs_c(store, s, rows, launch) if use_c and _device_runs is not None else None
        if got is None:
            got = self._runs_numpy(store, s, rows, launch)
        ready, l_start, l_sorted = got
        n = len(self.rows)
        # Positions by their launch call's start: the work a step launched is one range of them.
        self.by_launch = np.arange(n, dtype=np.int64) if l_sorted else np.argsort(l_start, kind="stable")
        self.launch_start_sorted = l_start if l_sorted else l_start[self.by_launch]
        # A wait on another stream's event: the work after the wait depends on the work before the record.
        self.event_src = _event_edges(store, self, l_start)
        ev = self.event_src >= 0 if self.event_src.strides != (0,) else None
        if ev is not None and ev.any():  # most traces have no event waits: then none of this changes a thing
            same, prev_end, has_launch = self._neighbours()
            event_last = self._event_last(ev, same, prev_end, has_launch, ready)
            ready = np.where(event_last, np.minimum(self.end[np.maximum(self.event_src, 0)], self.start), ready)
            self.event_src = np.where(event_last, self.event_src, -1)
            from_prev = same & (~has_launch | (prev_end >= ready)) & ~event_last
            self.head = np.maximum.accumulate(np.where(~from_prev, np.arange(n), 0))
        self.ready = ready  # when the last dependency let it go (unknown launch: the previous work's end)
        self.end_by_launch = self.end if l_sorted else self.end[self.by_launch]

    @cached_property
    def launch_track(self) -> np.ndarray:
        """Per work: the thread of its launch call (-1: none); made when first asked for."""
        return np.where(self.launch >= 0, self._s.track[np.maximum(self.launch, 0)], -1)

    def _neighbours(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per work: the previous one is on its stream; the previous one's end there; a launch is known."""
        n = len(self.rows)
        same = np.zeros(n, dtype=bool)
        same[1:] = self.track[1:] == self.track[:-1]
        prev_end = np.full(n, np.iinfo(np.int64).min // 2, dtype=np.int64)
        prev_end[1:] = np.where(same[1:], self.end[:-1], prev_end[1:])
        return same, prev_end, self.launch >= 0

    def _runs_c(self, store: TraceStore, s: _Cols, rows: np.ndarray, launch: np.ndarray) -> tuple | None:
        """The per-stream columns in one pass of the C helper (``device_runs``), into as little fresh
        memory as can be (page faults are most of its time): the work's own columns are views of
        the slices' where its rows are consecutive (one block per stream, the usual case); no
        collective names, no comm columns (zeros). None where it cannot run."""
        cols = [np.ascontiguousarray(c) for c in (s.start_ns, s.end_ns, s.track, s.name_id)]
        if [c.dtype for c in cols] != [np.int64, np.int64, np.int32, np.int32]:
            return None
        named_comm = _named(store, COLLECTIVE)
        comm_name = np.ascontiguousarray(named_comm).view(np.uint8)
        n = len(rows)
        i64 = [np.empty(n, dtype=np.int64) for _ in range(5)]
        cum_gpu, cum_gap = np.empty(n + 1, dtype=np.int64), np.empty(n + 1, dtype=np.int64)
        drops: np.ndarray = np.empty(n, dtype=np.int32)
        with_comm = bool(named_comm.any())
        cum_comm = np.empty(n + 1 if with_comm else 0, dtype=np.int64)
        comm = np.empty(n if with_comm else 0, dtype=bool)
        rows, launch = np.ascontiguousarray(rows, dtype=np.int64), np.ascontiguousarray(launch, dtype=np.int64)
        consecutive = n > 0 and int(rows[-1]) - int(rows[0]) == n - 1  # ascending (launched_by's), so rows[0]..rows[-1]
        flags = _device_runs(rows, launch, *cols, comm_name, *i64[:4], cum_gpu, cum_comm, cum_gap, drops, comm.view(np.uint8))
        if not flags & 1:  # not in (stream, start) order: sorted, then again
            order = np.lexsort((s.start_ns[rows], s.track[rows]))
            rows, launch, consecutive = rows[order], launch[order], False
            flags = _device_runs(rows, launch, *cols, comm_name, *i64[:4], cum_gpu, cum_comm, cum_gap, drops,
                                 comm.view(np.uint8))
            if not flags & 1:  # pragma: no cover - sorted rows always pass
                return None
        self.rows, self.launch = rows, launch
        if consecutive:
            a, b = int(rows[0]), int(rows[-1]) + 1
            self.track, self.start, self.end = s.track[a:b], s.start_ns[a:b], s.end_ns[a:b]
        else:
            self.track, self.start, self.end = s.track[rows], s.start_ns[rows], s.end_ns[rows]
        l_start, ready, self.l_acc, self.head = i64[:4]
        self.cum_gpu, self.cum_gap, self.end_drops = cum_gpu, cum_gap, drops
        self.cum_comm = cum_comm if with_comm else np.zeros(n + 1, dtype=np.int64)
        self.comm = comm if with_comm else np.zeros(n, dtype=bool)
        return ready, l_start, bool(flags & 2)

    def _runs_numpy(self, store: TraceStore, s: _Cols, rows: np.ndarray, launch: np.ndarray) -> tuple:
        """The per-stream columns, numpy (the reference for ``_runs_c``), before any event wait."""
        order = np.lexsort((s.start_ns[rows], s.track[rows]))
        self.rows, self.launch = rows[order], launch[order]
        self.track = s.track[self.rows]
        self.start, self.end = s.start_ns[self.rows], s.end_ns[self.rows]
        n = len(self.rows)
        pos = np.arange(n)
        same = np.zeros(n, dtype=bool)
        same[1:] = self.track[1:] == self.track[:-1]
        prev_end = np.full(n, np.iinfo(np.int64).min // 2, dtype=np.int64)
        prev_end[1:] = np.where(same[1:], self.end[:-1], prev_end[1:])
        has_launch = self.launch >= 0
        ready = np.where(has_launch, np.minimum(s.end_ns[np.maximum(self.launch, 0)], self.start), prev_end)
        l_start = np.where(has_launch, s.start_ns[np.maximum(self.launch, 0)], np.iinfo(np.int64).max)
        # Along each stream work runs in launch order: the running max of the launch starts is
        # sorted, so "the first work in a run launched inside the step" is one binary search.
        known = np.where(has_launch, l_start, np.iinfo(np.int64).min)
        self.l_acc = np.empty(n, dtype=np.int64)
        cuts = np.flatnonzero(np.diff(self.track)) + 1 if n else pos  # streams are contiguous: sorted by (stream, start)
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), n]) if n else []:
            self.l_acc[a:b] = np.maximum.accumulate(known[a:b])
        # The previous work on the stream arrived last: the walk stays on the stream (event waits
        # aside: __init__ moves those).
        from_prev = same & (~has_launch | (prev_end >= ready))
        self.head = np.maximum.accumulate(np.where(~from_prev, pos, 0)) if n else pos
        comm = _named(store, COLLECTIVE)[s.name_id[self.rows]]
        dur = (self.end - self.start).astype(np.int64)
        gap = np.where(same, np.maximum(self.start - prev_end, 0), 0)
        self.comm = comm
        self.cum_gpu = np.concatenate([[0], np.cumsum(np.where(comm, 0, dur))])
        self.cum_comm = np.concatenate([[0], np.cumsum(np.where(comm, dur, 0))])
        self.cum_gap = np.concatenate([[0], np.cumsum(gap)])
        # Ends that fall below the previous work's, counted: a run [h, p] has its ends in order
        # when the count is the same at both ends (what a binary search over them needs).
        self.end_drops = np.concatenate([[0], np.cumsum(self.end[1:] < self.end[:-1])]) if n else pos
        return ready, l_start, False

    def _event_last(self, ev: np.ndarray, same: np.ndarray, prev_end: np.ndarray, has_launch: np.ndarray,
                    ready: np.ndarray) -> np.ndarray:
        """Per work: its event's work ended last of its dependencies (so the walk goes there)."""
        ev_end = np.where(ev, self.end[np.maximum(self.event_src, 0)], np.iinfo(np.int64).min // 2)
        return (ev & (ev_end <= self.start) & (ev_end > np.where(same, prev_end, ev_end - 1))
                & (~has_launch | (ev_end > ready)))

    def last_launched(self, lo: int, hi: int) -> int:
        """Position of the work that ends last among the work launched in [lo, hi) (-1: none)."""
        a, b = np.searchsorted(self.launch_start_sorted, [lo, hi], side="left")
        if b <= a:
            return -1
        cand = self.by_launch[a:b]
        return int(cand[int(np.argmax(self.end[cand]))])

    def last_launched_all(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``last_launched`` of every [lo, hi) at once: the ranges' work laid end to end (in
        chunks), each range's maximum end, and its first work that reaches it."""
        out = np.full(len(lo), -1, dtype=np.int64)
        a = np.searchsorted(self.launch_start_sorted, lo, side="left")
        b = np.searchsorted(self.launch_start_sorted, hi, side="left")
        some = np.flatnonzero(b > a)
        lens = (b - a)[some]
        chunk = np.cumsum(lens) // LAUNCH_CHUNK
        for c in distinct_ids(chunk) if len(some) else []:
            sel = some[chunk == c]
            at, which = _expand(a[sel], b[sel] - 1)
            ends = self.end_by_launch[at]
            starts = np.flatnonzero(np.concatenate(([True], which[1:] != which[:-1])))
            top = np.maximum.reduceat(ends, starts)
            idx = np.arange(len(at), dtype=np.int64)
            firsts = np.minimum.reduceat(np.where(ends == top[which], idx, len(at)), starts)
            out[sel] = self.by_launch[at[firsts]]
        return out


WAIT_EVENT = re.compile(r"^(cuda|hip)StreamWaitEvent$")
RECORD_EVENT = re.compile(r"^(cuda|hip)EventRecord$")


def _event_edges(store: TraceStore, dev: _Device, l_start: np.ndarray) -> np.ndarray:
    """Per device work position: the work it waits for through an event (-1: none). Kineto writes
    no event handles, so a ``StreamWaitEvent`` pairs with the last ``EventRecord`` before it on its
    thread; the record marks the last work that thread launched before it, and the wait holds the
    next work the thread launches, when that goes to another stream."""
    s = _cols(store)
    none = np.broadcast_to(np.int64(-1), (len(dev.rows),))  # no waits (most traces): no column to fill
    if not len(dev.rows) or not len(s):
        return none
    waits, records = _rows_named(store, WAIT_EVENT), _rows_named(store, RECORD_EVENT)
    if not len(waits) or not len(records):
        return none
    out = np.full(len(dev.rows), -1, dtype=np.int64)
    for t in distinct_ids(s.track[waits]):
        w = waits[s.track[waits] == t]
        r = records[s.track[records] == t]
        mine = np.flatnonzero(dev.launch_track == t)
        if not len(r) or not len(mine):
            continue
        mine = mine[np.argsort(l_start[mine], kind="stable")]
        ls = l_start[mine]
        r_start = np.sort(s.start_ns[r])
        w_start = s.start_ns[w]
        k = np.searchsorted(r_start, w_start, side="right") - 1  # the record before each wait
        before = np.searchsorted(ls, r_start[np.maximum(k, 0)], side="left") - 1  # last work launched before it
        after = np.searchsorted(ls, w_start, side="right")  # first work launched after the wait
        ok = (k >= 0) & (before >= 0) & (after < len(mine))
        src, dst = mine[np.maximum(before, 0)], mine[np.minimum(after, len(mine) - 1)]
        ok &= dev.track[src] != dev.track[dst]
        out[dst[ok]] = src[ok]
    return out


class _Blocking:
    """Per CPU thread: the blocking calls that waited on device work, sorted by end, and that work."""

    def __init__(self, store: TraceStore, dev: _Device) -> None:
        s = _cols(store)
        rows = _rows_named(store, BLOCKING)
        target = np.full(len(rows), -1, dtype=np.int64)  # position in dev
        if len(rows) and len(dev.rows):
            st, en = s.start_ns[rows], s.end_ns[rows]
            # The device work that ended last while the call was blocked.
            by_end = np.argsort(dev.end, kind="stable")
            k = np.searchsorted(dev.end[by_end], en, side="right") - 1
            cand = by_end[np.maximum(k, 0)]
            ok = (k >= 0) & (dev.end[cand] >= st)
            target = np.where(ok, cand, -1)
            # A synchronous copy waits for its own copy first.
            issued = np.flatnonzero(np.isin(dev.launch, rows))
            if len(issued):
                at = np.searchsorted(rows, dev.launch[issued])
                target[at] = issued
        keep = target >= 0
        rows, target = rows[keep], target[keep]
        self.by_track: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        tracks = s.track[rows]
        for t in distinct_ids(tracks):
            sel = np.flatnonzero(tracks == t)
            sel = sel[np.argsort(s.end_ns[rows[sel]], kind="stable")]
            self.by_track[int(t)] = (rows[sel], s.start_ns[rows[sel]], s.end_ns[rows[sel]], target[sel])

    def last_before(self, track: int, x: int, lo: int) -> tuple[int, int, int, int] | None:
        """The latest blocking call on ``track`` ending at or before ``x`` and after ``lo``."""
        got = self.by_track.get(track)
        if got is None:
            return None
        rows, st, en, tgt = got
        k = int(np.searchsorted(en, x, side="right")) - 1
        if k < 0 or en[k] <= lo:
            return None
        return int(rows[k]), int(st[k]), int(en[k]), int(tgt[k])

    def last_before_all(self, track: np.ndarray, x: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, ...]:
        """``last_before`` of every query: (found, row, start, end, target), arrays."""
        n = len(x)
        found = np.zeros(n, dtype=bool)
        row, st, en, tgt = (np.zeros(n, dtype=np.int64) for _ in range(4))
        for t in distinct_ids(track) if n else []:
            got = self.by_track.get(int(t))
            if got is None:
                continue
            sel = np.flatnonzero(track == t)
            rows, b_st, b_en, b_tgt = got
            k = np.searchsorted(b_en, x[sel], side="right") - 1
            kk = np.maximum(k, 0)
            ok = (k >= 0) & (b_en[kk] > lo[sel])
            found[sel] = ok
            row[sel], st[sel], en[sel], tgt[sel] = rows[kk], b_st[kk], b_en[kk], b_tgt[kk]
        return found, row, st, en, tgt


def _walk(dev: _Device, blk: _Blocking, track: int, lo: int, hi: int) -> tuple[list[Segment], int, int]:
    """Segments of the path back to ``lo`` from the step's end: ``hi`` on ``track``, or the end of the
    device work the step launched where that is later (the CPU ran ahead); the serialised sync
    time; the path's end."""
    segs: list[Segment] = []
    sync_ns, cpu_after = 0, 0
    where, x, pos = "cpu", hi, -1
    last = dev.last_launched(lo, hi)
    if last >= 0 and dev.end[last] > hi:
        where, x, pos = "gpu", int(dev.end[last]), last
    end = x
    pending: list[int] = []  # CPU time after each blocking call, until its device time is known
    for _ in range(MAX_HOPS):
        if x <= lo:
            break
        if where == "cpu":
            hit = blk.last_before(track, x, lo)
            if hit is None:
                segs.append(Segment("cpu", track, lo, x, x - lo))
                x = lo
                break
            row, st, en, tgt = hit
            if en < x:
                segs.append(Segment("cpu", track, max(en, lo), x, x - max(en, lo)))
            cpu_after += x - max(en, lo)
            g_end = int(dev.end[tgt])
            if g_end < en:
                segs.append(Segment("wait", track, max(g_end, lo), en, en - max(g_end, lo), (row,)))
            pending.append(cpu_after)
            cpu_after = 0
            where, pos, x = "gpu", tgt, min(g_end, en)
            continue
        # On a stream at work ``pos``: back along its run.
        h = int(dev.head[pos])
        t = int(dev.track[pos])
        own = h + int(np.searchsorted(dev.l_acc[h : pos + 1], lo, side="left"))
        if own > pos:  # all of it was launched before the step: the step waits behind that queue
            segs.append(Segment("queue", t, lo, x, x - lo))
            x = lo
            break
        queued = own > h  # older work ran just before the step's own on this stream
        first = own if queued else h
        if not queued and dev.start[h] < lo:  # the run began before the step: only its part inside counts
            first = h + int(np.searchsorted(dev.end[h : pos + 1], lo, side="right"))
            first = min(first, pos)
        gpu = int(dev.cum_gpu[pos + 1] - dev.cum_gpu[first])
        comm = int(dev.cum_comm[pos + 1] - dev.cum_comm[first])
        gap = int(dev.cum_gap[pos + 1] - dev.cum_gap[first + 1])
        start = max(int(dev.start[first]), lo)
        clip = max(lo - int(dev.start[first]), 0)  # the part of the first work before the step
        if dev.comm[first]:
            comm -= clip
        else:
            gpu -= clip
        run, is_comm = dev.rows[first : pos + 1], dev.comm[first : pos + 1]
        if gpu:
            segs.append(Segment("gpu", t, start, x, gpu, tuple(run[~is_comm].tolist())))
        if comm:
            segs.append(Segment("comm", t, start, x, comm, tuple(run[is_comm].tolist())))
        if gap:
            segs.append(Segment("wait", t, start, x, gap))
        if pending:
            sync_ns += min(pending.pop(), gpu + comm)
        if queued:
            if start > lo:
                segs.append(Segment("queue", t, lo, start, start - lo))
            x = lo
            break
        ev = int(dev.event_src[h])
        if ev >= 0 and dev.start[h] >= lo:  # it waited on another stream's event: over there
            ready = int(dev.ready[h])
            if ready < start:
                segs.append(Segment("wait", t, max(ready, lo), start, start - max(ready, lo)))
            pos, x = ev, ready
            continue
        if dev.start[h] < lo or dev.launch[h] < 0:
            if start > lo:
                segs.append(Segment("wait", t, lo, start, start - lo))
            x = lo
            break
        ready = int(dev.ready[h])
        if ready < start:
            segs.append(Segment("wait", t, max(ready, lo), start, start - max(ready, lo)))
        where, x = "cpu", ready
        track = int(dev.launch_track[h])
    else:
        if x > lo:
            segs.append(Segment("wait", track, lo, x, x - lo))
    return segs, sync_ns, end


def analyse_critical(store: TraceStore, step_rows: np.ndarray) -> CriticalReport:
    """The critical path of each step (slice rows of the steps, as ``analyse_steps`` finds them);
    once per store and steps (the report is shared: callers do not change it)."""
    step_rows = np.asarray(step_rows, dtype=np.int64)
    key = ("critical_report", step_rows.tobytes())
    got = store.derived.get(key)
    if got is None:
        got = store.derived[key] = _analyse(store, step_rows)
    return got


def _graph(store: TraceStore) -> tuple[_Device, _Blocking]:
    """The whole trace's device work and blocking calls, once per store."""
    got = store.derived.get("critical_graph")
    if got is None:
        dev = _Device(store)
        got = store.derived["critical_graph"] = (dev, _Blocking(store, dev))
    return got


def _analyse(store: TraceStore, step_rows: np.ndarray) -> CriticalReport:
    s = _cols(store)
    if not len(step_rows):
        return CriticalReport(False)
    dev, blk = _graph(store)
    out = CriticalReport(True, steps_total=len(step_rows))
    picked = np.arange(len(step_rows))
    if len(picked) > MAX_STEPS:
        picked = np.unique(np.linspace(0, len(step_rows) - 1, MAX_STEPS).round().astype(np.int64))
    rows = step_rows[picked]
    lo, hi = s.start_ns[rows].astype(np.int64), s.end_ns[rows].astype(np.int64)
    segs, sync, end = _walk_all(dev, blk, s.track[rows].astype(np.int64), lo, hi)
    out.steps = _summarise_all(store, dev, picked.tolist(), rows.tolist(), lo, end, hi, sync, segs)
    for st in out.steps:
        out.by_bound_ns[st.bound] = out.by_bound_ns.get(st.bound, 0) + (st.step_end - st.start)
    out.bound = max(sorted(out.by_bound_ns), key=lambda k: out.by_bound_ns[k])
    return out


def walk_steps_one_by_one(store: TraceStore, step_rows: np.ndarray) -> list[StepPath]:
    """The reference for ``_analyse``'s batched walk: ``_walk`` and ``_summarise`` step by step
    (the tests hold the two equal)."""
    s = _cols(store)
    dev, blk = _graph(store)
    out = []
    for i, row in enumerate(np.asarray(step_rows, dtype=np.int64).tolist()):
        lo, hi, track = int(s.start_ns[row]), int(s.end_ns[row]), int(s.track[row])
        segs, sync_ns, end = _walk(dev, blk, track, lo, hi)
        out.append(_summarise(store, i, row, lo, end, segs, sync_ns, hi))
    return out


def step_path(store: TraceStore, row: int) -> StepPath | None:
    """The critical path of the step holding slice ``row`` (the step itself, or a slice or GPU work
    inside its time); None when the trace has no steps or none holds it."""
    from vtui.analysis.steps import find_step_rows  # steps are found as Insights finds them

    s = _cols(store)
    _label, _source, steps = find_step_rows(store)
    if not len(steps) or row < 0:
        return None
    at = int(s.start_ns[row])
    hit = steps[(s.start_ns[steps] <= at) & (s.end_ns[steps] >= at)]
    if int(row) in steps.tolist():
        hit = np.array([row])
    if not len(hit):
        return None
    report = analyse_critical(store, hit[:1])
    return report.steps[0] if report.steps else None


def _outer_ops(store: TraceStore, rows: np.ndarray) -> np.ndarray:
    """Of ``rows``, the operators with no operator above them (what CPU time on the path is named
    after). Climbs from these rows only: a step's slices, not the whole trace."""
    rows = rows[cpu_op_mask(store)[rows]]
    return rows[_outer_mask(store, rows)]


def _outer_mask(store: TraceStore, rows: np.ndarray) -> np.ndarray:
    """Of ``rows`` (operators), those with no operator above them."""
    ops = cpu_op_mask(store)
    parent = np.asarray(store.slices.parent)
    keep = np.ones(len(rows), dtype=bool)
    anc = parent[rows].astype(np.int64)
    for _ in range(512):
        live = anc >= 0
        if not live.any():
            break
        keep[live] &= ~ops[anc[live]]
        anc[live] = parent[anc[live]]
    return keep


def _summarise(store: TraceStore, index: int, row: int, lo: int, hi: int,
               segs: list[Segment], sync_ns: int, step_end: int) -> StepPath:
    s = _cols(store)
    totals = {"cpu": 0, "gpu": 0, "comm": 0, "wait": 0, "queue": 0}
    names: dict[tuple[str, str], int] = {}
    for seg in segs:
        length = seg.ns
        totals[seg.kind] += length
        if seg.kind in ("gpu", "comm") and seg.rows:
            r = np.array(seg.rows, dtype=np.int64)
            lo_r = np.maximum(s.start_ns[r], seg.start)
            d = np.maximum(s.end_ns[r] - lo_r, 0)
            for nid, ns in zip(*_sum_by(s.name_id[r], d)):
                key = (seg.kind, store.strings[nid])
                names[key] = names.get(key, 0) + ns
        elif seg.kind == "cpu" and length > 0:
            q = store.index.query(seg.track, seg.start, seg.end)
            q = _outer_ops(store, q) if len(q) else q
            seg.rows = tuple(q.tolist())
            named = 0
            if len(q):
                d = np.maximum(np.minimum(s.end_ns[q], seg.end) - np.maximum(s.start_ns[q], seg.start), 0)
                for nid, ns in zip(*_sum_by(s.name_id[q], d)):
                    key = ("cpu", store.strings[nid])
                    names[key] = names.get(key, 0) + ns
                    named += ns
            if length > named:
                key = ("cpu", "(CPU outside operators)")
                names[key] = names.get(key, 0) + length - named
    return _verdict(index, row, lo, hi, segs, sync_ns, step_end, [totals[k] for k in KINDS], names)


def _verdict(index: int, row: int, lo: int, hi: int, segs: list[Segment], sync_ns: int, step_end: int,
             totals: list[int], names: dict[tuple[str, str], int]) -> StepPath:
    """The step's bound and heaviest names from its path's totals (in ``KINDS`` order)."""
    cpu, gpu, comm, wait, queue = totals
    wait += queue
    if comm and comm >= max(cpu, gpu + queue):
        bound = "comm"
    elif sync_ns >= SYNC_SHARE * max(step_end - lo, 1):
        bound = "sync"
    else:  # time queued behind earlier steps' device work is the GPU's
        bound = "cpu" if cpu >= gpu + comm + queue else "gpu"
    top = sorted(((k, n, v) for (k, n), v in names.items() if v > 0), key=lambda x: (-x[2], x[1]))[:TOP]
    return StepPath(index, row, lo, hi, step_end, bound, cpu, gpu, comm, wait, sync_ns, top, segs, queue)


# ---- all steps at once -------------------------------------------------------------------------
# The walk above, one hop of every step per numpy pass (``_walk`` is the reference, tested equal):
# the segments come out as columns, ordered per step as ``_walk`` appends them.
KINDS = ("cpu", "gpu", "comm", "wait", "queue")
_CPU, _GPU, _COMM, _WAIT, _QUEUE = range(5)
_NO_ROWS, _GPU_RUN, _COMM_RUN, _ONE_ROW = range(4)  # what a segment's rows are: none, a run's, one slice


class _Segs:
    """Segment columns, appended a numpy batch at a time."""

    NAMES = ("step", "hop", "sub", "kind", "track", "start", "end", "ns", "rk", "a", "b")

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, mask: np.ndarray, steps: np.ndarray, hop: int, sub: int, kind: int, track, start, end, ns,
            rk: int = _NO_ROWS, a=-1, b=-1) -> None:
        """Segments of ``steps[mask]`` (the other arguments: arrays over ``steps``, or scalars)."""
        if not mask.any():
            return
        m = int(mask.sum())

        def col(v) -> np.ndarray:
            return np.broadcast_to(np.asarray(v, dtype=np.int64), mask.shape)[mask] if np.ndim(v) else np.full(m, v, dtype=np.int64)

        self.parts.append((steps[mask].astype(np.int64), np.full(m, hop, dtype=np.int64), np.full(m, sub, dtype=np.int64),
                           np.full(m, kind, dtype=np.int64), col(track), col(start), col(end), col(ns),
                           np.full(m, rk, dtype=np.int64), col(a), col(b)))

    def columns(self) -> dict[str, np.ndarray]:
        if not self.parts:
            return {n: np.zeros(0, dtype=np.int64) for n in self.NAMES}
        cols = [np.concatenate(c) for c in zip(*self.parts)]
        order = np.lexsort((cols[2], cols[1], cols[0]))
        return {n: c[order] for n, c in zip(self.NAMES, cols)}


def _bisect(arr: np.ndarray, a: np.ndarray, b: np.ndarray, v: np.ndarray, right: bool) -> np.ndarray:
    """Per query, ``a + np.searchsorted(arr[a:b], v)`` for sorted ranges, all at once."""
    lo, hi = a.astype(np.int64), b.astype(np.int64)
    while True:
        live = lo < hi
        if not live.any():
            return lo
        mid = (lo + hi) // 2
        val = arr[np.where(live, mid, 0)]
        go = (val <= v) if right else (val < v)
        lo = np.where(live & go, mid + 1, lo)
        hi = np.where(live & ~go, mid, hi)


def _walk_all(dev: _Device, blk: _Blocking, track: np.ndarray, lo: np.ndarray, hi: np.ndarray
              ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """``_walk`` of every step (arrays over the steps): the segment columns, the sync time, the path's end."""
    n = len(lo)
    segs = _Segs()
    steps = np.arange(n, dtype=np.int64)
    track, x = track.astype(np.int64).copy(), hi.astype(np.int64).copy()
    last = dev.last_launched_all(lo, hi)
    on_gpu = (last >= 0) & (dev.end[np.maximum(last, 0)] > hi) if len(dev.rows) else np.zeros(n, dtype=bool)
    x[on_gpu] = dev.end[last[on_gpu]]
    pos = np.where(on_gpu, last, -1)
    end = x.copy()
    active = np.ones(n, dtype=bool)
    pend_on, pend, sync = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for hop in range(MAX_HOPS):
        active &= x > lo
        if not active.any():
            break
        c, g = np.flatnonzero(active & ~on_gpu), np.flatnonzero(active & on_gpu)
        if len(c):
            _cpu_hop(dev, blk, segs, hop, c, track, x, lo, active, on_gpu, pos, pend_on, pend)
        if len(g):
            _gpu_hop(dev, segs, hop, g, track, x, lo, active, on_gpu, pos, pend_on, pend, sync)
    left = active & (x > lo)  # walked MAX_HOPS hops and not there yet: the rest is waiting
    segs.add(left, steps, MAX_HOPS, 0, _WAIT, track, lo, x, x - lo)
    return segs.columns(), sync, end


def _cpu_hop(dev, blk, segs, hop, c, track, x, lo, active, on_gpu, pos, pend_on, pend) -> None:
    xc, lc, tc = x[c], lo[c], track[c]
    ok, row, st, en, tgt = blk.last_before_all(tc, xc, lc)
    miss = ~ok
    segs.add(miss, c, hop, 0, _CPU, tc, lc, xc, xc - lc)
    x[c[miss]] = lc[miss]
    active[c[miss]] = False
    if not ok.any():
        return
    h = ok
    from_en = np.maximum(en, lc)
    segs.add(h & (en < xc), c, hop, 0, _CPU, tc, from_en, xc, xc - from_en)
    g_end = np.zeros(len(c), dtype=np.int64)
    g_end[h] = dev.end[tgt[h]]
    w0 = np.maximum(g_end, lc)
    segs.add(h & (g_end < en), c, hop, 1, _WAIT, tc, w0, en, en - w0, _ONE_ROW, row, row)
    k = c[h]
    pend[k], pend_on[k] = (xc - from_en)[h], True
    on_gpu[k], pos[k], x[k] = True, tgt[h], np.minimum(g_end, en)[h]


def _gpu_hop(dev, segs, hop, g, track, x, lo, active, on_gpu, pos, pend_on, pend, sync) -> None:
    p, xg, lg = pos[g], x[g], lo[g]
    h = dev.head[p]
    t = dev.track[p]
    own = _bisect(dev.l_acc, h, p + 1, lg, right=False)
    behind = own > p  # all of it was launched before the step: the step waits behind that queue
    segs.add(behind, g, hop, 0, _QUEUE, t, lg, xg, xg - lg)
    x[g[behind]] = lg[behind]
    active[g[behind]] = False
    go = ~behind
    queued = go & (own > h)
    first = np.where(queued, own, h)
    clip_run = go & ~queued & (dev.start[h] < lg)  # the run began before the step: only its part inside counts
    if clip_run.any():
        i = np.flatnonzero(clip_run)
        sorted_run = dev.end_drops[p[i]] == dev.end_drops[h[i]]
        got = _bisect(dev.end, h[i], p[i] + 1, lg[i], right=True)
        for j in np.flatnonzero(~sorted_run).tolist():  # ends out of order: numpy's search on the very slice
            a, b = int(h[i[j]]), int(p[i[j]])
            got[j] = a + int(np.searchsorted(dev.end[a : b + 1], lg[i[j]], side="right"))
        first[i] = np.minimum(got, p[i])
    f = np.where(go, first, 0)
    gpu = dev.cum_gpu[p + 1] - dev.cum_gpu[f]
    comm = dev.cum_comm[p + 1] - dev.cum_comm[f]
    gap = dev.cum_gap[p + 1] - dev.cum_gap[f + 1]
    start = np.maximum(dev.start[f], lg)
    clip = np.maximum(lg - dev.start[f], 0)
    first_comm = dev.comm[f]
    comm = np.where(first_comm, comm - clip, comm)
    gpu = np.where(first_comm, gpu, gpu - clip)
    segs.add(go & (gpu != 0), g, hop, 1, _GPU, t, start, xg, gpu, _GPU_RUN, f, p)
    segs.add(go & (comm != 0), g, hop, 2, _COMM, t, start, xg, comm, _COMM_RUN, f, p)
    segs.add(go & (gap != 0), g, hop, 3, _WAIT, t, start, xg, gap)
    popped = go & pend_on[g]
    k = g[popped]
    sync[k] += np.minimum(pend[k], (gpu + comm)[popped])
    pend_on[k] = False
    segs.add(queued & (start > lg), g, hop, 4, _QUEUE, t, lg, start, start - lg)
    done = queued.copy()
    rest = go & ~queued
    ev = dev.event_src[h]
    by_event = rest & (ev >= 0) & (dev.start[h] >= lg)  # it waited on another stream's event: over there
    ready = dev.ready[h]
    w0 = np.maximum(ready, lg)
    segs.add(by_event & (ready < start), g, hop, 4, _WAIT, t, w0, start, start - w0)
    k = g[by_event]
    pos[k], x[k] = ev[by_event], ready[by_event]
    stop = rest & ~by_event & ((dev.start[h] < lg) | (dev.launch[h] < 0))
    segs.add(stop & (start > lg), g, hop, 4, _WAIT, t, lg, start, start - lg)
    done |= stop
    to_cpu = rest & ~by_event & ~stop
    segs.add(to_cpu & (ready < start), g, hop, 4, _WAIT, t, w0, start, start - w0)
    k = g[to_cpu]
    on_gpu[k], x[k], track[k] = False, ready[to_cpu], dev.launch_track[h[to_cpu]]
    k = g[done]
    x[k] = lg[done]
    active[k] = False


def _expand(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the ranges [a, b] (inclusive), concatenated, and the range each came from."""
    lens = np.maximum(b - a + 1, 0)
    total = int(lens.sum())
    which = np.repeat(np.arange(len(a), dtype=np.int64), lens)
    starts = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) - starts[which] + a[which], which


def _sums(seg: np.ndarray, ids: np.ndarray, ns: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """Per (segment, id) present, ascending: segment, id, summed ns. The ids get dense codes (a
    table over the string ids: few names), so the sums are a bincount, not a sort of every row."""
    if not len(seg):
        return [], [], []
    present = np.zeros(int(ids.max()) + 1, dtype=bool)
    present[ids] = True
    names = np.flatnonzero(present)
    code = np.zeros(len(present), dtype=np.int64)
    code[names] = np.arange(len(names), dtype=np.int64)
    span = int(seg.max()) + 1
    size = span * len(names)
    if size > 8 * len(seg) + (1 << 20) or int(ns.sum()) >= 1 << 52:  # sparse, or past a float's exact sums
        order = np.lexsort((ids, seg))
        s, i = seg[order], ids[order]
        first = np.flatnonzero(np.concatenate(([True], (s[1:] != s[:-1]) | (i[1:] != i[:-1]))))
        return s[first].tolist(), i[first].tolist(), np.add.reduceat(ns[order].astype(np.int64), first).tolist()
    key = seg * len(names) + code[ids]
    hit = np.flatnonzero(np.bincount(key, minlength=size))
    sums = np.bincount(key, weights=ns, minlength=size)[hit].astype(np.int64)
    return (hit // len(names)).tolist(), names[hit % len(names)].tolist(), sums.tolist()


class _PathSegments(Sequence):
    """One step's segments, made when first read: the report holds up to ``MAX_STEPS`` steps and
    the timeline reads the path of one (``path_rows``), so the batched summary keeps the segment
    columns and makes no Python object per segment up front."""

    def __init__(self, table: _SegTable, a: int, b: int) -> None:
        self._table, self._a, self._b = table, a, b
        self._made: list[Segment] | None = None

    def _list(self) -> list[Segment]:
        if self._made is None:
            self._made = self._table.segments(self._a, self._b)
        return self._made

    def __len__(self) -> int:
        return self._b - self._a

    def __getitem__(self, i):
        return self._list()[i]

    def __iter__(self):
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return repr(self._list())


class _SegTable:
    """The segment columns of every step, and where each segment's rows lie (views, no copies)."""

    def __init__(self, sg: dict[str, np.ndarray], run: np.ndarray, run_rows: np.ndarray, run_cuts: np.ndarray,
                 cpu: np.ndarray, cpu_rows: np.ndarray, cpu_cuts: np.ndarray, cpu_cuts_end: np.ndarray) -> None:
        self.sg = sg
        n = len(sg["step"])
        self.run_at = np.full(n, -1, dtype=np.int64)
        self.run_at[run] = np.arange(len(run), dtype=np.int64)
        self.cpu_at = np.full(n, -1, dtype=np.int64)
        self.cpu_at[cpu] = np.arange(len(cpu), dtype=np.int64)
        self.run_rows, self.run_cuts = run_rows, run_cuts
        self.cpu_rows, self.cpu_cuts, self.cpu_cuts_end = cpu_rows, cpu_cuts, cpu_cuts_end

    def segments(self, a: int, b: int) -> list[Segment]:
        sg = self.sg
        out = []
        cols = zip(*(sg[n][a:b].tolist() for n in ("kind", "track", "start", "end", "ns", "rk")),
                   self.run_at[a:b].tolist(), self.cpu_at[a:b].tolist(), range(a, b))
        for kind, track, start, end, ns, rk, j, m, k in cols:
            rows: Sequence[int] | np.ndarray = ()
            if j >= 0:
                rows = self.run_rows[int(self.run_cuts[j]) : int(self.run_cuts[j + 1])]
            elif rk == _ONE_ROW:
                rows = sg["a"][k : k + 1]
            elif m >= 0:
                rows = self.cpu_rows[int(self.cpu_cuts[m]) : int(self.cpu_cuts_end[m])]
            out.append(Segment(KINDS[kind], track, start, end, ns, rows))
        return out


OUTSIDE = "(CPU outside operators)"  # the CPU time on a path that no operator covers


def _summarise_all(store: TraceStore, dev: _Device, picked: list[int], rows: list[int], lo: np.ndarray,
                   end: np.ndarray, hi: np.ndarray, sync: np.ndarray, sg: dict[str, np.ndarray]) -> list[StepPath]:
    """``_summarise`` of every step from the segment columns: the totals, the names' time and each
    step's heaviest names and verdict worked out by numpy over all segments at once; then one
    ``StepPath`` per step, its segments made when read (``_PathSegments``)."""
    s = _cols(store)
    # Device work on the path: each run's work (of its kind), clipped to the segment's start.
    run = np.flatnonzero((sg["rk"] == _GPU_RUN) | (sg["rk"] == _COMM_RUN))
    at, which = _expand(sg["a"][run], sg["b"][run])
    keep = dev.comm[at] == (sg["rk"][run] == _COMM_RUN)[which]
    at, which = at[keep], which[keep]
    r = dev.rows[at]
    d = np.maximum(s.end_ns[r] - np.maximum(s.start_ns[r], sg["start"][run][which]), 0)
    g_seg, g_id, g_ns = _sums(run[which], s.name_id[r], d)
    run_cuts = np.searchsorted(which, np.arange(len(run) + 1))
    # CPU time on the path: the outermost operators overlapping each CPU segment.
    cpu = np.flatnonzero((sg["kind"] == _CPU) & (sg["ns"] > 0))
    parts = [store.index.query(t, a, b) for t, a, b in zip(sg["track"][cpu].tolist(), sg["start"][cpu].tolist(), sg["end"][cpu].tolist())]
    q = np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)
    q_seg = np.repeat(cpu, [len(x) for x in parts]) if parts else np.zeros(0, dtype=np.int64)
    if len(q):
        ops = cpu_op_mask(store)[q]
        q, q_seg = q[ops], q_seg[ops]
        outer = _outer_mask(store, q)
        q, q_seg = q[outer], q_seg[outer]
    d = np.maximum(np.minimum(s.end_ns[q], sg["end"][q_seg]) - np.maximum(s.start_ns[q], sg["start"][q_seg]), 0)
    c_seg, c_id, c_ns = _sums(q_seg, s.name_id[q], d)
    table = _SegTable(sg, run, r, run_cuts, cpu, q, np.searchsorted(q_seg, cpu), np.searchsorted(q_seg, cpu, side="right"))
    n = len(picked)
    step, kind, length = sg["step"], sg["kind"], sg["ns"]
    totals = np.zeros((n, len(KINDS)), dtype=np.int64)
    np.add.at(totals, (step, kind), length)
    top = _top_names(store, n, step, kind, length, g_seg, g_id, g_ns, c_seg, c_id, c_ns)
    cpu_t, gpu_t, comm_t, wait_t, queue_t = totals.T
    span = np.maximum(hi - lo, 1)
    bound = np.where((comm_t != 0) & (comm_t >= np.maximum(cpu_t, gpu_t + queue_t)), 0,
                     np.where(sync >= SYNC_SHARE * span, 1, np.where(cpu_t >= gpu_t + comm_t + queue_t, 2, 3)))
    bounds = np.searchsorted(step, np.arange(n + 1)).tolist()
    verdicts = ("comm", "sync", "cpu", "gpu")
    return [StepPath(index, row, a, e, h, verdicts[v], c, g, cm, w + qu, y, top[i], _PathSegments(table, bounds[i], bounds[i + 1]), qu)
            for i, (index, row, a, e, h, v, c, g, cm, w, qu, y) in enumerate(zip(
                picked, rows, lo.tolist(), end.tolist(), hi.tolist(), bound.tolist(), cpu_t.tolist(), gpu_t.tolist(),
                comm_t.tolist(), wait_t.tolist(), queue_t.tolist(), sync.tolist()))]


def _top_names(store: TraceStore, n: int, step: np.ndarray, kind: np.ndarray, length: np.ndarray,
               g_seg: list[int], g_id: list[int], g_ns: list[int], c_seg: list[int], c_id: list[int],
               c_ns: list[int]) -> list[list[tuple[str, str, int]]]:
    """Per step, its ``TOP`` heaviest (kind, name, ns) as ``_verdict`` ranks them: by time, then
    name, then the order the walk met them (segment by segment, names by id, the CPU outside
    operators last in its segment)."""
    seg = np.array(g_seg + c_seg, dtype=np.int64)
    ids = np.array(g_id + c_id, dtype=np.int64)
    ns = np.array(g_ns + c_ns, dtype=np.int64)
    covered = np.zeros(len(step), dtype=np.int64)
    np.add.at(covered, seg, ns)
    out_seg = np.flatnonzero((kind == _CPU) & (length > covered))
    strings = store.strings
    texts = sorted({strings[i] for i in set(ids.tolist())} | ({OUTSIDE} if len(out_seg) else set()))
    rank_of = {t: i for i, t in enumerate(texts)}
    id_rank = np.array([rank_of[strings[i]] for i in ids.tolist()], dtype=np.int64)
    seg = np.concatenate([seg, out_seg])
    rank = np.concatenate([id_rank, np.full(len(out_seg), rank_of.get(OUTSIDE, 0), dtype=np.int64)])
    ns = np.concatenate([ns, (length - covered)[out_seg]])
    sub = np.concatenate([ids, np.full(len(out_seg), np.iinfo(np.int64).max, dtype=np.int64)])
    pos = np.empty(len(seg), dtype=np.int64)
    pos[np.lexsort((sub, seg))] = np.arange(len(seg), dtype=np.int64)  # the order the walk met them
    st, kd = step[seg], kind[seg]
    out: list[list[tuple[str, str, int]]] = [[] for _ in range(n)]
    if not len(seg):
        return out
    order = np.lexsort((rank, kd, st))
    st, kd, rank, ns, pos = st[order], kd[order], rank[order], ns[order], pos[order]
    head = np.flatnonzero(np.concatenate(([True], (st[1:] != st[:-1]) | (kd[1:] != kd[:-1]) | (rank[1:] != rank[:-1]))))
    st, kd, rank = st[head], kd[head], rank[head]
    ns, pos = np.add.reduceat(ns, head), np.minimum.reduceat(pos, head)
    live = ns > 0
    st, kd, rank, ns, pos = st[live], kd[live], rank[live], ns[live], pos[live]
    order = np.lexsort((pos, rank, -ns, st))
    st, kd, rank, ns = st[order], kd[order], rank[order], ns[order]
    first = np.searchsorted(st, st, side="left")
    keep = np.arange(len(st)) - first < TOP
    for i, k, t, v in zip(st[keep].tolist(), kd[keep].tolist(), rank[keep].tolist(), ns[keep].tolist()):
        out[i].append((KINDS[k], texts[t], v))
    return out


def _sum_by(ids: np.ndarray, weights: np.ndarray) -> tuple[list[int], list[int]]:
    """Distinct ids (ascending) and the summed weights of each: one sort and one reduceat (called
    once per path segment, so fewer numpy calls than np.unique's)."""
    if not len(ids):
        return [], []
    order = np.argsort(ids, kind="stable")
    sid = ids[order]
    first = np.flatnonzero(np.concatenate(([True], sid[1:] != sid[:-1])))
    sums = np.add.reduceat(np.asarray(weights, dtype=np.int64)[order], first)
    return sid[first].tolist(), sums.tolist()


# ---- JSON --------------------------------------------------------------------------------------
class PathOp(msgspec.Struct):
    name: str
    kind: str  # cpu / gpu / comm
    ns: int


class CriticalStep(msgspec.Struct):
    index: int
    start_ns: int
    dur_ns: int  # the step
    path_ns: int  # its critical path: cpu + gpu + wait (longer than the step where its device work ran on)
    bound: str
    cpu_ns: int
    gpu_ns: int  # device work on the path, collectives included (comm_ns of it)
    comm_ns: int
    wait_ns: int  # queue_ns included
    queue_ns: int  # waiting behind device work launched before the step (counts for a gpu verdict)
    sync_serialised_ns: int
    top: list[PathOp]


class CriticalJson(msgspec.Struct):
    present: bool
    bound: str | None
    by_bound_ns: dict[str, int]
    steps_total: int  # steps in the range; ``steps`` lists an even sample when there are more than 2000
    steps: list[CriticalStep]


def critical_json(r: CriticalReport) -> CriticalJson:
    return CriticalJson(r.present, r.bound or None, dict(r.by_bound_ns), r.steps_total, [
        CriticalStep(st.index, st.start, st.step_end - st.start, st.end - st.start, st.bound, st.cpu_ns, st.gpu_ns + st.comm_ns, st.comm_ns,
                     st.wait_ns, st.queue_ns, st.sync_ns, [PathOp(n, k, v) for k, n, v in st.top]) for st in r.steps])
