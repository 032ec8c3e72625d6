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

A step is ``comm`` when collectives are the largest part of its path; ``sync`` when the blocking
calls on it serialise CPU work with device work that could have overlapped (per call, the smaller
of the CPU time after it and the device time before it, ≥ 25 % of the step); else ``cpu`` or
``gpu``, whichever is more of the path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec
import numpy as np

from vtui.analysis.roofline import launched_by
from vtui.store.devices import cpu_op_mask, name_mask
from vtui.store.grouping import distinct_ids
from vtui.store.store import TraceStore

BLOCKING = re.compile(r"^(cuda|hip)(StreamSynchronize|DeviceSynchronize|EventSynchronize|Memcpy|MemcpyWithStream|Memcpy2D)$")
COLLECTIVE = re.compile(r"(?i)nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv")
SYNC_SHARE = 0.25  # blocking calls that cost this share of the step make it sync-bound
MAX_HOPS = 4096  # CPU <-> device switches walked per step (each is O(log n)); past it the rest is "wait"
TOP = 5
MAX_STEPS = 2000  # steps walked per call (~0.1 ms each); more are sampled evenly, and the report says so


@dataclass
class Segment:
    kind: str  # cpu / gpu / comm / wait / queue (waiting behind device work launched before the step)
    track: int
    start: int
    end: int
    ns: int  # its time on the path (a run of device work: the work alone, its gaps are a wait segment)
    rows: tuple[int, ...] = ()  # the slices on the path in this segment (device work, the blocking call)


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
    segments: list[Segment] = field(default_factory=list)  # step end first
    queue_ns: int = 0  # of wait_ns: the step's device work queued behind work launched before it

    def path_rows(self) -> np.ndarray:
        """The slices on the path: the step, the device work, the blocking calls and the CPU operators."""
        rows = [self.row] + [r for seg in self.segments for r in seg.rows]
        return np.unique(np.array(rows, dtype=np.int64)) if rows else np.zeros(0, dtype=np.int64)


@dataclass
class CriticalReport:
    present: bool
    bound: str = ""  # the verdict covering most step time
    steps: list[StepPath] = field(default_factory=list)
    by_bound_ns: dict[str, int] = field(default_factory=dict)
    steps_total: int = 0  # steps given; ``steps`` holds an even sample of MAX_STEPS when there are more


