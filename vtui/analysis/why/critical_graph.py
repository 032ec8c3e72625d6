"""The critical path's dependency graph, built once per store: device work sorted by (stream, start)
with its launch calls and per-stream runs (a piece of work that starts right after the one before
it), the blocking host calls (``cuda|hip`` Stream / Device / Event ``Synchronize``, a synchronous
``Memcpy``) with the device work each waited for, and stream-wait-event edges. The per-stream
columns come from one pass of the C helper (``_vtui_fastcols.device_runs``); numpy's passes are the
reference and the fallback."""


from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vtui.analysis.base.comm import COMM_KERNEL
from vtui.analysis.base.launched import device_work_launches
from vtui.store.devices import string_mask
from vtui.store.grouping import distinct_ids
from vtui.store.store import TraceStore

try:
    from _vtui_fastcols import device_runs as c_device_runs
except ImportError:  # pragma: no cover - depends on the install (an older build lacks it too)
    c_device_runs = None


@dataclass(frozen=True)
class PathColumns:
    """The slice columns the walk reads, as plain arrays: a store reopened from the cache holds
    np.memmap columns, and each fancy index of a memmap runs Python-level code (a few µs), which
    the per-step walk pays thousands of times."""

    start_ns: np.ndarray
    end_ns: np.ndarray
    track: np.ndarray
    name_id: np.ndarray

    def __len__(self) -> int:
        return len(self.start_ns)


def path_columns(store: TraceStore) -> PathColumns:
    got = store.derived.get("critical_cols")
    if got is None:
        s = store.slices
        got = store.derived["critical_cols"] = PathColumns(*(np.asarray(getattr(s, n)) for n in ("start_ns", "end_ns", "track", "name_id")))
    return got


def names_matching(store: TraceStore, regex: re.Pattern[str]) -> np.ndarray:
    """Per interned string: ``regex.search`` of it (the walk asks about a few rows, or none)."""
    return store.memo(("critical_named", regex.pattern), lambda: string_mask(store, regex.search))


def rows_named(store: TraceStore, regex: re.Pattern[str]) -> np.ndarray:
    """The slice rows whose name matches; no pass over the slices when no name does (a trace
    without syncs or events)."""
    named = names_matching(store, regex)
    if not named.any():
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(named[path_columns(store).name_id])


BLOCKING = re.compile(r"^(cuda|hip)(StreamSynchronize|DeviceSynchronize|EventSynchronize|Memcpy|MemcpyWithStream|Memcpy2D)$")


COLLECTIVE = COMM_KERNEL  # the one communication rule (vtui.analysis.base.comm)


LAUNCH_CHUNK = 1 << 22  # device work laid out at once by last_launched_all (memory bound)


