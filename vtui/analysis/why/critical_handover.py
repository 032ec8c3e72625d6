"""Where a host thread waits on another host thread: the critical path's hand-over.

PyTorch's ``loss.backward()`` blocks the calling thread while the autograd engine's worker thread
runs the backward operators (``autograd::engine::evaluate_function: …``) and launches their
kernels. Walking back on the calling thread alone charges that time to the caller as CPU time
outside operators. A hand-over window on a thread T says: from ``start`` to ``end`` T waited on
worker thread W, whose own work ran from ``start`` until ``ready`` (here always ``end``: what T
does inside the call after the worker's last node is T's own CPU time). The walk, arriving at
``end`` on T, continues on W from ``ready`` back to ``start``, then returns to T.

Windows come from two shapes, both in the same process as the worker:
- an explicit call on T that waits on another thread (``backward`` frames and annotations:
  ``torch/_tensor.py(…): backward``, ``## backward ##``), holding worker work;
- T idle (no operator) while the worker works: traces without Python stacks record nothing on
  the caller during ``backward()``. Consecutive worker bursts with no operator of T between them
  are one window.
"""

from __future__ import annotations

import re

import numpy as np

from vtui.store.devices import cpu_op_mask, name_mask, on_thread_track
from vtui.store.store import TraceStore

# The autograd engine's worker runs each backward node as one of these (outermost on its thread).
WORKER_WORK = re.compile(r"^autograd::engine::evaluate_function")
# Calls that wait for the autograd worker: "backward" as a word, not an operator's suffix
# (aten::mse_loss_backward, MseLossBackward0 are the worker's work, not a wait).
WAITS_ON_THREAD = re.compile(r"(?i)(?:^|[^a-z0-9_])backward(?:$|[^a-z0-9_])")


