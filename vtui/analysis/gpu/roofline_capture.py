"""The roofline of graph-replayed work, from the capture trace of the same graphs: each replayed
kernel matched to its captured launch (``graphs.match_capture``) is costed by the operator that
launched it at capture time (its recorded shapes), and timed by the replayed kernels.

An operator instance of a capture is counted once per replay of it (the most times any of its
kernels was matched); its GPU time is the matched replayed kernels' durations.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from vtui.analysis.gpu.flops import op_cost
from vtui.analysis.gpu.graphs import CaptureMatch, analyse_graphs
from vtui.analysis.gpu.peaks import DATASHEET
from vtui.analysis.gpu.roofline import (
    OpRoofline,
    RooflineReport,
    _row,
    _shape_label,
    _tensor_types,
    analyse_roofline,
    label_types,
)
from vtui.store.slicetime import TimeRange
from vtui.store.store import TraceStore


def replay_rows(store: TraceStore, match: CaptureMatch, report: RooflineReport) -> list[OpRoofline]:
    """Roofline rows (``from_capture``) for the replayed kernels ``match`` gave a captured launch."""
    caps = match.caps
    if not caps or not len(match.origin_rows):
        return []
    offs = np.cumsum([0] + [len(c.kernel_names) for c in caps])
    inst_key: dict[tuple[int, int], int] = {}  # (capture, op row) -> instance id
    inst_of_pos = np.full(int(offs[-1]), -1, dtype=np.int64)
    inst_first: list[tuple[int, int]] = []  # per instance: (capture, a launch position of it)
    for ci, c in enumerate(caps):
        for k, row in enumerate(c.cost_rows):
            if row >= 0:
                i = inst_key.setdefault((ci, row), len(inst_key))
                if i == len(inst_first):
                    inst_first.append((ci, k))
                inst_of_pos[offs[ci] + k] = i
    if not inst_key:
        return []
    pos = offs[match.origin_capture] + match.origin_pos
    dur = store.slices.dur_ns[match.origin_rows].astype(np.int64)
    n_pos = np.bincount(pos, minlength=len(inst_of_pos))
    ns_pos = np.bincount(pos, weights=dur, minlength=len(inst_of_pos))
    live = inst_of_pos >= 0
    calls = np.zeros(len(inst_key), dtype=np.int64)
    np.maximum.at(calls, inst_of_pos[live], n_pos[live])
    gpu = np.bincount(inst_of_pos[live], weights=ns_pos[live], minlength=len(inst_key))
    groups: dict[tuple[str, str, str, str], list] = {}
    for i, (ci, k) in enumerate(inst_first):
        if not calls[i]:
            continue
        name = caps[ci].cost_ops[k]
        dims, types, conc = caps[ci].cost_args[k]
        key = (name, json.dumps(dims), json.dumps(types), json.dumps(conc))
        acc = groups.setdefault(key, [name, dims, types, conc, 0, 0])
        acc[4] += int(calls[i])
        acc[5] += int(gpu[i])
    out = []
    for name, dims, types, conc, count, gpu_ns in groups.values():
        cost = op_cost(name, dims, types, conc)
        if cost is None:
            continue
        out.append(_row(name, _shape_label(dims, types), cost, count, gpu_ns, 0, report.device, "gpu",
                        _tensor_types(dims, types), from_capture=True))
    return out


def with_capture(store: TraceStore, report: RooflineReport, match: CaptureMatch | None) -> RooflineReport:
    """``report`` with the rows of the graph-replayed work costed from ``match``'s capture (a new
    report: the one given is shared and left as it is)."""
    if match is None:
        return report
    extra = replay_rows(store, match, report)
    if not extra:
        return report
    ops = list(report.ops) + extra
    label_types(ops)
    ops.sort(key=lambda o: (-o.gpu_ns, -o.flops, -o.bytes, o.name, o.shape, o.dtype))
    why = report.why
    if report.time_basis != "gpu":
        why = ""
    return replace(report, present=True, time_basis="gpu", ops=ops, calls=report.calls + sum(o.count for o in extra),
                   flops=report.flops + sum(o.flops for o in extra), bytes=report.bytes + sum(o.bytes for o in extra),
                   why=why or report.device.why, capture=match.file or "capture trace")


def capture_roofline(store: TraceStore, capture: TraceStore, rng: TimeRange | None = None,
                     peaks: str = DATASHEET, capture_name: str = "") -> RooflineReport:
    """The roofline of ``store`` over ``rng`` with its graph-replayed kernels costed from the
    capture trace ``capture`` of the same graphs (what the app shows when a capture is opened)."""
    rep = analyse_graphs(store, rng, capture=capture, capture_name=capture_name)
    return with_capture(store, analyse_roofline(store, rng, peaks), rep.capture)