class DeviceWork:
    """Device work sorted by (stream, start), with the arrays a walk needs (whole trace, once)."""

    def __init__(self, store: TraceStore, use_c: bool = True) -> None:
        s = path_columns(store)
        self._s = s
        rows, launch = device_work_launches(store)
        got = self._runs_c(store, s, rows, launch) if use_c and c_device_runs is not None else None
        if got is None:
            got = self._runs_numpy(store, s, rows, launch)
        ready, l_start, l_sorted = got
        ready = self._sync_launched(store, ready, l_start)
        n = len(self.rows)
        # Positions by their launch call's start: the work a step launched is one range of them.
        self.by_launch = np.arange(n, dtype=np.int64) if l_sorted else np.argsort(l_start, kind="stable")
        self.launch_start_sorted = l_start if l_sorted else l_start[self.by_launch]
        # A wait on another stream's event: the work after the wait depends on the work before the record.
        self.event_src = event_edges(store, self, l_start)
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

    def _sync_launched(self, store: TraceStore, ready: np.ndarray, l_start: np.ndarray) -> np.ndarray:
        """A synchronous copy's call (``cudaMemcpy``, ``hipMemcpyWithStream``) enqueues the copy when
        it starts and returns only after the copy ends, so its end (the asynchronous launch's
        release) is no dependency: the copy was released at the call's start and waited behind the
        stream's earlier work from there. Its run goes on through that work (the walk stays on the
        stream instead of charging the blocked call to the CPU)."""
        n = len(self.rows)
        if not n:
            return ready
        blocking = names_matching(store, BLOCKING)
        has_launch = self.launch >= 0
        sync_launch = has_launch & blocking[path_columns(store).name_id[np.maximum(self.launch, 0)]]
        if not sync_launch.any():  # most traces: no synchronous copy, nothing changes
            return ready
        ready = np.where(sync_launch, np.minimum(l_start, self.start), ready)
        same, prev_end, _ = self._neighbours()
        from_prev = same & (~has_launch | (prev_end >= ready))
        self.head = np.maximum.accumulate(np.where(~from_prev, np.arange(n), 0))
        return ready

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

    def _runs_c(self, store: TraceStore, s: PathColumns, rows: np.ndarray, launch: np.ndarray) -> tuple | None:
        """The per-stream columns in one pass of the C helper (``device_runs``), into as little fresh
        memory as can be (page faults are most of its time): the work's own columns are views of
        the slices' where its rows are consecutive (one block per stream, the usual case); no
        collective names, no comm columns (zeros). None where it cannot run."""
        cols = [np.ascontiguousarray(c) for c in (s.start_ns, s.end_ns, s.track, s.name_id)]
        if [c.dtype for c in cols] != [np.int64, np.int64, np.int32, np.int32]:
            return None
        named_comm = names_matching(store, COLLECTIVE)
        comm_name = np.ascontiguousarray(named_comm).view(np.uint8)
        n = len(rows)
        i64 = [np.empty(n, dtype=np.int64) for _ in range(5)]
        cum_gpu, cum_gap = np.empty(n + 1, dtype=np.int64), np.empty(n + 1, dtype=np.int64)
        drops: np.ndarray = np.empty(n, dtype=np.int32)
        # the helper knows collectives by their comm column's length: none without device work
        with_comm = bool(named_comm.any()) and n > 0
        cum_comm = np.empty(n + 1 if with_comm else 0, dtype=np.int64)
        comm = np.empty(n if with_comm else 0, dtype=bool)
        rows, launch = np.ascontiguousarray(rows, dtype=np.int64), np.ascontiguousarray(launch, dtype=np.int64)
        consecutive = n > 0 and int(rows[-1]) - int(rows[0]) == n - 1  # ascending (device_work_launches's), so rows[0]..rows[-1]
        flags = c_device_runs(rows, launch, *cols, comm_name, *i64[:4], cum_gpu, cum_comm, cum_gap, drops, comm.view(np.uint8))
        if not flags & 1:  # not in (stream, start) order: sorted, then again
            order = np.lexsort((s.start_ns[rows], s.track[rows]))
            rows, launch, consecutive = rows[order], launch[order], False
            flags = c_device_runs(rows, launch, *cols, comm_name, *i64[:4], cum_gpu, cum_comm, cum_gap, drops,
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

    def _runs_numpy(self, store: TraceStore, s: PathColumns, rows: np.ndarray, launch: np.ndarray) -> tuple:
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
        comm = names_matching(store, COLLECTIVE)[s.name_id[self.rows]]
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
            at, which = expand(a[sel], b[sel] - 1)
            ends = self.end_by_launch[at]
            starts = np.flatnonzero(np.concatenate(([True], which[1:] != which[:-1])))
            top = np.maximum.reduceat(ends, starts)
            idx = np.arange(len(at), dtype=np.int64)
            firsts = np.minimum.reduceat(np.where(ends == top[which], idx, len(at)), starts)
            out[sel] = self.by_launch[at[firsts]]
        return out


WAIT_EVENT = re.compile(r"^(cuda|hip)StreamWaitEvent$")


RECORD_EVENT = re.compile(r"^(cuda|hip)EventRecord$")


def event_edges(store: TraceStore, dev: DeviceWork, l_start: np.ndarray) -> np.ndarray:
    """Per device work position: the work it waits for through an event (-1: none). Kineto writes
    no event handles, so a ``StreamWaitEvent`` pairs with the last ``EventRecord`` before it on its
    thread; the record marks the last work that thread launched before it, and the wait holds the
    next work the thread launches, when that goes to another stream."""
    s = path_columns(store)
    none = np.broadcast_to(np.int64(-1), (len(dev.rows),))  # no waits (most traces): no column to fill
    if not len(dev.rows) or not len(s):
        return none
    waits, records = rows_named(store, WAIT_EVENT), rows_named(store, RECORD_EVENT)
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


class BlockingCalls:
    """Per CPU thread: the blocking calls that waited on device work, sorted by end, and that work."""

    def __init__(self, store: TraceStore, dev: DeviceWork) -> None:
        s = path_columns(store)
        rows = rows_named(store, BLOCKING)
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


def build_graph(store: TraceStore) -> tuple[DeviceWork, BlockingCalls]:
    """The whole trace's device work and blocking calls, once per store."""
    got = store.derived.get("critical_graph")
    if got is None:
        dev = DeviceWork(store)
        got = store.derived["critical_graph"] = (dev, BlockingCalls(store, dev))
    return got


def expand(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the ranges [a, b] (inclusive), concatenated, and the range each came from."""
    lens = np.maximum(b - a + 1, 0)
    total = int(lens.sum())
    which = np.repeat(np.arange(len(a), dtype=np.int64), lens)
    starts = np.cumsum(lens) - lens
    return np.arange(total, dtype=np.int64) - starts[which] + a[which], which
