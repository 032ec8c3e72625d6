"""vtui's own tables next to Perfetto's: ``kernel``, ``launch``, ``step``, and Insights'
``finding``, ``op``, ``gpu_busy`` and ``health``.

Each is what the analyses already compute (the same device rule, launch pairing and step
detection as Insights), handed to DuckDB as columns: ``kernel`` is device work (kernels, memcpy,
memset), ``launch`` joins each device op to the runtime call that launched it with the launch
delay, ``step`` is the detected steps; ``finding``, ``op`` (CPU operators by self time) and
``gpu_busy`` (per device and stream) are Insights' over the whole trace.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vtui.query import arrowcols as ac
from vtui.query.tables import _with_rank, memo, words
from vtui.store.devices import KERNEL, MEMCPY, MEMSET, device_work_kinds
from vtui.store.store import TraceStore

KIND_NAMES = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset"}


def _device_rows(store: TraceStore) -> np.ndarray:
    return memo(store, "device_rows", lambda: np.flatnonzero(device_work_kinds(store) > 0))


def kernel_table(store: TraceStore) -> Any:
    s = store.slices
    rows = _device_rows(store)
    kinds = device_work_kinds(store)[rows]
    kind_words = ac.strings(["", *(KIND_NAMES[k] for k in (KERNEL, MEMCPY, MEMSET))])
    return ac.table(_with_rank(store, {
        "id": ac.column(rows.astype(np.int64)),
        "ts": ac.column(s.start_ns[rows]),
        "dur": ac.column(s.end_ns[rows] - s.start_ns[rows]),
        "name": ac.dictionary(s.name_id[rows], words(store)),
        "category": ac.dictionary(s.cat_id[rows], words(store)),
        "kind": ac.dictionary(kinds.astype(np.int32), kind_words),
        "track_id": ac.column(s.track[rows]),
    }, s.source[rows]))


def launch_table(store: TraceStore) -> Any:
    """One row per device op with a known launch: flows first, else the ``correlation`` arg."""
    from vtui.analysis.gpu.activity import launch_pairs

    s = store.slices
    rows = _device_rows(store)
    launch = launch_pairs(store, rows) if len(rows) else np.zeros(0, dtype=np.int64)
    ok = launch >= 0
    g, c = rows[ok].astype(np.int64), launch[ok].astype(np.int64)
    return ac.table(_with_rank(store, {
        "slice_id": ac.column(c),  # the runtime call (cudaLaunchKernel, …)
        "kernel_id": ac.column(g),
        "name": ac.dictionary(s.name_id[c], words(store)),
        "kernel_name": ac.dictionary(s.name_id[g], words(store)),
        "ts": ac.column(s.start_ns[c]),
        "kernel_ts": ac.column(s.start_ns[g]),
        "kernel_dur": ac.column(s.end_ns[g] - s.start_ns[g]),
        "delay": ac.column(s.start_ns[g] - s.start_ns[c]),  # GPU start − launch call start (Insights)
        "delay_from_end": ac.column(s.start_ns[g] - s.end_ns[c]),  # from the call's return (HTA)
    }, s.source[g]))


def step_table(store: TraceStore) -> Any:
    from vtui.analysis.base.launched import launched_work
    from vtui.analysis.steps.detect import find_step_rows

    s = store.slices
    pattern, _source, rows = find_step_rows(store)
    rows = rows.astype(np.int64)
    pa = ac.pyarrow()
    start, cpu_end = s.start_ns[rows].astype(np.int64), s.end_ns[rows].astype(np.int64)
    end = np.maximum(cpu_end, launched_work(store, rows).last_ns)  # a step ends when its GPU work ends (Insights)
    return ac.table(_with_rank(store, {
        "step": ac.column(np.arange(len(rows), dtype=np.int64)),
        "id": ac.column(rows),
        "ts": ac.column(start),
        "dur": ac.column(end - start),
        "cpu_dur": ac.column(cpu_end - start),
        "name": ac.dictionary(s.name_id[rows], words(store)),
        "pattern": pa.array([pattern] * len(rows), type=pa.string()),
    }, s.source[rows]))


def finding_table(store: TraceStore) -> Any:
    from vtui.analysis.report.insights import compute_insights

    pa = ac.pyarrow()
    found = compute_insights(store).findings
    return pa.table({name: pa.array([getattr(f, name) for f in found], type=pa.string())
                     for name in ("kind", "severity", "message", "hint")})


def op_table(store: TraceStore) -> Any:
    """Every CPU operator by name over the whole trace, as Insights ranks them (self, total, %)."""
    from vtui.analysis.slices.operators import analyse_ops

    pa = ac.pyarrow()
    rows = analyse_ops(store, top=max(len(store.strings), 1)).by_self
    return pa.table({"name": pa.array([r.name for r in rows], type=pa.string()),
                     "count": pa.array([r.count for r in rows], type=pa.int64()),
                     "self": pa.array([r.self_ns for r in rows], type=pa.int64()),
                     "total": pa.array([r.total_ns for r in rows], type=pa.int64()),
                     "self_pct": pa.array([r.pct for r in rows], type=pa.float64()),
                     "total_pct": pa.array([r.total_pct for r in rows], type=pa.float64())})


def gpu_busy_table(store: TraceStore) -> Any:
    """Insights' GPU busy time per device and per stream over the whole trace."""
    from vtui.analysis.gpu.activity import analyse_gpu

    pa = ac.pyarrow()
    g = analyse_gpu(store)
    rows = [("device", b) for b in g.devices] + [("stream", b) for b in g.streams]
    return pa.table({"kind": pa.array([k for k, _ in rows], type=pa.string()),
                     "label": pa.array([b.label for _, b in rows], type=pa.string()),
                     "busy": pa.array([b.busy_ns for _, b in rows], type=pa.int64()),
                     "busy_pct": pa.array([b.busy_pct for _, b in rows], type=pa.float64()),
                     "kernel": pa.array([b.kernel_ns for _, b in rows], type=pa.int64()),
                     "active": pa.array([b.active_ns for _, b in rows], type=pa.int64()),
                     "busy_pct_of_active": pa.array([b.busy_pct_of_active for _, b in rows], type=pa.float64())})


def health_table(store: TraceStore) -> Any:
    """Trace health: one row per item (most severe first), its first example's row and time, and
    the figures it puts in doubt (comma-separated)."""
    from vtui.analysis.health.report import analyse_health

    pa = ac.pyarrow()
    items = analyse_health(store).items
    first = [i.examples[0] if i.examples else None for i in items]
    return pa.table({"key": pa.array([i.key for i in items], type=pa.string()),
                     "severity": pa.array([i.severity for i in items], type=pa.string()),
                     "message": pa.array([i.message for i in items], type=pa.string()),
                     "count": pa.array([i.count for i in items], type=pa.int64()),
                     "doubts": pa.array([",".join(i.doubts) for i in items], type=pa.string()),
                     "example_slice_id": pa.array([e.row if e and e.row >= 0 else None for e in first], type=pa.int64()),
                     "example_ts": pa.array([e.t_ns if e else None for e in first], type=pa.int64())})


VIEWS = {"kernel": kernel_table, "launch": launch_table, "step": step_table, "finding": finding_table,
         "op": op_table, "gpu_busy": gpu_busy_table, "health": health_table}
