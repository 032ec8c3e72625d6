"""Device work that cannot be trusted as written (overlapping the next on its stream, durations the
import dropped, past the profiler's window) and pieces that are missing (launches without their
device work, device work without a launch, flows with one end, ranks, a cut file, profiler
overhead)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from vtui.analysis.base.launched import device_work_launches
from vtui.analysis.gpu.graphs import CAPTURE_DIR, CaptureMatch, find_capture_traces, graph_launch_mask
from vtui.analysis.health.items import (
    COLLECTIVES,
    CRITICAL_PATH,
    GPU_BUSY,
    IDLE_SPLIT,
    KERNEL_TIME,
    LAUNCH_DELAY,
    OPERATOR_GPU_TIME,
    ROOFLINE,
    HealthItem,
    examples_of,
    ms,
    slice_name,
)
from vtui.store.build_warnings import RULES
from vtui.store.devices import name_mask, runtime_mask, whole_run_mask
from vtui.store.store import TraceStore

TOLERANCE_NS = 1_000  # a microsecond either way is the rounding of a Chrome trace's µs
# Runtime calls that put work on a device (a host-function launch puts none).
LAUNCH_CALL = re.compile(r"^(cuda|hip|cu)\w*Launch(?!HostFunc)\w*$|^(cuda|hip|cu)\w*(Memcpy|Memset)\w*Async$")
EARLY_NS = 10_000_000  # kernels dropped at the start of a session: within the first 10 ms of the trace
CAPTURE_REGION = re.compile(r"^capture_\d+")  # vLLM's graph-capture regions (as vtui.analysis.gpu.graphs)
BEGIN_CAPTURE = re.compile(r"^(cuda|hip)StreamBeginCapture\w*$")
END_CAPTURE = re.compile(r"^(cuda|hip)StreamEndCapture$")
PROFILER_OVERHEAD = re.compile(r"(?i)^(activity buffer request|cupti overhead|buffer flush|cupti_\w+)$")
MISSING_WARN = 0.01  # launches without their device work: a warning past 1 % of them


def warning_count(store: TraceStore, rule: str) -> int:
    """How many events the store build's warning ``rule`` hit (0: none)."""
    head = RULES[rule][0].split("}", 1)[1].split("{", 1)[0]  # the fixed text after the count
    for w in store.warnings:
        m = re.match(r"^([\d,]+)" + re.escape(head), w)
        if m:
            return int(m.group(1).replace(",", ""))
    return 0


def duration_items(store: TraceStore) -> list[HealthItem]:
    out = []
    out += _stream_overlap(store)
    bad = warning_count(store, "bad_dur")
    if bad:
        out.append(HealthItem("dur.bad_dur", "warn", f"{bad:,} X events had a negative or huge dur and were "
                              "skipped at import (as Perfetto skips them): their time is in no figure", bad,
                              doubts=(GPU_BUSY, KERNEL_TIME)))
    out += _past_window(store)
    return out


def _stream_overlap(store: TraceStore) -> list[HealthItem]:
    """Work on one stream runs in order: one item overlapping the next means a duration (or a
    timestamp) is wrong (ROCm kernels that run past the next one; TraceLens #669)."""
    rows, _ = device_work_launches(store)
    if len(rows) < 2:
        return []
    s = store.slices
    start, end, track = s.start_ns[rows], s.end_ns[rows], s.track[rows]
    order = np.lexsort((start, track))
    rows, start, end, track = rows[order], start[order], end[order], track[order]
    same = track[1:] == track[:-1]
    over = (end[:-1] - start[1:]) * same
    hit = np.flatnonzero(over > TOLERANCE_NS)
    if not len(hit):
        return []
    by = over[hit]
    worst = int(by.max())
    ex = hit[np.argsort(-by, kind="stable")]
    return [HealthItem(
        "dur.stream_overlap", "warn",
        f"{len(hit):,} device work items run past the start of the next one on the same stream (worst by "
        f"{ms(worst)}, {ms(int(by.sum()))} in all): their durations are too long or their starts wrong",
        len(hit), examples_of(store, rows[ex], lambda r: f"overlaps the next on its stream: {slice_name(store, r)}"),
        (GPU_BUSY, KERNEL_TIME, ROOFLINE, IDLE_SPLIT), {"worst_ns": worst, "total_ns": int(by.sum())})]


