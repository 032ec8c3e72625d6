"""CPU operators over a range: top-N by self and by total time, hints for known heavy hitters,
annotations listed apart, and synchronisation points (count, time, where they are called from).

Operators, annotations and sync points are as `vtui.store.devices` defines them; slices, clipped and
self time follow the one range rule of `vtui.store.slicetime`. Total time per name is the plain sum
over its slices (a name nested in itself counts twice, as the profiler's own tables do). Shares are
of the range length × the CPU threads that run operators in it, so no operator's self time exceeds
100 %; the profiler's whole-run span is not an operator and adds nothing to that denominator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.base.stats import pct
from vtui.store.devices import SYNC_NAME, annotation_mask, blocking_sync_mask, cpu_op_mask, sync_mask
from vtui.store.grouping import distinct_ids
from vtui.store.slicetime import RangeSlices, TimeRange, over
from vtui.store.store import TraceStore

__all__ = ["OP_HINTS", "SYNC", "OpRow", "OpsReport", "SyncReport", "analyse_ops", "cpu_op_mask", "hint_for"]

OP_HINTS: list[tuple[str, str, str]] = [
    # (kind, name regex, hint)
    ("matmul", r"^aten::(addmm|mm|linear|matmul)$",
     "matrix multiplies: check sizes are multiples of 8/16 and use fp16/bf16 so tensor cores apply"),
    ("attention", r"^aten::(baddbmm|bmm|softmax|_softmax|scaled_dot_product_attention)$",
     "attention: try a fused attention kernel (SDPA / FlashAttention) instead of bmm + softmax"),
    ("layout copy", r"^aten::(copy_|to|_to_copy|contiguous|clone)$",
     "layout copies: avoid .contiguous()/.to() in the hot loop; keep tensors in the layout and dtype they are used in"),
    ("norm", r"(?i)layer_?norm|rms_?norm",
     "normalisation takes a large share: try a fused LayerNorm/RMSNorm kernel"),
]
_HINTS = [(k, re.compile(p), h) for k, p, h in OP_HINTS]
SYNC = SYNC_NAME


def hint_for(name: str) -> tuple[str, str] | None:
    for kind, regex, hint in _HINTS:
        if regex.search(name):
            return kind, hint
    return None


@dataclass
class OpRow:
    name: str
    self_ns: int
    total_ns: int
    count: int
    pct: float  # self time, % of range × CPU threads with operators
    total_pct: float


@dataclass
class SyncReport:
    """Sync points: blocking ones hold the host until the device drains (synchronize calls,
    synchronous copies, ``.item()``); ordering ones (event record, stream wait event) only queue
    a dependency for the device and return."""

    count: int = 0
    total_ns: int = 0
    by_name: list[tuple[str, int, int]] = field(default_factory=list)  # (name, count, ns)
    callers: list[tuple[str, int]] = field(default_factory=list)  # enclosing op name, count
    blocking: frozenset[str] = frozenset()  # the names in by_name that block the host
    blocking_count: int = 0
    blocking_ns: int = 0

    def is_blocking(self, name: str) -> bool:
        return name in self.blocking


@dataclass
class OpsReport:
    range_ns: int
    by_self: list[OpRow]
    by_total: list[OpRow]
    sync: SyncReport
    cpu_self_ns: int  # self time of every CPU op in range (the denominator people expect for shares)
    threads: int = 1  # CPU threads with operators in the range
    annotations: list[OpRow] = field(default_factory=list)  # by total: user/GPU annotations, ProfilerStep#N, whole run

    @property
    def denominator_ns(self) -> int:
        """What the shares are of: range length × CPU threads with operators."""
        return max(self.range_ns, 1) * max(self.threads, 1)


def _by_name(store: TraceStore, rs: RangeSlices, pos: np.ndarray, denom: int) -> tuple[list[OpRow], np.ndarray]:
    """One OpRow per name over the range positions ``pos``, in name-id order, and the self sums."""
    # Sums per name id straight off the ids (names are few next to slices: no sort needed).
    names = store.slices.name_id[rs.rows[pos]]
    n = len(store.strings)
    counts = np.bincount(names, minlength=n)
    present = np.flatnonzero(counts)
    self_sum = np.rint(np.bincount(names, weights=rs.self_ns[pos], minlength=n)[present]).astype(np.int64)
    tot_sum = np.rint(np.bincount(names, weights=rs.clip[pos], minlength=n)[present]).astype(np.int64)
    rows = [OpRow(store.strings[nid], int(self_sum[k]), int(tot_sum[k]), int(counts[nid]),
                  pct(int(self_sum[k]), denom), pct(int(tot_sum[k]), denom)) for k, nid in enumerate(present.tolist())]
    return rows, self_sum


def analyse_ops(store: TraceStore, rng: TimeRange | None = None, top: int = 15) -> OpsReport:
    """Operators in ``rng`` (the whole trace when None), ``top`` by self and by total time."""
    rng = over(store, rng)
    rs = rng.slices
    ops = rs.mask(cpu_op_mask(store))
    threads = len(distinct_ids(store.slices.track[rs.rows[ops]]))
    out = OpsReport(rng.span_ns, [], [], _sync(store, rs), 0, threads)
    rows, self_sum = _by_name(store, rs, ops, out.denominator_ns)
    out.cpu_self_ns = int(self_sum.sum())
    out.by_self = sorted(rows, key=lambda r: -r.self_ns)[:top]  # stable: ties keep name-id order
    out.by_total = sorted(rows, key=lambda r: -r.total_ns)[:top]
    notes, _ = _by_name(store, rs, rs.mask(annotation_mask(store)), out.denominator_ns)
    out.annotations = sorted(notes, key=lambda r: -r.total_ns)[:top]
    return out


def _sync(store: TraceStore, rs: RangeSlices) -> SyncReport:
    s = store.slices
    pos = rs.mask(sync_mask(store)) if len(s) else np.zeros(0, dtype=np.int64)
    rows, clip = rs.rows[pos], rs.clip[pos]
    out = SyncReport(len(rows), int(clip.sum()))
    if not len(rows):
        return out
    names = s.name_id[rows]
    blocks = blocking_sync_mask(store)[rows]
    out.blocking_count, out.blocking_ns = int(blocks.sum()), int(clip[blocks].sum())
    blocking = set()
    for nid in np.unique(names).tolist():
        sel = names == nid
        out.by_name.append((store.strings[nid], int(sel.sum()), int(clip[sel].sum())))
        if blocks[sel].any():  # a name is one kind or the other (.item() holding a recorded call is not a sync point)
            blocking.add(store.strings[nid])
    out.blocking = frozenset(blocking)
    out.by_name.sort(key=lambda x: -x[2])
    parents = s.parent[rows]
    callers: dict[str, int] = {}
    for p in parents.tolist():
        key = store.name(p) if p >= 0 else "(top level)"
        callers[key] = callers.get(key, 0) + 1
    out.callers = sorted(callers.items(), key=lambda kv: -kv[1])[:5]
    return out
