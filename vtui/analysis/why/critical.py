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

All the steps walk together (``walk_all``): each numpy pass takes one hop of every step still
walking, and the names on the paths are summed over every step at once; ``walk_one`` is the same walk
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

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.why.critical_graph import DeviceWork, build_graph, expand, path_columns
from vtui.analysis.why.critical_handover import build_handovers
from vtui.analysis.why.critical_walk import (
    KINDS,
    SEG_COMM_RUN,
    SEG_CPU,
    SEG_GPU_RUN,
    SEG_ONE_ROW,
    Segment,
    walk_all,
    walk_one,
)
from vtui.store.devices import cpu_op_mask
from vtui.store.store import TraceStore

SYNC_SHARE = 0.25  # blocking calls that cost this share of the step make it sync-bound
TOP = 5
MAX_STEPS = 2000  # steps walked per call (~0.1 ms each); more are sampled evenly, and the report says so


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


def analyse_critical(store: TraceStore, step_rows: np.ndarray) -> CriticalReport:
    """The critical path of each step (slice rows of the steps, as ``analyse_steps`` finds them);
    once per store and steps (the report is shared: callers do not change it)."""
    step_rows = np.asarray(step_rows, dtype=np.int64)
    key = ("critical_report", step_rows.tobytes())
    got = store.derived.get(key)
    if got is None:
        got = store.derived[key] = _analyse(store, step_rows)
    return got


def _analyse(store: TraceStore, step_rows: np.ndarray) -> CriticalReport:
    s = path_columns(store)
    if not len(step_rows):
        return CriticalReport(False)
    dev, blk = build_graph(store)
    out = CriticalReport(True, steps_total=len(step_rows))
    picked = np.arange(len(step_rows))
    if len(picked) > MAX_STEPS:
        picked = np.unique(np.linspace(0, len(step_rows) - 1, MAX_STEPS).round().astype(np.int64))
    rows = step_rows[picked]
    lo, hi = s.start_ns[rows].astype(np.int64), s.end_ns[rows].astype(np.int64)
    segs, sync, end = walk_all(dev, blk, s.track[rows].astype(np.int64), lo, hi, build_handovers(store))
    out.steps = _summarise_all(store, dev, picked.tolist(), rows.tolist(), lo, end, hi, sync, segs)
    for st in out.steps:
        # a step's time runs to the end of the work it launched, as serving counts it
        out.by_bound_ns[st.bound] = out.by_bound_ns.get(st.bound, 0) + (max(st.step_end, st.end) - st.start)
    out.bound = max(sorted(out.by_bound_ns), key=lambda k: out.by_bound_ns[k])
    return out


def walk_steps_one_by_one(store: TraceStore, step_rows: np.ndarray) -> list[StepPath]:
    """The reference for ``_analyse``'s batched walk: ``walk_one`` and ``_summarise`` step by step
    (the tests hold the two equal)."""
    s = path_columns(store)
    dev, blk = build_graph(store)
    hov = build_handovers(store)
    out = []
    for i, row in enumerate(np.asarray(step_rows, dtype=np.int64).tolist()):
        lo, hi, track = int(s.start_ns[row]), int(s.end_ns[row]), int(s.track[row])
        segs, sync_ns, end = walk_one(dev, blk, track, lo, hi, hov)
        out.append(_summarise(store, i, row, lo, end, segs, sync_ns, hi))
    return out


def step_path(store: TraceStore, row: int) -> StepPath | None:
    """The critical path of the step holding slice ``row`` (the step itself, or a slice or GPU work
    inside its time); None when the trace has no steps or none holds it."""
    from vtui.analysis.steps.detect import find_step_rows  # steps are found as Insights finds them

    s = path_columns(store)
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
    s = path_columns(store)
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
            elif rk == SEG_ONE_ROW:
                rows = sg["a"][k : k + 1]
            elif m >= 0:
                rows = self.cpu_rows[int(self.cpu_cuts[m]) : int(self.cpu_cuts_end[m])]
            out.append(Segment(KINDS[kind], track, start, end, ns, rows))
        return out


OUTSIDE = "(CPU outside operators)"  # the CPU time on a path that no operator covers


def _summarise_all(store: TraceStore, dev: DeviceWork, picked: list[int], rows: list[int], lo: np.ndarray,
                   end: np.ndarray, hi: np.ndarray, sync: np.ndarray, sg: dict[str, np.ndarray]) -> list[StepPath]:
    """``_summarise`` of every step from the segment columns: the totals, the names' time and each
    step's heaviest names and verdict worked out by numpy over all segments at once; then one
    ``StepPath`` per step, its segments made when read (``_PathSegments``)."""
    s = path_columns(store)
    # Device work on the path: each run's work (of its kind), clipped to the segment's start.
    run = np.flatnonzero((sg["rk"] == SEG_GPU_RUN) | (sg["rk"] == SEG_COMM_RUN))
    at, which = expand(sg["a"][run], sg["b"][run])
    keep = dev.comm[at] == (sg["rk"][run] == SEG_COMM_RUN)[which]
    at, which = at[keep], which[keep]
    r = dev.rows[at]
    d = np.maximum(s.end_ns[r] - np.maximum(s.start_ns[r], sg["start"][run][which]), 0)
    g_seg, g_id, g_ns = _sums(run[which], s.name_id[r], d)
    run_cuts = np.searchsorted(which, np.arange(len(run) + 1))
    # CPU time on the path: the outermost operators overlapping each CPU segment.
    cpu = np.flatnonzero((sg["kind"] == SEG_CPU) & (sg["ns"] > 0))
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
    out_seg = np.flatnonzero((kind == SEG_CPU) & (length > covered))
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