def _past_window(store: TraceStore) -> list[HealthItem]:
    """Work outside the profiler's own span ("PyTorch Profiler (0)"): recorded, but after the
    window the profiler says it covered (device activity flushed late)."""
    spans = np.flatnonzero(whole_run_mask(store))
    if not len(spans):
        return []
    s = store.slices
    lo, hi = int(s.start_ns[spans].min()), int(s.end_ns[spans].max())
    rows, _ = device_work_launches(store)
    past = rows[(s.end_ns[rows] > hi + TOLERANCE_NS) | (s.start_ns[rows] < lo - TOLERANCE_NS)]
    if not len(past):
        return []
    return [HealthItem(
        "dur.past_window", "info",
        f"{len(past):,} device work items lie outside the profiler's window ({ms(lo)}–{ms(hi)})",
        len(past), examples_of(store, past, lambda r: f"outside the profiler window: {slice_name(store, r)}"),
        (GPU_BUSY,))]


def missing_items(store: TraceStore) -> list[HealthItem]:
    out = []
    out += _launches_without_work(store)
    out += _work_without_launch(store)
    out += _one_ended_flows(store)
    out += _profiler_overhead(store)
    return out


def _launches_without_work(store: TraceStore) -> list[HealthItem]:
    """Launch calls whose device work is absent: the profiler dropped it (often in the first
    milliseconds of a session, pytorch #192021) or the buffer overflowed."""
    rows, launch = device_work_launches(store)
    if not len(rows):
        return []
    calls = np.flatnonzero(name_mask(store, LAUNCH_CALL) & runtime_mask(store))
    if not len(calls):
        return []
    has = np.zeros(len(store.slices), dtype=bool)
    has[launch[launch >= 0]] = True
    lost = calls[~has[calls] & ~_in_capture(store, calls)]
    if not len(lost):
        return []
    start = store.slices.start_ns
    first = int(start[calls].min())
    early = int((start[lost] < first + EARLY_NS).sum())
    share = len(lost) / len(calls)
    severity = "warn" if share > MISSING_WARN or early else "info"
    when = f", {early:,} of them in the first {ms(EARLY_NS)} of launches" if early else ""
    return [HealthItem(
        "missing.device_work", severity,
        f"{len(lost):,} of {len(calls):,} launch calls have no device work in the trace ({100 * share:.1f} %{when}): "
        "the profiler dropped it, so GPU totals are low",
        len(lost), examples_of(store, lost, lambda r: f"launched nothing recorded: {slice_name(store, r)}"),
        (GPU_BUSY, KERNEL_TIME, OPERATOR_GPU_TIME, ROOFLINE), {"launch_calls": len(calls), "early": early})]


def _in_capture(store: TraceStore, calls: np.ndarray) -> np.ndarray:
    """Per call: made while a graph was being captured (inside a ``capture_*`` region, vLLM's, or
    between a stream's begin- and end-capture calls on its thread): captured work does not run."""
    s = store.slices
    inside = np.zeros(len(calls), dtype=bool)
    regions = np.flatnonzero(name_mask(store, CAPTURE_REGION))
    begins = np.flatnonzero(name_mask(store, BEGIN_CAPTURE))
    ends = np.flatnonzero(name_mask(store, END_CAPTURE))
    spans = [(int(s.track[r]), int(s.start_ns[r]), int(s.end_ns[r])) for r in regions.tolist()]
    for b in begins.tolist():  # the next end-capture on the same thread closes it
        later = ends[(s.track[ends] == s.track[b]) & (s.start_ns[ends] >= s.start_ns[b])]
        if len(later):
            spans.append((int(s.track[b]), int(s.start_ns[b]), int(s.end_ns[later].min())))
    for trk, lo, hi in spans:
        inside |= (s.track[calls] == trk) & (s.start_ns[calls] >= lo) & (s.start_ns[calls] <= hi)
    return inside


def _work_without_launch(store: TraceStore) -> list[HealthItem]:
    rows, launch = device_work_launches(store)
    if not len(rows) or not runtime_mask(store).any():
        return []
    orphan = rows[launch < 0]
    if not len(orphan):
        return []
    share = len(orphan) / len(rows)
    start = store.slices.start_ns
    linked = rows[launch >= 0]
    before = int((start[orphan] < start[linked].min()).sum()) if len(linked) else len(orphan)
    when = f", {before:,} of them before the first launched one (their calls were not recorded)" if before else ""
    return [HealthItem(
        "missing.launch", "warn" if share > MISSING_WARN else "info",
        f"{len(orphan):,} of {len(rows):,} device work items have no launch call in the trace "
        f"({100 * share:.1f} %{when}): their launch delay and operator are unknown",
        len(orphan), examples_of(store, orphan, lambda r: f"has no launch: {slice_name(store, r)}"),
        (LAUNCH_DELAY, OPERATOR_GPU_TIME, ROOFLINE, CRITICAL_PATH))]


