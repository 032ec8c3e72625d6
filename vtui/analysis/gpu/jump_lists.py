"""Lists to jump from on the Insights screen: GPU idle gaps (longest first, with what the CPU
was doing) and kernel outliers (instances far above their name's median)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtui.analysis.base.comm import comm_rows
from vtui.analysis.base.stats import merge_intervals
from vtui.analysis.gpu.activity import KERNEL, gap_cause, gpu_work_kinds, launch_pairs
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore

OUTLIER_FACTOR = 3.0  # an instance this many times its name's median is an outlier


@dataclass(frozen=True)
class Gap:
    start: int
    end: int
    device: str
    next_row: int  # the GPU op that ended the gap
    cpu: str  # what the launching thread was doing in the middle of the gap ("" unknown)
    cpu_launch_ns: int = 0  # of the gap: before the next work's launch call started
    queued_ns: int = 0  # of the gap: after it
    held_by: str = ""  # what held the queued part: a stream wait's name, "queued", "clock offset", "launch unknown"

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Outlier:
    row: int
    dur: int
    median: int  # of all instances of the same name in the range


def _cpu_at(store: TraceStore, track: int, t: int) -> str:
    """The innermost slices on ``track`` at time ``t`` (up to three, outermost first). Outer is by
    time (earlier start, then later end), not by lane: a slice that crosses a sibling's end sits on
    an extra lane below the calls it encloses."""
    s = store.slices
    found = []
    for lane in range(store.tracks[track].lanes):
        lo, hi = store.index.lane_window(track, lane, t, t + 1)
        if hi > lo:
            found.append((int(s.start_ns[lo]), -int(s.end_ns[lo]), lane, lo))
    names = [store.name(row) for *_, row in sorted(found)]
    return " › ".join((["…"] if len(names) > 3 else []) + names[-3:]) or "idle"


def gpu_idle_gaps(store: TraceStore, rng: TimeRange | None = None, top: int = 20) -> list[Gap]:
    """The longest gaps between GPU work inside ``rng`` (the whole trace when None), per device
    (edges of the range excluded)."""
    rng = over(store, rng)
    t0, t1 = rng.t0, rng.t1
    s = store.slices
    rows = np.flatnonzero(gpu_work_kinds(store) > 0)
    rows = rows[(s.end_ns[rows] > t0) & (s.start_ns[rows] < t1)]
    if not len(rows):
        return []
    launch_of = dict(zip(rows.tolist(), launch_pairs(store, rows).tolist()))
    device = store.tracks.process_ids()
    found: list[tuple[int, int, int]] = []  # (start, end, next row)
    for dev in np.unique(device[s.track[rows]]).tolist():
        sel = rows[device[s.track[rows]] == dev]
        st, en = np.maximum(s.start_ns[sel], t0), np.minimum(s.end_ns[sel], t1)
        a, b = merge_intervals(st, en)
        if len(a) < 2:
            continue
        gap = a[1:] - b[:-1]
        order = np.argsort(st, kind="stable")
        for k in np.argsort(-gap, kind="stable")[:top].tolist():
            nxt = sel[order[np.searchsorted(st[order], a[k + 1], side="left")]]
            found.append((int(b[k]), int(a[k + 1]), int(nxt)))
    found.sort(key=lambda g: g[0] - g[1])
    out = []
    for start, end, nxt in found[:top]:
        launch = launch_of.get(nxt, -1)
        cpu = _cpu_at(store, int(s.track[launch]), (start + end) // 2) if launch >= 0 else ""
        out.append(Gap(start, end, store.tracks[int(s.track[nxt])].process_title, nxt, cpu,
                       *gap_cause(store, start, end, launch)))
    return out


def kernel_outliers(store: TraceStore, rng: TimeRange | None = None, top: int = 20) -> list[Outlier]:
    """Kernels at least OUTLIER_FACTOR × their name's median in ``rng`` (the whole trace when None),
    the most excess first. Communication kernels are left out: a long one waited for a peer."""
    rng = over(store, rng)
    t0, t1 = rng.t0, rng.t1
    s = store.slices
    rows = np.flatnonzero(gpu_work_kinds(store) == KERNEL)
    rows = rows[(s.start_ns[rows] >= t0) & (s.end_ns[rows] <= t1)]
    rows = rows[~comm_rows(store, rows)]  # a collective's time is its peers' lateness, not its own cost
    if len(rows) < 3:
        return []
    dur = s.end_ns[rows] - s.start_ns[rows]
    ids, inverse = np.unique(s.name_id[rows], return_inverse=True)
    order = np.lexsort((dur, inverse))  # grouped by name, durations ascending
    counts = np.bincount(inverse)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    median = dur[order][first + counts // 2]  # upper median per name
    excess = dur - OUTLIER_FACTOR * median[inverse]
    hit = np.flatnonzero((excess > 0) & (counts[inverse] >= 3))
    hit = hit[np.argsort(-(dur[hit] - median[inverse[hit]]), kind="stable")][:top]
    return [Outlier(int(rows[i]), int(dur[i]), int(median[inverse[i]])) for i in hit.tolist()]
