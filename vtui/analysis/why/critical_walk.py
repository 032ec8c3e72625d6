"""The critical path's walk back from each step's end: on a thread back to the last blocking call
that waited, through it to the device work it waited for, back along the stream through a run of
work (prefix sums, not a Python step per kernel), and at a run's first piece to its launch call.


``walk_all`` walks every step together (each numpy pass takes one hop of every step still walking);
``walk_one`` is the same walk one step at a time, the reference the tests hold it equal to."""


from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vtui.analysis.why.critical_graph import BlockingCalls, DeviceWork
from vtui.analysis.why.critical_handover import HandOvers

SEG_CPU, SEG_GPU, SEG_COMM, SEG_WAIT, SEG_QUEUE = range(5)  # a segment's kind, as an index into KINDS
SEG_NO_ROWS, SEG_GPU_RUN, SEG_COMM_RUN, SEG_ONE_ROW = range(4)  # what a segment's rows are: none, a run's, one slice
MAX_HOPS = 4096  # CPU <-> device switches walked per step (each is O(log n)); past it the rest is "wait"


@dataclass
class Segment:
    kind: str  # cpu / gpu / comm / wait / queue (waiting behind device work launched before the step)
    track: int
    start: int
    end: int
    ns: int  # its time on the path (a run of device work: the work alone, its gaps are a wait segment)
    rows: Sequence[int] | np.ndarray = ()  # the slices on the path in this segment (device work, the blocking call)


def walk_one(dev: DeviceWork, blk: BlockingCalls, track: int, lo: int, hi: int,
             hov: HandOvers | None = None) -> tuple[list[Segment], int, int]:
    """Segments of the path back to ``lo`` from the step's end: ``hi`` on ``track``, or the end of the
    device work the step launched where that is later (the CPU ran ahead); the serialised sync
    time; the path's end. Where the thread waited on another thread (``hov``), the path goes on
    over there and comes back where that thread's work began."""
    segs: list[Segment] = []
    sync_ns, cpu_after = 0, 0
    where, x, pos = "cpu", hi, -1
    last = dev.last_launched(lo, hi)
    if last >= 0 and dev.end[last] > hi:
        where, x, pos = "gpu", int(dev.end[last]), last
    end = x
    pending: list[int] = []  # CPU time after each blocking call, until its device time is known
    ret_track, ret_at = -1, -1  # where to go back to once the worker's part is walked (-1: none)
    for _ in range(MAX_HOPS):
        if x <= lo:
            break
        if ret_at >= 0 and x < ret_at:  # the walk went back past the hand-over: it is over
            ret_track, ret_at = -1, -1
        if where == "cpu":
            floor = max(lo, ret_at)
            hit = blk.last_before(track, x, floor)
            hand = hov.last_before(track, x, floor) if hov is not None else None
            if hand is not None and (hit is None or hand[1] > hit[2]):
                h_st, h_en, worker, ready = hand
                if h_en < x:
                    segs.append(Segment("cpu", track, h_en, x, x - h_en))
                if ready < h_en:
                    segs.append(Segment("wait", track, max(ready, lo), h_en, h_en - max(ready, lo)))
                ret_track, ret_at = track, max(h_st, lo)
                track, x = worker, max(ready, lo)
                continue
            if hit is None:
                if x > floor:
                    segs.append(Segment("cpu", track, floor, x, x - floor))
                if floor > lo:  # the worker's part is done: back on the waiting thread
                    track, x = ret_track, floor
                    ret_track, ret_at = -1, -1
                    continue
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


# ---- all steps at once -------------------------------------------------------------------------
# The walk above, one hop of every step per numpy pass (``walk_one`` is the reference, tested equal):
# the segments come out as columns, ordered per step as ``walk_one`` appends them.
KINDS = ("cpu", "gpu", "comm", "wait", "queue")


