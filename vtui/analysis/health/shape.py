"""What the profiler recorded and what it did not: a CPU-only or device-only trace, no shapes
(no roofline), no Python stacks, no memory events — each with the profiler flag that adds it."""

from __future__ import annotations

import numpy as np

from vtui.analysis.health.items import (
    CALL_STACKS,
    CRITICAL_PATH,
    IDLE_SPLIT,
    LAUNCH_DELAY,
    MEMORY,
    ROOFLINE,
    TTFT,
    HealthItem,
)
from vtui.store.devices import cpu_op_mask, device_work_kinds, on_thread_track, python_mask
from vtui.store.store import TraceStore

SHAPE_PROBE = 256  # CPU operators whose args are looked at for recorded shapes
MEMORY_NAME = "[memory]"


def shape_items(store: TraceStore) -> list[HealthItem]:
    if not len(store.slices):
        return []
    device = device_work_kinds(store) > 0
    host = on_thread_track(store) & ~device
    out = []
    if device.any() and not host.any():
        out.append(HealthItem(
            "shape.gpu_only", "warn", "device work only, no CPU side: launch delays, CPU-wait idle time, operators, "
            "steps and the critical path cannot be known", doubts=(LAUNCH_DELAY, IDLE_SPLIT, CRITICAL_PATH, TTFT)))
    ops = np.flatnonzero(cpu_op_mask(store))
    if host.any() and not device.any():
        out.append(HealthItem("shape.cpu_only", "info", "CPU only: no device work was recorded "
                              "(ProfilerActivity.CUDA not on, or nothing ran on a device)"))
    if device.any() and len(ops) and not _has_shapes(store, ops):
        out.append(HealthItem("shape.no_shapes", "info", "no operator shapes recorded: no FLOPs, bytes or roofline "
                              "(profile with record_shapes=True)", doubts=(ROOFLINE,)))
    if len(ops) and not python_mask(store).any():
        out.append(HealthItem("shape.no_stacks", "info", "no Python stacks recorded: no Python overhead or hand-over "
                              "view (profile with with_stack=True)", doubts=(CALL_STACKS,)))
    if len(ops) and not _has_memory(store):
        out.append(HealthItem("shape.no_memory", "info", "no memory events recorded: no memory figures "
                              "(profile with profile_memory=True)", doubts=(MEMORY,)))
    return out


def _has_shapes(store: TraceStore, ops: np.ndarray) -> bool:
    s, blob = store.slices, store.args_blob
    pick = ops[np.linspace(0, len(ops) - 1, min(len(ops), SHAPE_PROBE)).astype(np.int64)]
    for r in pick.tolist():
        off, n = int(s.args_off[r]), int(s.args_len[r])
        if n and b'"Input Dims"' in bytes(blob[off:off + n]):
            return True
    return False


def _has_memory(store: TraceStore) -> bool:
    try:
        sid = store.strings.index(MEMORY_NAME)
    except ValueError:
        return False
    return bool((store.instants.name_id == sid).any())