class _Device:
    """Device work sorted by (stream, start), with the arrays a walk needs (whole trace, once)."""

    def __init__(self, store: TraceStore) -> None:
        s = store.slices
        rows, launch = launched_by(store)
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
        self.launch_track = np.where(has_launch, s.track[np.maximum(self.launch, 0)], -1)
        # Positions by their launch call's start: the work a step launched is one range of them.
        l_start = np.where(has_launch, s.start_ns[np.maximum(self.launch, 0)], np.iinfo(np.int64).max)
        self.by_launch = np.argsort(l_start, kind="stable")
        self.launch_start_sorted = l_start[self.by_launch]
        # Along each stream work runs in launch order: the running max of the launch starts is
        # sorted, so "the first work in a run launched inside the step" is one binary search.
        known = np.where(has_launch, l_start, np.iinfo(np.int64).min)
        self.l_acc = np.empty(n, dtype=np.int64)
        for t in distinct_ids(self.track) if n else []:
            sel = np.flatnonzero(self.track == t)  # contiguous: sorted by (stream, start)
            self.l_acc[sel[0] : sel[-1] + 1] = np.maximum.accumulate(known[sel[0] : sel[-1] + 1])
        # A wait on another stream's event: the work after the wait depends on the work before the record.
        self.event_src = _event_edges(store, self, l_start)
        ev = self.event_src >= 0
        ev_end = np.where(ev, self.end[np.maximum(self.event_src, 0)], np.iinfo(np.int64).min // 2)
        event_last = (ev & (ev_end <= self.start) & (ev_end > np.where(same, prev_end, ev_end - 1))
                      & (~has_launch | (ev_end > ready)))
        self.event_src = np.where(event_last, self.event_src, -1)
        ready = np.where(event_last, np.minimum(ev_end, self.start), ready)
        self.ready = ready  # when the last dependency let it go (unknown launch: the previous work's end)
        # The previous work on the stream arrived last: the walk stays on the stream.
        from_prev = same & (~has_launch | (prev_end >= ready)) & ~event_last
        self.head = np.maximum.accumulate(np.where(~from_prev, pos, 0)) if n else pos
        comm = name_mask(store, COLLECTIVE)[self.rows] if n else np.zeros(0, dtype=bool)
        dur = (self.end - self.start).astype(np.int64)
        gap = np.where(same, np.maximum(self.start - prev_end, 0), 0)
        self.comm = comm
        self.cum_gpu = np.concatenate([[0], np.cumsum(np.where(comm, 0, dur))])
        self.cum_comm = np.concatenate([[0], np.cumsum(np.where(comm, dur, 0))])
        self.cum_gap = np.concatenate([[0], np.cumsum(gap)])
        self.by_end = np.argsort(self.end, kind="stable")
        self.end_sorted = self.end[self.by_end]

    def last_launched(self, lo: int, hi: int) -> int:
        """Position of the work that ends last among the work launched in [lo, hi) (-1: none)."""
        a, b = np.searchsorted(self.launch_start_sorted, [lo, hi], side="left")
        if b <= a:
            return -1
        cand = self.by_launch[a:b]
        return int(cand[int(np.argmax(self.end[cand]))])


WAIT_EVENT = re.compile(r"^(cuda|hip)StreamWaitEvent$")
RECORD_EVENT = re.compile(r"^(cuda|hip)EventRecord$")


def _event_edges(store: TraceStore, dev: _Device, l_start: np.ndarray) -> np.ndarray:
    """Per device work position: the work it waits for through an event (-1: none). Kineto writes
    no event handles, so a ``StreamWaitEvent`` pairs with the last ``EventRecord`` before it on its
    thread; the record marks the last work that thread launched before it, and the wait holds the
    next work the thread launches, when that goes to another stream."""
    s = store.slices
    out = np.full(len(dev.rows), -1, dtype=np.int64)
    if not len(dev.rows) or not len(s):
        return out
    waits, records = np.flatnonzero(name_mask(store, WAIT_EVENT)), np.flatnonzero(name_mask(store, RECORD_EVENT))
    if not len(waits) or not len(records):
        return out
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
        s = store.slices
        rows = np.flatnonzero(name_mask(store, BLOCKING)) if len(s) else np.zeros(0, dtype=np.int64)
        target = np.full(len(rows), -1, dtype=np.int64)  # position in dev
        if len(rows) and len(dev.rows):
            st, en = s.start_ns[rows], s.end_ns[rows]
            # The device work that ended last while the call was blocked.
            k = np.searchsorted(dev.end_sorted, en, side="right") - 1
            cand = dev.by_end[np.maximum(k, 0)]
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
    """The critical path of each step (slice rows of the steps, as ``analyse_steps`` finds them)."""
    s = store.slices
    step_rows = np.asarray(step_rows, dtype=np.int64)
    if not len(step_rows):
        return CriticalReport(False)
    dev = _Device(store)
    blk = _Blocking(store, dev)
    out = CriticalReport(True, steps_total=len(step_rows))
    picked = np.arange(len(step_rows))
    if len(picked) > MAX_STEPS:
        picked = np.unique(np.linspace(0, len(step_rows) - 1, MAX_STEPS).round().astype(np.int64))
    for i, row in zip(picked.tolist(), step_rows[picked].tolist()):
        lo, hi, track = int(s.start_ns[row]), int(s.end_ns[row]), int(s.track[row])
        segs, sync_ns, end = _walk(dev, blk, track, lo, hi)
        out.steps.append(_summarise(store, i, row, lo, end, segs, sync_ns, hi))
    for st in out.steps:
        out.by_bound_ns[st.bound] = out.by_bound_ns.get(st.bound, 0) + (st.step_end - st.start)
    out.bound = max(sorted(out.by_bound_ns), key=lambda k: out.by_bound_ns[k])
    return out


def step_path(store: TraceStore, row: int) -> StepPath | None:
    """The critical path of the step holding slice ``row`` (the step itself, or a slice or GPU work
    inside its time); None when the trace has no steps or none holds it."""
    from vtui.analysis.steps import find_step_rows  # steps are found as Insights finds them

    s = store.slices
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
    ops = cpu_op_mask(store)
    rows = rows[ops[rows]]
    parent = store.slices.parent
    keep = np.ones(len(rows), dtype=bool)
    anc = parent[rows].astype(np.int64)
    for _ in range(512):
        live = anc >= 0
        if not live.any():
            break
        keep[live] &= ~ops[anc[live]]
        anc[live] = parent[anc[live]]
    return rows[keep]


def _summarise(store: TraceStore, index: int, row: int, lo: int, hi: int,
               segs: list[Segment], sync_ns: int, step_end: int) -> StepPath:
    s = store.slices
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
    cpu, gpu, comm, queue = totals["cpu"], totals["gpu"], totals["comm"], totals["queue"]
    wait = totals["wait"] + queue
    if comm and comm >= max(cpu, gpu + queue):
        bound = "comm"
    elif sync_ns >= SYNC_SHARE * max(step_end - lo, 1):
        bound = "sync"
    else:  # time queued behind earlier steps' device work is the GPU's
        bound = "cpu" if cpu >= gpu + comm + queue else "gpu"
    top = sorted(((k, n, v) for (k, n), v in names.items() if v > 0), key=lambda x: (-x[2], x[1]))[:TOP]
    return StepPath(index, row, lo, hi, step_end, bound, cpu, gpu, comm, wait, sync_ns, top, segs, queue)


def _sum_by(ids: np.ndarray, weights: np.ndarray) -> tuple[list[int], list[int]]:
    uniq, inv = np.unique(ids, return_inverse=True)
    sums = np.bincount(inv, weights=weights, minlength=len(uniq))
    return uniq.tolist(), [int(round(v)) for v in sums.tolist()]


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