class SegmentLog:
    """Segment columns, appended a numpy batch at a time."""

    NAMES = ("step", "hop", "sub", "kind", "track", "start", "end", "ns", "rk", "a", "b")

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, ...]] = []

    def add(self, mask: np.ndarray, steps: np.ndarray, hop: int, sub: int, kind: int, track, start, end, ns,
            rows: tuple = (SEG_NO_ROWS, -1, -1)) -> None:
        """Segments of ``steps[mask]`` (the other arguments: arrays over ``steps``, or scalars);
        ``rows`` is (what the rows are, first, last), as ``SEG_NO_ROWS`` .. ``SEG_ONE_ROW`` say."""
        if not mask.any():
            return
        rk, a, b = rows
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


@dataclass(frozen=True)
class _Walking:
    """Every step's walk so far, as arrays over the steps, changed in place by each hop."""

    track: np.ndarray  # the thread or stream the walk is on
    x: np.ndarray  # how far back it has got
    lo: np.ndarray  # the step's start: where the walk ends
    active: np.ndarray  # still walking
    on_gpu: np.ndarray  # on device work (``pos``), else on a thread
    pos: np.ndarray  # the device work it is on
    pend_on: np.ndarray  # a blocking call's CPU time waits for its device time (``pend``)
    pend: np.ndarray
    sync: np.ndarray  # the serialised sync time
    ret: tuple[np.ndarray, np.ndarray]  # hand-over: (track, at) to go back to, -1 where none


def walk_all(dev: DeviceWork, blk: BlockingCalls, track: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             hov: HandOvers | None = None) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """``walk_one`` of every step (arrays over the steps): the segment columns, the sync time, the path's end."""
    n = len(lo)
    segs = SegmentLog()
    steps = np.arange(n, dtype=np.int64)
    track, x = track.astype(np.int64).copy(), hi.astype(np.int64).copy()
    last = dev.last_launched_all(lo, hi)
    on_gpu = (last >= 0) & (dev.end[np.maximum(last, 0)] > hi) if len(dev.rows) else np.zeros(n, dtype=bool)
    x[on_gpu] = dev.end[last[on_gpu]]
    pos = np.where(on_gpu, last, -1)
    end = x.copy()
    active = np.ones(n, dtype=bool)
    pend_on, pend, sync = np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    ret = (np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))  # hand-over: (track, at) to go back to
    walking = _Walking(track, x, lo, active, on_gpu, pos, pend_on, pend, sync, ret)
    for hop in range(MAX_HOPS):
        active &= x > lo
        if not active.any():
            break
        past = (ret[1] >= 0) & (x < ret[1])  # went back past the hand-over: it is over
        ret[0][past], ret[1][past] = -1, -1
        c, g = np.flatnonzero(active & ~on_gpu), np.flatnonzero(active & on_gpu)
        if len(c):
            _cpu_hop(dev, blk, hov, segs, hop, c, walking)
        if len(g):
            _gpu_hop(dev, segs, hop, g, walking)
    left = active & (x > lo)  # walked MAX_HOPS hops and not there yet: the rest is waiting
    segs.add(left, steps, MAX_HOPS, 0, SEG_WAIT, track, lo, x, x - lo)
    return segs.columns(), sync, end