def _one_ended_flows(store: TraceStore) -> list[HealthItem]:
    """Flow starts or ends whose other end is not in the trace (the import keeps none of them as
    arrows: it counts them)."""
    starts, ends = warning_count(store, "flow_start_without_end"), warning_count(store, "flow_end_without_start")
    if not starts + ends:
        return []
    return [HealthItem(
        "missing.flow_end", "info", f"{starts + ends:,} flows have one end only ({starts:,} starts, {ends:,} ends): "
        "the other end is not in the trace", starts + ends, doubts=(LAUNCH_DELAY,),
        detail={"starts": starts, "ends": ends})]


def _profiler_overhead(store: TraceStore) -> list[HealthItem]:
    rows = np.flatnonzero(name_mask(store, PROFILER_OVERHEAD))
    if not len(rows):
        return []
    total = int(store.slices.dur_ns[rows].sum())
    return [HealthItem(
        "profiler.overhead", "info",
        f"{len(rows):,} profiler overhead events (CUPTI buffer requests / flushes), {ms(total)} in all: not the "
        "program's work", len(rows), examples_of(store, rows, lambda r: slice_name(store, r)), (), {"total_ns": total})]


def rank_items(store: TraceStore) -> list[HealthItem]:
    """A folder (or one file) of a distributed run: the ranks that are not here."""
    ranks, world = set(), 0
    for src in store.sources:
        info = src.metadata.get("distributedInfo")
        if isinstance(info, dict):
            r, w = info.get("rank"), info.get("world_size")
            if isinstance(r, int) and not isinstance(r, bool):
                ranks.add(r)
            if isinstance(w, int) and not isinstance(w, bool):
                world = max(world, w)
    if world <= 1 or len(ranks) >= world:
        return []
    return [HealthItem(
        "missing.ranks", "info",
        f"{len(ranks):,} of {world:,} ranks are here: cross-rank figures (skew, straggler) cover these only",
        world - len(ranks), doubts=(COLLECTIVES,), detail={"world_size": world, "ranks": len(ranks)})]


def capture_items(store: TraceStore) -> list[HealthItem]:
    """Graph replays whose capture trace is not beside the trace (vLLM writes it to
    ``capture_traces/``): the replayed kernels have no operator, stack or shapes."""
    launches = np.flatnonzero(graph_launch_mask(store))
    if not len(launches):
        return []
    if any(find_capture_traces(Path(src.path)) for src in store.sources if src.path):
        return []
    return [HealthItem(
        "missing.capture", "info",
        f"{len(launches):,} graph launches replay kernels whose capture trace is not beside this one (vLLM writes "
        f"it to {CAPTURE_DIR}/; or pass --capture): their operators, stacks and shapes are unknown",
        len(launches), examples_of(store, launches, lambda r: f"graph launch: {slice_name(store, r)}"),
        (ROOFLINE, OPERATOR_GPU_TIME))]


def graph_hole_items(store: TraceStore, match: CaptureMatch | None) -> list[HealthItem]:
    """Graph launches whose replay lacks kernels its capture has inside the part it replayed
    (known only once the capture trace is matched, as Insights does)."""
    if match is None or not match.holes:
        return []
    launches = np.array([row for row, _ in match.holes], dtype=np.int64)
    missing = sum(n for _, n in match.holes)
    order = np.argsort(store.slices.start_ns[launches], kind="stable")
    by_row = dict(match.holes)
    return [HealthItem(
        "missing.graph_kernels", "warn",
        f"{len(launches):,} graph launches replay fewer kernels than their capture ({missing:,} captured kernels not "
        "replayed inside the replayed part: a conditional/while node's missing iterations, or kernels the profiler "
        "dropped): their GPU time is short", len(launches),
        examples_of(store, launches[order], lambda r: f"graph launch {slice_name(store, r)}: {by_row[r]:,} kernels missing"),
        (KERNEL_TIME, GPU_BUSY), {"kernels_missing": missing})]


def file_items(store: TraceStore) -> list[HealthItem]:
    cut = [src for src in store.sources if src.repaired]
    if not cut:
        return []
    return [HealthItem(
        "file.repaired", "warn",
        f"{len(cut):,} file(s) were cut short and repaired on load ({', '.join(src.label for src in cut[:3])}): "
        "the events after the cut are lost", len(cut), doubts=(GPU_BUSY, KERNEL_TIME))]
