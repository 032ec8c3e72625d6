"""Do the CPU and device clocks agree? Device work that starts before the call that launched it,
a device-wide synchronize that returns before the work it waited for ends, and an estimate of a
constant CPU↔device offset where launches onto an idle stream all start late by about the same."""

from __future__ import annotations

import re

import numpy as np

from vtui.analysis.base.launched import device_work_launches
from vtui.analysis.health.items import (
    CRITICAL_PATH,
    IDLE_SPLIT,
    LAUNCH_DELAY,
    SYNC_POINTS,
    TPOT,
    TTFT,
    HealthItem,
    examples_of,
    ms,
    slice_name,
)
from vtui.store.devices import name_mask
from vtui.store.store import TraceStore

TOLERANCE_NS = 1_000  # Chrome traces are written in µs: a microsecond either way is rounding
OFFSET_MIN_NS = 1_000_000  # launches onto an idle stream that all wait ≥ 1 ms: a clock offset, not overhead
OFFSET_ERROR_NS = 10_000_000  # an offset this large makes every launch delay and idle split wrong
OFFSET_MIN_EVIDENCE = 3  # launches onto an idle stream needed before an offset is estimated
OFFSET_AGREE = 0.25  # their delays agree when the middle half spans ≤ this share of the median
DEVICE_SYNC = re.compile(r"^(cuda|hip)DeviceSynchronize$")


def clock_items(store: TraceStore) -> list[HealthItem]:
    rows, launch = device_work_launches(store)
    known = launch >= 0
    rows, launch = rows[known], launch[known]
    out: list[HealthItem] = []
    if len(rows):
        out += _before_launch(store, rows, launch)
        out += _offsets(store, rows, launch)
        offset = {str(i.detail.get("device")) for i in out if i.key == "clock.offset"}
        out += _first_work_late(store, rows, launch, offset)
    out += _early_device_sync(store, rows, launch)
    return out


def _before_launch(store: TraceStore, rows: np.ndarray, launch: np.ndarray) -> list[HealthItem]:
    start = store.slices.start_ns
    early = start[launch] - start[rows]
    bad = np.flatnonzero(early > TOLERANCE_NS)
    if not len(bad):
        return []
    worst = int(early[bad].max())
    order = bad[np.argsort(-early[bad], kind="stable")]
    severity = "error" if worst > OFFSET_MIN_NS else "warn"
    return [HealthItem(
        "clock.device_before_launch", severity,
        f"{len(bad):,} of {len(rows):,} device work items start before the call that launched them "
        f"(worst {ms(worst)} early): the CPU and device clocks disagree",
        len(bad), examples_of(store, rows[order], lambda r: f"starts before its launch: {slice_name(store, r)}"),
        (LAUNCH_DELAY, IDLE_SPLIT, CRITICAL_PATH, TTFT), {"worst_ns": worst})]


def _offsets(store: TraceStore, rows: np.ndarray, launch: np.ndarray) -> list[HealthItem]:
    """Per device (process of the device tracks): of the work launched while its stream was idle
    (the stream's previous work ended before the launch call started), the launch delays. Launch
    overhead is microseconds; when every such delay is over 1 ms and they agree, the device clock
    is most likely offset from the CPU's by about their median."""
    s = store.slices
    start, end, track = s.start_ns, s.end_ns, s.track
    order = np.lexsort((start[rows], track[rows]))
    rows, launch = rows[order], launch[order]
    trk = track[rows]
    prev_end = np.empty(len(rows), dtype=np.int64)
    prev_end[0] = np.iinfo(np.int64).min
    prev_end[1:] = end[rows[:-1]]
    first_on_stream = np.ones(len(rows), dtype=bool)
    first_on_stream[1:] = trk[1:] != trk[:-1]
    prev_end[first_on_stream] = np.iinfo(np.int64).min
    idle = prev_end < start[launch]
    delay = start[rows] - start[launch]
    device = store.tracks.process_ids()[trk]
    out = []
    for dev in np.unique(device[idle]).tolist():
        pick = np.flatnonzero(idle & (device == dev))
        d = delay[pick]
        if len(d) < OFFSET_MIN_EVIDENCE:
            continue
        q25, med, q75 = (float(v) for v in np.percentile(d, [25, 50, 75]))
        if abs(med) < OFFSET_MIN_NS or (q75 - q25) > OFFSET_AGREE * abs(med):
            continue
        severity = "error" if abs(med) >= OFFSET_ERROR_NS else "warn"
        label = store.tracks[int(trk[pick[0]])].process_title
        ex = pick[np.argsort(-np.abs(d), kind="stable")]
        out.append(HealthItem(
            "clock.offset", severity,
            f"{label}: the device clock looks offset from the CPU's by ≈ {ms(med)} ({len(d):,} launches onto an "
            f"idle stream all start {ms(q25)}–{ms(q75)} after their call): launch delays and CPU-wait figures "
            "take it at face value",
            len(d), examples_of(store, rows[ex], lambda r: f"starts late after its launch: {slice_name(store, r)}"),
            (LAUNCH_DELAY, IDLE_SPLIT, CRITICAL_PATH, TTFT), {"offset_ns": int(med), "evidence": len(d), "device": label}))
    return out


