"""The simple path the build's TrackSet replaced: one Track object per track, sorted by a Python
key tuple (as vtui built tracks before they were columns, kept verbatim for the tests). The few methods at the end
adapt it to the interface the build asks of a TrackSet now."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from vtui.store.devices import device_category, device_label, host_category
from vtui.store.grouping import distinct_ids, group_key
from vtui.store.merge import Merged, text_of
from vtui.store.tables import CounterTable, InstantTable, SliceTable
from vtui.store.tracks import ASYNC, COUNTER, GLOBAL, GPU, PROCESS, THREAD, Track, id_sort_key, show_id
from vtui.store.tracktable import TrackTable

_KIND_RANK = {THREAD: 0, GPU: 0, ASYNC: 1, COUNTER: 2, PROCESS: 3, GLOBAL: 4}
_NO_SORT = 0  # a process or thread without a sort index sorts as 0 (Perfetto and Catapult)


class TrackSet:
    def __init__(self, m: Merged) -> None:
        self.m = m
        self.tracks: list[Track] = []
        self._by_key: dict[tuple, int] = {}
        self._thread_lookup = np.full(len(m.thread_keys), -1, dtype=np.int64)
        processes: dict[tuple[int, Any], int] = {}
        self._process_of_thread = np.array(
            [processes.setdefault(key[:2], len(processes)) for key in m.thread_keys] or [0], dtype=np.int64
        )
        self.process_names: dict[tuple[int, Any], str] = {}
        self.process_labels: dict[tuple[int, Any], str] = {}
        self.process_sort: dict[tuple[int, Any], float] = {}
        self.thread_names: dict[tuple[int, Any, Any], str] = {}
        self.thread_sort: dict[tuple[int, Any, Any], float] = {}
        self.labels: list[str] = []
        self.metadata_conflicts = 0  # names / sort indices given again with another value

    # ---- metadata ------------------------------------------------------------------
    def read_metadata(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """Apply process/thread names and sort indices (the last one written wins)."""
        m = self.m
        others = []
        for r in rows.tolist():
            src, pid, tid = m.thread_keys[int(m.thread[r])]
            name = m.strings[int(m.name[r])]
            args = _decode(m.args_blob, int(m.args_off[r]), int(m.args_len[r]))
            value = args.get("name", args.get("labels", args.get("sort_index")))
            if name == "process_name":
                self._set(self.process_names, (src, pid), text_of(value))  # as written
            elif name == "process_labels":
                self._set(self.process_labels, (src, pid), text_of(args.get("labels", value)).strip())
            elif name == "process_sort_index" and isinstance(args.get("sort_index"), (int, float)):
                self._set(self.process_sort, (src, pid), args["sort_index"])
            elif name == "thread_name":
                self._set(self.thread_names, (src, pid, tid), text_of(value))
            elif name == "thread_sort_index" and isinstance(args.get("sort_index"), (int, float)):
                self._set(self.thread_sort, (src, pid, tid), args["sort_index"])
            else:
                others.append({"name": name, "pid": pid, "tid": tid, "args": args})
        return others

    def _set(self, table: dict, key: tuple, value: Any) -> None:
        """The last value wins; a different earlier one is counted for a warning."""
        old = table.get(key, value)
        if old != value and old == old:  # old == old: a NaN sort index never "conflicts"
            self.metadata_conflicts += 1
        table[key] = value

    # ---- creating tracks -------------------------------------------------------------
    def _get(self, key: tuple, make) -> int:
        tid = self._by_key.get(key)
        if tid is None:
            tid = len(self.tracks)
            self._by_key[key] = tid
            self.tracks.append(make(tid))
        return tid

    def _thread_track(self, thread: int) -> int:
        src, pid, tid = self.m.thread_keys[thread]
        given = self.thread_names.get((src, pid, tid)) or ""
        return self._get(
            ("thread", src, pid, tid),
            lambda i: Track(id=i, kind=THREAD, source=src, pid=pid, tid=tid, name=given.strip() or _thread_title(tid),
                            exact_name=tid if isinstance(tid, str) and tid else given),
        )

    def thread_tracks(self, threads: np.ndarray, create: bool = True) -> np.ndarray:
        """Track id per event thread; with ``create=False`` unknown threads give -1."""
        if create:
            for t in distinct_ids(threads):
                if self._thread_lookup[t] < 0:
                    self._thread_lookup[t] = self._thread_track(t)
        return self._thread_lookup[threads] if len(threads) else np.zeros(0, dtype=np.int64)

    def async_groups(self, rows: np.ndarray, family: int) -> np.ndarray:
        """One group per (source, process, cat, id): Perfetto keys async slices per process
        (``InternProcessTrackSet``), so the same id in two processes is two slices (Catapult's
        global ids would join them; where the two disagree vtui follows Perfetto)."""
        m = self.m
        process = self._process_of_thread[m.thread[rows]] + 1
        return group_key(m.source[rows], process, m.cat[rows], m.id_kind[rows], m.id_val[rows],
                         np.full(len(rows), family, dtype=np.int64))

    def async_tracks(self, threads: np.ndarray, names: np.ndarray) -> np.ndarray:
        out = []
        for t, nm in zip(threads.tolist(), names.tolist()):
            src, pid, _ = self.m.thread_keys[t]
            title = self.m.strings[nm] or "[no name]"
            out.append(self._get(("async", src, pid, nm),
                                 lambda i, src=src, pid=pid, title=title: Track(id=i, kind=ASYNC, source=src, pid=pid, name=title)))
        return np.array(out, dtype=np.int64)

    def instant_tracks(self, threads: np.ndarray, scope: np.ndarray) -> np.ndarray:
        out = np.empty(len(threads), dtype=np.int64)
        thread_rows = scope == 0
        out[thread_rows] = self.thread_tracks(threads[thread_rows])
        for i in np.flatnonzero(~thread_rows).tolist():
            src, pid, _ = self.m.thread_keys[int(threads[i])]
            if scope[i] == 1:
                out[i] = self._get(("process", src, pid),
                                   lambda k, src=src, pid=pid: Track(id=k, kind=PROCESS, source=src, pid=pid, name="process instants"))
            else:
                out[i] = self._get(("global", src),
                                   lambda k, src=src: Track(id=k, kind=GLOBAL, source=src, pid=None, name="global instants"))
        return out

    def counter_track(self, thread: int, name: int, id_kind: int, id_val: int, series: str) -> int:
        """The track of one counter series: per process, name, id (if any) and series key."""
        src, pid, _ = self.m.thread_keys[thread]
        base = self.m.strings[name] or "[no name]"
        ident = "" if id_kind == 0 else f"[{_id_text(id_val if id_kind == 1 else self.m.ids[id_val])}]"
        title = base + ident + ("" if series == "value" else f" {series}")
        text_id = self.m.ids[id_val] if id_kind == 2 else None
        exact = self.m.strings[name] + (f" id: {text_id}" if isinstance(text_id, str) else "") + f" {series}"
        return self._get(("counter", src, pid, name, id_kind, id_val, series),
                         lambda i: Track(id=i, kind=COUNTER, source=src, pid=pid, name=title, exact_name=exact))

    # ---- finishing -------------------------------------------------------------------
    def finish(self) -> np.ndarray:
        """Name processes, sort tracks for display and renumber them.

        Returns old id -> new id, with one extra trailing -1 so that -1 maps to -1.
        """
        sort_keys = []
        for t in self.tracks:
            key = (t.source, t.pid)
            t.process_name = self.process_names.get(key, "")
            t.process_label = self.process_labels.get(key, "")
            t.group = self.labels[t.source] if t.source < len(self.labels) else ""
            sort_keys.append((
                t.source, _KIND_RANK[t.kind] == 4, self.process_sort.get(key, _NO_SORT), id_sort_key(t.pid),
                _KIND_RANK[t.kind], self.thread_sort.get((t.source, t.pid, t.tid), _NO_SORT), id_sort_key(t.tid), t.name,
            ))
        order = sorted(range(len(self.tracks)), key=sort_keys.__getitem__)
        remap = np.full(len(self.tracks) + 1, -1, dtype=np.int64)
        remap[np.array(order, dtype=np.int64)] = np.arange(len(order))
        self.tracks = [self.tracks[i] for i in order]
        for new_id, t in enumerate(self.tracks):
            t.id = new_id
        return remap

    def set_slice_stats(self, slices: SliceTable, nested_lanes: np.ndarray, overlapping: np.ndarray) -> None:
        """Per track: slice count, lanes, overlaps, GPU or not. ``slices`` sorted by (track, lane)."""
        n = len(self.tracks)
        bounds = np.searchsorted(slices.track, np.arange(n + 1))
        counts = np.diff(bounds)
        lanes = np.zeros(n, dtype=np.int64)
        has = counts > 0
        lanes[has] = slices.lane[bounds[1:][has] - 1].astype(np.int64) + 1  # the last row has the top lane
        over = np.bincount(slices.track[overlapping], minlength=n)
        gpu_cat = np.array([device_category(s) for s in self.m.strings], dtype=bool)
        gpu = np.zeros(n, dtype=bool)
        gpu[slices.track[gpu_cat[slices.cat_id]]] = True
        host_cat = np.array([host_category(s) for s in self.m.strings], dtype=bool)
        host = np.zeros(n, dtype=bool)
        host[slices.track[host_cat[slices.cat_id]]] = True
        for t in self.tracks:
            t.slice_count = int(counts[t.id])
            t.lanes = int(lanes[t.id])
            t.nested_lanes = int(nested_lanes[t.id]) if t.id < len(nested_lanes) else 0
            t.overlapping = int(over[t.id])
            # A device label alone makes a device track only where no host-side work sits on it.
            if t.kind == THREAD and (gpu[t.id] or (device_label(t.process_label) and not host[t.id])):
                t.kind = GPU

    def set_point_stats(self, instants: InstantTable, counters: CounterTable) -> None:
        n = len(self.tracks)
        ic = np.bincount(instants.track, minlength=n)
        cc = np.bincount(counters.track, minlength=n)
        for t in self.tracks:
            t.instant_count = int(ic[t.id])
            t.counter_count = int(cc[t.id])


    # ---- the interface the build asks of a TrackSet now ---------------------------------
    def __len__(self) -> int:
        return len(self.tracks)

    def thread_overlaps(self) -> int:
        return sum(t.overlapping for t in self.tracks if t.kind in ("thread", "gpu"))

    def table(self) -> TrackTable:
        return TrackTable.from_tracks(self.tracks)


def _id_text(ident: Any) -> str:
    """An id as people read it: integers past int64 (hashes and pointers, written as "0x…") in
    hex, scoped ids (``id2``, ``scope``) as ``scope:id``."""
    if isinstance(ident, tuple):
        return ":".join(_id_text(part) for part in ident)
    if isinstance(ident, int) and not isinstance(ident, bool) and not -(1 << 63) <= ident < 1 << 63:
        return hex(ident)
    return text_of(ident)


def _thread_title(tid: Any) -> str:
    return tid if isinstance(tid, str) and tid else f"thread {show_id(tid)}"


def _decode(blob: bytes, off: int, length: int) -> dict[str, Any]:
    if length <= 0:
        return {}
    try:
        value = msgspec.json.decode(blob[off : off + length])
    except (msgspec.DecodeError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}
