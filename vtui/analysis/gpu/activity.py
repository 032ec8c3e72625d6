"""GPU (and other accelerator) activity over a range: busy % per device and stream, memcpy/memset
share and direction, kernel-launch delay, idle time split by cause, and kernel time by precision.

Device work is what `vtui.store.devices` says it is (Kineto's kernel / memcpy / memset categories,
MTIA's on-device events; else the leaf slices on device tracks), selected by the one range rule
(`vtui.store.slicetime`: zero-length kernels count). Busy % is the union of their intervals clipped
to the range, given over two denominators: the range, and the GPU-active span (first GPU work start
to last GPU work end inside the range, as HTA and TraceLens report it). Launches are paired with
their CPU runtime call by flow arrows (ac2g / launch) and, where a flow is missing, by the
``correlation`` arg both carry; the delay is given from the call's start and from its end (HTA's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.base.comm import COMM_KERNEL, comm_rows
from vtui.analysis.base.launched import device_work_launches, launch_of
from vtui.analysis.base.stats import Stats, merge_intervals, pct
from vtui.store.devices import (
    BLOCKING_SYNC_NAME,
    KERNEL,
    MEMCPY,
    MEMSET,
    device_work_kinds,
    name_mask,
    runtime_mask,
)
from vtui.store.grouping import distinct_ids
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore

# Host calls that order a stream after an event or a value (they do not block the host).
STREAM_WAIT = re.compile(r"(?i)^(?:cuda|hip|cu)StreamWait(?:Event|Value(?:32|64)?)(?:_v\d+|_ptsz)?$")
# A gap the CPU caused shorter than this is per-op cost (a launch costs microseconds, an eager op's
# Python and dispatch tens to hundreds of them); longer ones are the host busy with something else
# (data loading, a blocking call, scheduling), which fusion or graphs do not remove.
LAUNCH_SIZED_GAP_NS = 1_000_000
_DIRECTION = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|AtoH|HtoA)\b")

# Kernel name -> numeric precision. Order matters: the first class whose pattern matches wins.
PRECISION_CLASSES: list[tuple[str, str]] = [
    ("communication", COMM_KERNEL.pattern),  # collectives: their dtype is not a compute precision
    ("fp8", r"(?i)fp8|e4m3|e5m2"),
    ("int8", r"(?i)int8|i8i8|s8s8|imma"),
    ("tf32", r"(?i)tf32"),
    ("fp16/bf16", r"(?i)bf16|fp16|f16|half|bfloat16|hmma|h884|h1688|h16816|s884gemm|s1688gemm|s16816gemm"),
    ("fp64", r"(?i)dgemm|fp64|f64|double"),
    ("fp32", r"(?i)sgemm|fp32|f32|float"),
]
_PRECISION = [(label, re.compile(p, re.IGNORECASE if label == "communication" else 0))
              for label, p in PRECISION_CLASSES]


def precision_of(name: str) -> str:
    for label, regex in _PRECISION:
        if regex.search(name):
            return label
    return "unspecified"


@dataclass
class Busy:
    label: str
    busy_ns: int
    busy_pct: float  # of the range
    kernel_ns: int
    active_ns: int = 0  # first work start -> last work end, inside the range
    busy_pct_of_active: float = 0.0  # busy_ns / active_ns (HTA's and TraceLens's denominator)


@dataclass
class NameTime:
    name: str
    total_ns: int
    count: int
    pct: float


@dataclass
class GpuReport:
    present: bool
    range_ns: int = 0
    busy_ns: int = 0  # union of all GPU work over the range (any GPU busy)
    busy_pct: float = 0.0  # mean of the devices' busy % (with one device: busy_ns / range)
    any_busy_pct: float = 0.0  # busy_ns / range
    busy_pct_of_active: float = 0.0  # mean of the devices' busy % of their GPU-active span
    active_ns: int = 0  # first GPU work start -> last GPU work end (any device), inside the range
    kernel_busy_pct: float = 0.0  # union of kernel intervals only (no memcpy/memset) / range
    devices: list[Busy] = field(default_factory=list)
    streams: list[Busy] = field(default_factory=list)
    kernel_ns: int = 0  # sums of clipped durations
    memcpy_ns: int = 0
    memset_ns: int = 0
    comm_ns: int = 0  # communication kernels (`vtui.analysis.base.comm`), part of kernel_ns
    comm_pct: float = 0.0  # of kernel_ns
    memcpy_pct: float = 0.0  # of all GPU work time (kernel + memcpy + memset)
    memset_pct: float = 0.0
    memcpy_by_direction: dict[str, int] = field(default_factory=dict)
    memcpy_bytes_by_direction: dict[str, int] = field(default_factory=dict)  # from the "bytes" arg, where given
    launch: Stats | None = None  # GPU start - CPU launch call start ("from call start")
    launch_after_return: Stats | None = None  # GPU start - CPU launch call end ("from call end", HTA's); asynchronous calls only
    launches_paired: int = 0
    gpu_ops_in_range: int = 0
    worst_launch_kernel: str = ""
    # Idle gaps between work, per device, by cause (`_idle_split`): they add up to the idle time
    # between the first and the last work.
    idle_cpu_launch_ns: int = 0  # until the next work's launch call started: waiting for the CPU
    idle_cpu_gaps: int = 0  # the gaps that waited for the CPU
    idle_cpu_short_ns: int = 0  # of idle_cpu_launch_ns: in per-op gaps (< LAUNCH_SIZED_GAP_NS of CPU wait)
    idle_cpu_short_gaps: int = 0
    idle_queued_ns: int = 0  # launched, then queued (launch latency, work the trace does not show)
    idle_dependency_ns: int = 0  # launched, then behind a stream wait (event / value) issued before it
    idle_dependencies: list[tuple[str, int]] = field(default_factory=list)  # that time by the wait call
    idle_clock_offset_ns: int = 0  # gaps whose next work started before its launch call: host/device clocks
    idle_unknown_ns: int = 0  # gaps whose next work has no known launch
    idle_edges_ns: int = 0  # range time before the first / after the last work, per device
    precision: list[NameTime] = field(default_factory=list)  # kernel time per precision class
    top_kernels: list[NameTime] = field(default_factory=list)


gpu_work_kinds = device_work_kinds  # per slice: 0, KERNEL, MEMCPY or MEMSET


def launch_pairs(store: TraceStore, rows: np.ndarray) -> np.ndarray:
    """CPU launch slice row per GPU row (-1 where unknown): flows first, then correlation ids.
    The pairing is made once per store for all device work (`vtui.analysis.base.launched`), so GPU
    insights, the call tree, the lists and the serving figures share it."""
    return launch_of(store)[np.asarray(rows, dtype=np.int64)]


def _device_key(store: TraceStore, track: int) -> tuple:
    t = store.tracks[track]
    return (t.source, t.pid)


@dataclass
class IdleSplit:
    """One device's idle time inside the range, by cause (see `_idle_split`)."""

    cpu_launch: int = 0
    cpu_gaps: int = 0
    cpu_short: int = 0
    cpu_short_gaps: int = 0
    queued: int = 0
    dependency: int = 0
    clock_offset: int = 0
    unknown: int = 0
    edges: int = 0
    dependency_by_call: dict[str, int] = field(default_factory=dict)

    def add(self, other: IdleSplit) -> None:
        for name in ("cpu_launch", "cpu_gaps", "cpu_short", "cpu_short_gaps", "queued", "dependency", "clock_offset",
                     "unknown", "edges"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for k, v in other.dependency_by_call.items():
            self.dependency_by_call[k] = self.dependency_by_call.get(k, 0) + v


def _ordering_calls(store: TraceStore) -> np.ndarray:
    """Rows of the host calls that make a stream wait on an event or value, sorted by start."""
    rows = np.flatnonzero(name_mask(store, STREAM_WAIT) & runtime_mask(store))
    return rows[np.argsort(store.slices.start_ns[rows], kind="stable")]


def _waits_before(store: TraceStore, lrow: np.ndarray) -> np.ndarray:
    """Per launch call: the last stream-wait call on its thread issued after the thread's previous
    launch and before this one (-1 none). Per thread, so a search per thread, not per gap."""
    s = store.slices
    out = np.full(len(lrow), -1, dtype=np.int64)
    waits = _ordering_calls(store)
    if not len(waits) or not len(lrow):
        return out
    _work, launches = device_work_launches(store)
    launches = np.unique(launches[launches >= 0])
    for track in np.unique(s.track[lrow]).tolist():
        here = np.flatnonzero(s.track[lrow] == track)
        w = waits[s.track[waits] == track]
        if not len(w):
            continue
        mine = launches[s.track[launches] == track]
        mine_start = np.sort(s.start_ns[mine])
        at = s.start_ns[lrow[here]]
        prev_i = np.searchsorted(mine_start, at, side="left") - 1  # the thread's launch before this one
        prev = np.where(prev_i >= 0, mine_start[np.maximum(prev_i, 0)], np.iinfo(np.int64).min)
        ws = s.start_ns[w]
        j = np.searchsorted(ws, at, side="left") - 1  # the last wait starting before the launch
        ok = (j >= 0) & (ws[np.maximum(j, 0)] >= prev)
        out[here[ok]] = w[j[ok]]
    return out


def _idle_split(store: TraceStore, st: np.ndarray, en: np.ndarray, launch: np.ndarray, t0: int,
                t1: int, busy: tuple[np.ndarray, np.ndarray]) -> IdleSplit:
    """Idle time inside the range on one device (work clipped to [st, en]; ``busy``: the union of
    those intervals), by cause. A gap ends where the next work starts; of it, only the time up to
    the start of that work's launch call waited for the CPU (``cpu_launch``). After the call the
    work was queued: behind a stream wait the same thread issued since its previous launch
    (``dependency``, by the call's name), else behind launch latency or work the trace does not
    show (``queued``). A launch call starting after its work started is a clock offset between
    host and device (``clock_offset``: the whole gap); work with no known launch: ``unknown``."""
    s = store.slices
    a, b = busy
    if not len(a):
        return IdleSplit(edges=t1 - t0)
    out = IdleSplit(edges=int(a[0] - t0) + int(t1 - b[-1]))
    if (st[1:] >= st[:-1]).all():  # in order already (one stream's rows): no sort
        st_sorted, rows_launch = st, launch
    else:
        order = np.argsort(st, kind="stable")
        st_sorted, rows_launch = st[order], launch[order]
    # Each gap ends where the next busy interval starts: the first op starting there says why.
    gap_start, nxt = b[:-1], a[1:]
    lrow = rows_launch[np.searchsorted(st_sorted, nxt, side="left")]
    gap = nxt - gap_start
    known = lrow >= 0
    out.unknown = int(gap[~known].sum())
    call = s.start_ns[np.maximum(lrow, 0)]
    offset = known & (call > nxt)
    out.clock_offset = int(gap[offset].sum())
    fine = known & ~offset
    cpu = np.clip(call - gap_start, 0, gap)
    out.cpu_launch = int(cpu[fine].sum())
    out.cpu_gaps = int((fine & (cpu > 0)).sum())
    short = fine & (cpu > 0) & (cpu < LAUNCH_SIZED_GAP_NS)
    out.cpu_short, out.cpu_short_gaps = int(cpu[short].sum()), int(short.sum())
    queued = np.where(fine, gap - cpu, 0)
    has_q = np.flatnonzero(queued > 0)
    dep = _waits_before(store, lrow[has_q])
    by = has_q[dep >= 0]
    out.dependency = int(queued[by].sum())
    out.queued = int(queued.sum()) - out.dependency
    for r, q in zip(dep[dep >= 0].tolist(), queued[by].tolist()):  # one per dependent gap
        name = store.name(r)
        out.dependency_by_call[name] = out.dependency_by_call.get(name, 0) + int(q)
    return out


def gap_cause(store: TraceStore, start: int, end: int, launch: int) -> tuple[int, int, str]:
    """One idle gap [start, end) before work launched by ``launch`` (-1 unknown), cut as
    `_idle_split` cuts it: (ns waiting for the CPU, ns queued after the call, what held it: the
    stream wait's name, "queued", "clock offset" or "launch unknown")."""
    if launch < 0:
        return 0, 0, "launch unknown"
    call = int(store.slices.start_ns[launch])
    if call > end:
        return 0, 0, "clock offset"
    cpu = min(max(call - start, 0), end - start)
    wait = int(_waits_before(store, np.array([launch], dtype=np.int64))[0])
    return cpu, end - start - cpu, store.name(wait) if wait >= 0 else "queued"


def analyse_gpu(store: TraceStore, rng: TimeRange | None = None, top: int = 10) -> GpuReport:
    """GPU work selected by ``rng`` (the whole trace when None); ``top`` kernels by time."""
    rng = over(store, rng)
    t0, t1 = rng.t0, rng.t1
    kinds = gpu_work_kinds(store)
    if not kinds.any():
        return GpuReport(False, range_ns=t1 - t0)
    s = store.slices
    rs = rng.slices
    is_work = rs.mask(kinds > 0)
    rows, st, en = rs.rows[is_work], rs.start[is_work], rs.end[is_work]
    out = GpuReport(True, range_ns=t1 - t0, gpu_ops_in_range=len(rows))
    if not len(rows):
        return out
    clip = en - st
    kernel, memcpy, memset = kinds[rows] == KERNEL, kinds[rows] == MEMCPY, kinds[rows] == MEMSET
    out.kernel_ns, out.memcpy_ns, out.memset_ns = int(clip[kernel].sum()), int(clip[memcpy].sum()), int(clip[memset].sum())
    out.comm_ns = int(clip[kernel & comm_rows(store, rows)].sum())
    out.comm_pct = pct(out.comm_ns, out.kernel_ns)
    work = out.kernel_ns + out.memcpy_ns + out.memset_ns
    out.memcpy_pct, out.memset_pct = pct(out.memcpy_ns, work), pct(out.memset_ns, work)
    for r, d in zip(rows[memcpy].tolist(), clip[memcpy].tolist()):
        m = _DIRECTION.search(store.name(r))
        key = m.group(1) if m else "other"
        out.memcpy_by_direction[key] = out.memcpy_by_direction.get(key, 0) + int(d)
        nbytes = store.slice_args(r).get("bytes")  # Kineto and nsys both write it; a whole copy counts once
        if isinstance(nbytes, int) and not isinstance(nbytes, bool) and 0 <= nbytes < 1 << 63:  # 400 digits: not a size
            out.memcpy_bytes_by_direction[key] = out.memcpy_bytes_by_direction.get(key, 0) + nbytes
    union_all = merge_intervals(st, en)

    def union(sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Busy intervals of the selected work; one device, stream or kind is often all of it."""
        return union_all if sel.all() else merge_intervals(st[sel], en[sel])

    a, b = union_all
    out.busy_ns = int((b - a).sum())
    out.any_busy_pct = pct(out.busy_ns, t1 - t0)
    out.active_ns = int(en.max() - st.min())
    ka, kb = union(kernel)
    out.kernel_busy_pct = pct(int((kb - ka).sum()), t1 - t0)

    tracks = s.track[rows]
    track_ids = distinct_ids(tracks)
    for t in track_ids:
        sel = tracks == t
        a, b = union(sel)
        label = store.tracks[t].label
        busy, active = int((b - a).sum()), int(en[sel].max() - st[sel].min())
        out.streams.append(Busy(label, busy, pct(busy, t1 - t0), int(clip[sel & kernel].sum()),
                                active, pct(busy, active) if active > 0 else 0.0))

    launch = launch_pairs(store, rows)
    keys = sorted({_device_key(store, t) for t in track_ids}, key=str)
    track_dev = np.full(len(store.tracks), -1, dtype=np.int64)
    for t in track_ids:
        track_dev[t] = keys.index(_device_key(store, t))
    dev_of = track_dev[tracks]
    idle = IdleSplit()
    for k in range(len(keys)):
        sel = dev_of == k
        a, b = union(sel)
        first = store.tracks[int(tracks[sel][0])]
        busy, active = int((b - a).sum()), int(en[sel].max() - st[sel].min())
        out.devices.append(Busy(first.process_title, busy, pct(busy, t1 - t0), int(clip[sel & kernel].sum()),
                                active, pct(busy, active) if active > 0 else 0.0))
        idle.add(_idle_split(store, st[sel], en[sel], launch[sel], t0, t1, (a, b)))

    out.idle_cpu_launch_ns, out.idle_queued_ns, out.idle_dependency_ns = idle.cpu_launch, idle.queued, idle.dependency
    out.idle_cpu_gaps, out.idle_cpu_short_ns, out.idle_cpu_short_gaps = idle.cpu_gaps, idle.cpu_short, idle.cpu_short_gaps
    out.idle_clock_offset_ns, out.idle_unknown_ns, out.idle_edges_ns = idle.clock_offset, idle.unknown, idle.edges
    out.idle_dependencies = sorted(idle.dependency_by_call.items(), key=lambda kv: -kv[1])
    out.busy_pct = float(np.mean([d.busy_pct for d in out.devices]))
    out.busy_pct_of_active = float(np.mean([d.busy_pct_of_active for d in out.devices]))
    paired = launch >= 0
    out.launches_paired = int(paired.sum())
    if paired.any():
        g, c = rows[paired], launch[paired]
        delay = s.start_ns[g] - s.start_ns[c]
        out.launch = Stats.of(delay)
        # A synchronous call (cudaMemcpy) returns after its work ends: "from its end" is no delay.
        live = ~name_mask(store, BLOCKING_SYNC_NAME)[c]
        out.launch_after_return = Stats.of(s.start_ns[g[live]] - s.end_ns[c[live]])
        out.worst_launch_kernel = store.name(int(g[int(np.argmax(delay))]))

    k_rows, k_clip = rows[kernel], clip[kernel]
    names = s.name_id[k_rows]
    # Per kernel name in one pass each (not one pass per name): int64 sums, exact.
    counts = np.bincount(names, minlength=len(store.strings))
    totals = np.zeros(len(store.strings), dtype=np.int64)
    np.add.at(totals, names, k_clip)
    per_class: dict[str, list[int]] = {}
    tops = []
    for nid in np.flatnonzero(counts).tolist():
        total, count = int(totals[nid]), int(counts[nid])
        cls = precision_of(store.strings[nid])
        acc = per_class.setdefault(cls, [0, 0])
        acc[0] += total
        acc[1] += count
        tops.append(NameTime(store.strings[nid], total, count, pct(total, out.kernel_ns)))
    out.precision = sorted((NameTime(k, v[0], v[1], pct(v[0], out.kernel_ns)) for k, v in per_class.items()),
                           key=lambda x: -x.total_ns)
    out.top_kernels = sorted(tops, key=lambda x: -x.total_ns)[:top]
    return out