def _first_work_late(store: TraceStore, rows: np.ndarray, launch: np.ndarray, offset: set[str]) -> list[HealthItem]:
    """Per device: its first device work in the trace starts long after its launch call, with
    nothing before it on the device. Either work launched before the profiler started was still
    running (untraced), or the clocks are offset (one launch is too little evidence for
    ``_offsets``): the trace cannot tell, and every time from a step's start to its device work's
    end takes the wait as the step's."""
    s = store.slices
    start = s.start_ns
    device = store.tracks.process_ids()[s.track[rows]]
    title_of, titles = store.tracks.process_titles()  # from the columns: no track object made
    out = []
    for dev in np.unique(device).tolist():
        mine = np.flatnonzero(device == dev)
        first = mine[int(np.argmin(start[rows[mine]]))]
        late = int(start[rows[first]] - start[launch[first]])
        label = titles[int(title_of[int(s.track[rows[first]])])]
        if late < OFFSET_MIN_NS or label in offset:
            continue
        behind = int((start[launch[mine]] < start[rows[first]]).sum()) - 1  # launched while it waited
        out.append(HealthItem(
            "clock.first_work_late", "warn",
            f"{label}: the first device work starts {ms(late)} after the call that launched it, with nothing before it "
            f"on the device in the trace ({behind:,} more device ops launched before it started): work from before the profiler "
            "started was still running, or the clocks are offset; a step's time to its GPU end (TTFT, TPOT, the first "
            "step) and launch delays include it",
            1, examples_of(store, rows[first:first + 1], lambda r: f"starts late on an idle device: {slice_name(store, r)}"),
            (TTFT, TPOT, LAUNCH_DELAY, CRITICAL_PATH, IDLE_SPLIT), {"late_ns": late, "device": label}))
    return out


def _early_device_sync(store: TraceStore, rows: np.ndarray, launch: np.ndarray) -> list[HealthItem]:
    """A device-wide synchronize waits for all work launched before it (in its process): one that
    returns before such work ends means one of the two clocks is off (or the work's end is)."""
    syncs = np.flatnonzero(name_mask(store, DEVICE_SYNC))
    if not len(syncs) or not len(rows):
        return []
    s = store.slices
    start, end = s.start_ns, s.end_ns
    pids = store.tracks.process_ids()
    proc_of_call = pids[s.track[launch]]
    bad_rows, late_by = [], []
    for proc in np.unique(pids[s.track[syncs]]).tolist():
        mine = proc_of_call == proc
        if not mine.any():
            continue
        by_call = np.argsort(start[launch[mine]], kind="stable")
        call_start = start[launch[mine]][by_call]
        work_end = np.maximum.accumulate(end[rows[mine]][by_call])
        here = syncs[pids[s.track[syncs]] == proc]
        k = np.searchsorted(call_start, start[here], side="left")
        has = k > 0
        waited_for = np.where(has, work_end[np.maximum(k - 1, 0)], np.iinfo(np.int64).min)
        late = waited_for - end[here]
        hit = has & (late > TOLERANCE_NS)
        bad_rows.append(here[hit])
        late_by.append(late[hit])
    bad = np.concatenate(bad_rows) if bad_rows else np.zeros(0, dtype=np.int64)
    if not len(bad):
        return []
    late_all = np.concatenate(late_by)
    order = np.argsort(-late_all, kind="stable")
    worst = int(late_all.max())
    return [HealthItem(
        "clock.sync_returns_early", "warn",
        f"{len(bad):,} device synchronize calls return before the work launched ahead of them ends "
        f"(worst by {ms(worst)}): the clocks (or the work's durations) disagree",
        len(bad), examples_of(store, bad[order], lambda r: f"returns before the device is done: {slice_name(store, r)}"),
        (SYNC_POINTS, CRITICAL_PATH, IDLE_SPLIT), {"worst_ns": worst})]
