"""Blocking calls per step: how much of each step's annotation the host spent in calls that wait for
the device to drain (synchronize, synchronous copies and memsets, ``.item()``; `vtui.store.devices`
says which), by name. Ordering calls (event record, stream wait event) return at once and are not
counted. A blocking call that takes most of a step is what the step is waiting for: its headline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtui.analysis.base.launched import owners
from vtui.analysis.steps.detect import StepReport
from vtui.store.devices import blocking_sync_mask, device_work_kinds
from vtui.store.store import TraceStore

DOMINATES = 0.5  # a blocking call that takes at least half of a step's annotation dominates it


@dataclass
class StepBlock:
    step: int  # index among the range's steps
    name: str  # the blocking call that takes most of it
    calls: int  # of that name in the step
    ns: int  # their time in the step
    step_ns: int  # the step's annotation
    caller: str  # the slice that made the first of them ("" at top level)
    device_busy_ns: int = -1  # device work running while they blocked (any device; -1: not known)

    @property
    def share(self) -> float:
        return self.ns / self.step_ns if self.step_ns > 0 else 0.0


def step_blocks(store: TraceStore, st: StepReport) -> list[StepBlock]:
    """Per step with blocking calls inside it (on its thread, below it): the name with the most
    time there; in step order."""
    if not st.present or not st.count:
        return []
    s = store.slices
    calls = np.flatnonzero(blocking_sync_mask(store))
    if not len(calls):
        return []
    own = owners(store, st.rows, calls)
    keep = own >= 0
    calls, own = calls[keep], own[keep]
    out = []
    busy = _device_busy(store)
    step_ns = st.cpu_durations
    for k in np.unique(own).tolist():
        mine = calls[own == k]
        names = s.name_id[mine]
        dur = s.dur_ns[mine].astype(np.int64)
        ids, inv = np.unique(names, return_inverse=True)
        per = np.bincount(inv, weights=dur)
        top = int(np.argmax(per))
        sel = mine[inv == top]
        first = int(sel[np.argmin(s.start_ns[sel])])
        parent = int(s.parent[first])
        out.append(StepBlock(int(k), store.strings[int(ids[top])], len(sel), int(round(per[top])), int(step_ns[k]),
                             store.name(parent) if parent >= 0 else "",
                             _busy_within(busy, s.start_ns[sel].astype(np.int64), s.end_ns[sel].astype(np.int64))))
    return out


def _device_busy(store: TraceStore) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The union of all device work as sorted disjoint intervals, with the running busy time at each
    interval's start (so the busy time inside any window is two searches); None without device work."""
    s = store.slices
    rows = np.flatnonzero(device_work_kinds(store) != 0)
    if not len(rows):
        return None
    st, en = s.start_ns[rows].astype(np.int64), s.end_ns[rows].astype(np.int64)
    order = np.argsort(st, kind="stable")
    st, en = st[order], np.maximum.accumulate(en[order])
    new = np.concatenate(([True], st[1:] > en[:-1]))
    a = st[new]
    b = np.maximum.reduceat(en, np.flatnonzero(new))
    return a, b, np.concatenate(([0], np.cumsum(b - a)))


def _busy_within(busy: tuple[np.ndarray, np.ndarray, np.ndarray] | None, lo: np.ndarray, hi: np.ndarray) -> int:
    """Device busy time inside the windows [lo, hi) (the calls of one name in a step: disjoint)."""
    if busy is None:
        return -1
    a, b, cum = busy

    def upto(t: np.ndarray) -> np.ndarray:  # busy time before t
        k = np.searchsorted(a, t, side="right") - 1
        kk = np.maximum(k, 0)
        return np.where(k >= 0, cum[kk] + np.clip(t - a[kk], 0, b[kk] - a[kk]), 0)

    return int((upto(hi) - upto(lo)).sum())


def dominant_blocks(blocks: list[StepBlock]) -> list[StepBlock]:
    """The steps whose blocking call takes at least DOMINATES of the annotation, worst share first."""
    return sorted((b for b in blocks if b.share >= DOMINATES), key=lambda b: (-b.share, b.step))