class HandOvers:
    """Per thread track: hand-over windows sorted by end, as arrays (start, end, worker, ready)."""

    def __init__(self, store: TraceStore) -> None:
        self.by_track: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        s = store.slices
        if not len(s):
            return
        thread = on_thread_track(store)
        work = np.flatnonzero(name_mask(store, WORKER_WORK) & thread)
        if not len(work):
            return
        parent = np.asarray(s.parent)
        is_work = np.zeros(len(s), dtype=bool)
        is_work[work] = True
        work = work[~((parent[work] >= 0) & is_work[np.maximum(parent[work], 0)])]  # outermost
        track = np.asarray(s.track)
        start, end = np.asarray(s.start_ns), np.asarray(s.end_ns)
        cols = store.tracks.columns
        proc = cols["source"].astype(np.int64) * (1 << 32) + cols["pid"].astype(np.int64)
        ops = np.flatnonzero(cpu_op_mask(store) & ~is_work)
        workers = np.unique(track[work]).tolist()
        windows: dict[int, list[tuple[int, int, int, int]]] = {}
        explicit = np.flatnonzero(name_mask(store, WAITS_ON_THREAD) & thread)
        for w in workers:
            mine = work[track[work] == w]
            mine = mine[np.argsort(start[mine], kind="stable")]
            ws, we = start[mine], np.maximum.accumulate(end[mine])
            callers = [t for t in np.unique(track[ops]).tolist() if t not in workers and proc[t] == proc[w]]
            for t in callers:
                got = self._explicit(explicit[track[explicit] == t], start, end, ws, we, w)
                got += self._implicit(ops[track[ops] == t], start, end, ws, we, w, got)
                windows.setdefault(t, []).extend(got)
        for t, got in windows.items():
            got.sort(key=lambda x: x[1])
            a = np.array(got, dtype=np.int64).reshape(-1, 4)
            self.by_track[t] = (a[:, 0], a[:, 1], a[:, 2], a[:, 3])

    @staticmethod
    def _explicit(calls: np.ndarray, start: np.ndarray, end: np.ndarray, ws: np.ndarray, we: np.ndarray,
                  w: int) -> list[tuple[int, int, int, int]]:
        """Windows of the caller's waiting calls that hold worker work (outermost calls only)."""
        out: list[tuple[int, int, int, int]] = []
        reach = -1
        for r in calls[np.argsort(start[calls], kind="stable")].tolist():  # a few per step
            a, b = int(start[r]), int(end[r])
            if b <= reach:
                continue  # inside a window already taken (a frame under another)
            i = int(np.searchsorted(ws, a, side="left"))
            j = int(np.searchsorted(we, b, side="right")) - 1  # we is non-decreasing
            if i <= j:  # the caller's own work after the worker's last node (inside the call) is its CPU
                out.append((int(ws[i]), int(we[j]), w, int(we[j])))
                reach = b
        return out

    @staticmethod
    def _implicit(ops: np.ndarray, start: np.ndarray, end: np.ndarray, ws: np.ndarray, we: np.ndarray, w: int,
                  taken: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
        """Worker bursts while the caller runs no operator: consecutive ones with no operator of
        the caller starting or running between them are one window."""
        if not len(ws):
            return []
        o_start = np.sort(start[ops])
        o_end = np.sort(end[ops])
        # Per worker piece: the caller's operators started before its start / ended by its start.
        # Busy at a time t = started before t and not yet ended; a piece is free when no operator
        # overlaps it: none running at its start and none starting inside it.
        running = np.searchsorted(o_start, ws, side="right") - np.searchsorted(o_end, ws, side="right")
        inside = np.searchsorted(o_start, we, side="left") - np.searchsorted(o_start, ws, side="right")
        free = (running <= 0) & (inside <= 0)
        # A new window starts at a free piece whose previous piece was not free or had a caller
        # operator between the two.
        started_between = np.zeros(len(ws), dtype=bool)
        started_between[1:] = np.searchsorted(o_start, ws[1:], side="left") > np.searchsorted(o_start, we[:-1], side="left")
        prev_free = np.concatenate(([False], free[:-1]))
        head = free & (~prev_free | started_between)
        heads = np.flatnonzero(head)
        # Explicit windows already cover some bursts: those are not taken twice (sorted, disjoint).
        t_start = np.array(sorted(x[0] for x in taken), dtype=np.int64)
        t_end = np.array(sorted(x[1] for x in taken), dtype=np.int64)
        out: list[tuple[int, int, int, int]] = []
        for h in heads.tolist():  # one per window (a few per step)
            k = h
            while k + 1 < len(ws) and free[k + 1] and not head[k + 1]:
                k += 1
            a, b = int(ws[h]), int(we[k])
            i = int(np.searchsorted(t_start, a, side="right")) - 1  # the explicit window starting last by a
            if i < 0 or b > t_end[i]:
                out.append((a, b, w, b))
        return out

    def last_before(self, track: int, x: int, lo: int) -> tuple[int, int, int, int] | None:
        """The latest window on ``track`` ending at or before ``x`` and after ``lo``: (start, end,
        worker track, ready)."""
        got = self.by_track.get(track)
        if got is None:
            return None
        st, en, wk, rd = got
        k = int(np.searchsorted(en, x, side="right")) - 1
        if k < 0 or en[k] <= lo:
            return None
        return int(st[k]), int(en[k]), int(wk[k]), int(rd[k])

    def last_before_all(self, track: np.ndarray, x: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, ...]:
        """``last_before`` of every query: (found, start, end, worker, ready), arrays."""
        n = len(x)
        found = np.zeros(n, dtype=bool)
        st, en, wk, rd = (np.zeros(n, dtype=np.int64) for _ in range(4))
        for t in np.unique(track).tolist() if n and self.by_track else []:
            got = self.by_track.get(int(t))
            if got is None:
                continue
            sel = np.flatnonzero(track == t)
            a, b, c, d = got
            k = np.searchsorted(b, x[sel], side="right") - 1
            kk = np.maximum(k, 0)
            found[sel] = (k >= 0) & (b[kk] > lo[sel])
            st[sel], en[sel], wk[sel], rd[sel] = a[kk], b[kk], c[kk], d[kk]
        return found, st, en, wk, rd


def build_handovers(store: TraceStore) -> HandOvers:
    """The store's hand-over windows, once per store."""
    got = store.derived.get("critical_handovers")
    if got is None:
        got = store.derived["critical_handovers"] = HandOvers(store)
    return got