def _cpu_hop(dev: DeviceWork, blk: BlockingCalls, hov: HandOvers | None, segs: SegmentLog, hop: int,
             c: np.ndarray, w: _Walking) -> None:
    """One hop back of the steps ``c``, each on a thread."""
    track, x, lo, active, on_gpu, pos, pend_on, pend, ret = (w.track, w.x, w.lo, w.active, w.on_gpu, w.pos,
                                                               w.pend_on, w.pend, w.ret)
    xc, lc, tc = x[c], lo[c], track[c]
    ret_track, ret_at = ret
    fl = np.maximum(lc, ret_at[c])
    ok, row, st, en, tgt = blk.last_before_all(tc, xc, fl)
    if hov is not None and hov.by_track:
        hk, h_st, h_en, h_wk, h_rd = hov.last_before_all(tc, xc, fl)
        hand = hk & (~ok | (h_en > en))
    else:
        hand = np.zeros(len(c), dtype=bool)
    if hand.any():  # waited on another thread: over there, back here where its work began
        segs.add(hand & (h_en < xc), c, hop, 0, SEG_CPU, tc, h_en, xc, xc - h_en)
        r0 = np.maximum(h_rd, lc)
        segs.add(hand & (h_rd < h_en), c, hop, 1, SEG_WAIT, tc, r0, h_en, h_en - r0)
        k = c[hand]
        ret_track[k], ret_at[k] = tc[hand], np.maximum(h_st, lc)[hand]
        track[k], x[k] = h_wk[hand], r0[hand]
        ok = ok & ~hand
    miss = ~ok & ~hand
    segs.add(miss & (xc > fl), c, hop, 0, SEG_CPU, tc, fl, xc, xc - fl)
    back = miss & (fl > lc)
    k = c[back]
    track[k], x[k] = ret_track[k], fl[back]
    ret_track[k], ret_at[k] = -1, -1
    stop = miss & ~back
    x[c[stop]] = lc[stop]
    active[c[stop]] = False
    if not ok.any():
        return
    h = ok
    from_en = np.maximum(en, lc)
    segs.add(h & (en < xc), c, hop, 0, SEG_CPU, tc, from_en, xc, xc - from_en)
    g_end = np.zeros(len(c), dtype=np.int64)
    g_end[h] = dev.end[tgt[h]]
    w0 = np.maximum(g_end, lc)
    segs.add(h & (g_end < en), c, hop, 1, SEG_WAIT, tc, w0, en, en - w0, (SEG_ONE_ROW, row, row))
    k = c[h]
    pend[k], pend_on[k] = (xc - from_en)[h], True
    on_gpu[k], pos[k], x[k] = True, tgt[h], np.minimum(g_end, en)[h]


def _gpu_hop(dev: DeviceWork, segs: SegmentLog, hop: int, g: np.ndarray, w: _Walking) -> None:
    """One hop back of the steps ``g``, each on device work."""
    track, x, lo, active, on_gpu, pos, pend_on, pend, sync = (w.track, w.x, w.lo, w.active, w.on_gpu, w.pos,
                                                               w.pend_on, w.pend, w.sync)
    p, xg, lg = pos[g], x[g], lo[g]
    h = dev.head[p]
    t = dev.track[p]
    own = _bisect(dev.l_acc, h, p + 1, lg, right=False)
    behind = own > p  # all of it was launched before the step: the step waits behind that queue
    segs.add(behind, g, hop, 0, SEG_QUEUE, t, lg, xg, xg - lg)
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
    segs.add(go & (gpu != 0), g, hop, 1, SEG_GPU, t, start, xg, gpu, (SEG_GPU_RUN, f, p))
    segs.add(go & (comm != 0), g, hop, 2, SEG_COMM, t, start, xg, comm, (SEG_COMM_RUN, f, p))
    segs.add(go & (gap != 0), g, hop, 3, SEG_WAIT, t, start, xg, gap)
    popped = go & pend_on[g]
    k = g[popped]
    sync[k] += np.minimum(pend[k], (gpu + comm)[popped])
    pend_on[k] = False
    segs.add(queued & (start > lg), g, hop, 4, SEG_QUEUE, t, lg, start, start - lg)
    done = queued.copy()
    rest = go & ~queued
    ev = dev.event_src[h]
    by_event = rest & (ev >= 0) & (dev.start[h] >= lg)  # it waited on another stream's event: over there
    ready = dev.ready[h]
    w0 = np.maximum(ready, lg)
    segs.add(by_event & (ready < start), g, hop, 4, SEG_WAIT, t, w0, start, start - w0)
    k = g[by_event]
    pos[k], x[k] = ev[by_event], ready[by_event]
    stop = rest & ~by_event & ((dev.start[h] < lg) | (dev.launch[h] < 0))
    segs.add(stop & (start > lg), g, hop, 4, SEG_WAIT, t, lg, start, start - lg)
    done |= stop
    to_cpu = rest & ~by_event & ~stop
    segs.add(to_cpu & (ready < start), g, hop, 4, SEG_WAIT, t, w0, start, start - w0)
    k = g[to_cpu]
    on_gpu[k], x[k], track[k] = False, ready[to_cpu], dev.launch_track[h[to_cpu]]
    k = g[done]
    x[k] = lg[done]
    active[k] = False
