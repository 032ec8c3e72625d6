"""CPU operators over a range: top-N by self and by total time, hints for known heavy hitters,
and synchronisation points (count, time, where they are called from).

Times are clipped to the range; self time is the clipped duration minus the clipped durations of
direct children. Total time per name is the plain sum over its slices (a name nested in itself
counts twice, as the profiler's own tables do).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.basics import (
    GPU_ACTIVITY_CATS,
    PROFILER_CATS,
    PYTHON_CATS,
    cat_mask,
    clipped_dur,
    clipped_self,
    pct,
    string_mask,
)
from vtui.store.store import TraceStore
from vtui.store.tracks import GPU

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
SYNC = re.compile(r"^(cuda|hip)(StreamSynchronize|DeviceSynchronize|EventSynchronize|EventRecord|StreamWaitEvent)$")


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
    pct: float  # self time, % of the range
    total_pct: float


@dataclass
class SyncReport:
    count: int = 0
    total_ns: int = 0
    by_name: list[tuple[str, int, int]] = field(default_factory=list)  # (name, count, ns)
    callers: list[tuple[str, int]] = field(default_factory=list)  # enclosing op name, count


@dataclass
class OpsReport:
    range_ns: int
    by_self: list[OpRow]
    by_total: list[OpRow]
    sync: SyncReport
    cpu_self_ns: int  # self time of every CPU op in range (the denominator people expect for shares)


def cpu_op_mask(store: TraceStore) -> np.ndarray:
    """CPU-side slices that are operators or annotations (not GPU work, not Python frames)."""
    s = store.slices
    gpu_track = np.array([t.kind == GPU for t in store.tracks], dtype=bool)
    on_gpu = gpu_track[s.track] if len(s) else np.zeros(0, dtype=bool)
    return ~on_gpu & ~cat_mask(store, GPU_ACTIVITY_CATS | PYTHON_CATS | PROFILER_CATS)


def analyse_ops(store: TraceStore, t0: int = 0, t1: int | None = None, top: int = 15) -> OpsReport:
    t1 = int(store.span_ns) if t1 is None else t1
    span = max(t1 - t0, 1)
    s = store.slices
    clip = clipped_dur(store, t0, t1)
    self_ = clipped_self(store, t0, t1)
    rows = np.flatnonzero(cpu_op_mask(store) & (clip > 0))
    names = s.name_id[rows]
    uniq, inv = np.unique(names, return_inverse=True)
    self_sum = np.bincount(inv, weights=self_[rows], minlength=len(uniq)).astype(np.int64)
    tot_sum = np.bincount(inv, weights=clip[rows], minlength=len(uniq)).astype(np.int64)
    counts = np.bincount(inv, minlength=len(uniq))

    def row(k: int) -> OpRow:
        return OpRow(store.strings[int(uniq[k])], int(self_sum[k]), int(tot_sum[k]), int(counts[k]),
                     pct(int(self_sum[k]), span), pct(int(tot_sum[k]), span))

    by_self = [row(k) for k in np.argsort(-self_sum, kind="stable")[:top].tolist()]
    by_total = [row(k) for k in np.argsort(-tot_sum, kind="stable")[:top].tolist()]
    return OpsReport(t1 - t0, by_self, by_total, _sync(store, clip), int(self_sum.sum()))


def _sync(store: TraceStore, clip: np.ndarray) -> SyncReport:
    s = store.slices
    rows = np.flatnonzero(string_mask(store, SYNC.search)[s.name_id] & (clip > 0)) if len(s) else np.zeros(0, int)
    out = SyncReport(len(rows), int(clip[rows].sum()))
    if not len(rows):
        return out
    names = s.name_id[rows]
    for nid in np.unique(names).tolist():
        sel = names == nid
        out.by_name.append((store.strings[nid], int(sel.sum()), int(clip[rows[sel]].sum())))
    out.by_name.sort(key=lambda x: -x[2])
    parents = s.parent[rows]
    callers: dict[str, int] = {}
    for p in parents.tolist():
        key = store.name(p) if p >= 0 else "(top level)"
        callers[key] = callers.get(key, 0) + 1
    out.callers = sorted(callers.items(), key=lambda kv: -kv[1])[:5]
    return out
