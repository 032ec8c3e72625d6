"""Create tracks while building, name them from M metadata, and give them a display order.

The tracks are columns from the start: a thread's track is a number per thread key (made for
every new thread of a batch at once), and sorting, naming and the per-track counts are numpy
passes over those columns. Only tracks made one at a time (async, counter, process and global
instants: a few per process) keep a small record each. A trace of a million threads makes no
Python object per track; ``table()`` hands the columns to ``TrackTable``.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import numpy as np

from vtui.io.columns import is_global_id
from vtui.store.devices import device_category, device_label, host_category
from vtui.store.grouping import distinct_ids, group_key
from vtui.store.merge import Merged, text_of
from vtui.store.tables import CounterTable, InstantTable, SliceTable
from vtui.store.tracks import ASYNC, COUNTER, GLOBAL, GPU, PROCESS, THREAD, id_sort_key, show_id
from vtui.store.tracktable import COUNTS, KIND_CODE, TrackTable

_GPU_COUNTERS = re.compile(r"GPU (\d{1,9}) Counters")  # Kineto's pid for a GPU's sampled counters
_KIND_RANK = {THREAD: 0, GPU: 0, ASYNC: 1, COUNTER: 2, PROCESS: 3, GLOBAL: 4}
_NO_SORT = 0  # a process or thread without a sort index sorts as 0 (Perfetto and Catapult)


class TrackSet:
    def __init__(self, m: Merged) -> None:
        self.m = m
        n = len(m.thread_keys)
        # Per thread key: its source and its pid / tid as refs into ``ids`` (distinct values).
        keys = m.thread_keys  # (no zip(*keys): over a million tuples it costs ~0.5 s)
        self._thread_source = np.fromiter((k[0] for k in keys), dtype=np.int32, count=n)
        refs, self.ids, self._id_rank, self._none_ref = _intern_ids([k[1] for k in keys] + [k[2] for k in keys])
        self._thread_pid, self._thread_tid = refs[:n], refs[n:]
        self._process_of_thread = _first_seen_ranks(group_key(self._thread_source, self._thread_pid)) if n else np.zeros(1, dtype=np.int64)
        self._thread_lookup = np.full(n, -1, dtype=np.int64)  # thread -> its track (before the display order)
        self._count = 0  # tracks made so far
        # Tracks made one at a time: track -> (kind, source, pid ref, name) and key -> track.
        self._single: dict[int, tuple[str, int, int, str]] = {}
        self._exact: dict[int, str] = {}  # track -> the name Perfetto's importer gives it (counters)
        self._by_key: dict[tuple, int] = {}
        self.process_names: dict[tuple[int, Any], str] = {}
        self.process_labels: dict[tuple[int, Any], str] = {}
        self.process_sort: dict[tuple[int, Any], float] = {}
        self.thread_names: dict[int, str] = {}  # by thread (an index into ``m.thread_keys``)
        self.thread_sort: dict[int, float] = {}
        self.labels: list[str] = []
        self.metadata_conflicts = 0  # names / sort indices given again with another value
        self.columns: dict[str, np.ndarray] = {}  # after finish(): the tracks in display order
        self.text: list[str] = []
        self._id_refs: dict[tuple[type, Any], int] | None = None  # value -> its ref in ``ids``, made when needed

    def __len__(self) -> int:
        return self._count

    # ---- metadata ------------------------------------------------------------------
    def read_metadata(self, rows: np.ndarray) -> list[dict[str, Any]]:
        """Apply process/thread names and sort indices (the last one written wins)."""
        m = self.m
        others = []
        for r in rows.tolist():
            thread = int(m.thread[r])
            src, pid, tid = m.thread_keys[thread]
            name = m.strings[int(m.name[r])]
            args = _decode(m.args_blob, int(m.args_off[r]), int(m.args_len[r]))
            value = args.get("name", args.get("labels", args.get("sort_index")))
            # A name is a non-empty string (Perfetto: anything else is json_parser_failure and
            # leaves the name as it was, so an empty name never blanks a good one), kept exactly as
            # written (SQL gives it so); titles are made from it trimmed.
            given = args.get("name")
            named = given if isinstance(given, str) and given else None
            if name == "process_name":
                if named is not None:
                    self._set(self.process_names, (src, pid), named)
            elif name == "process_labels":
                self._set(self.process_labels, (src, pid), text_of(args.get("labels", value)).strip())
            elif name == "process_sort_index" and isinstance(args.get("sort_index"), (int, float)):
                self._set(self.process_sort, (src, pid), args["sort_index"])
            elif name == "thread_name":
                if named is not None:
                    self._set(self.thread_names, thread, named)
            elif name == "thread_sort_index" and isinstance(args.get("sort_index"), (int, float)):
                self._set(self.thread_sort, thread, args["sort_index"])
            else:
                others.append({"name": name, "pid": pid, "tid": tid, "args": args})
        return others

    def _set(self, table: dict, key: Any, value: Any) -> None:
        """The last value wins; a different earlier one is counted for a warning."""
        old = table.get(key, value)
        if old != value and old == old:  # old == old: a NaN sort index never "conflicts"
            self.metadata_conflicts += 1
        table[key] = value

    # ---- creating tracks -------------------------------------------------------------
    def _get(self, key: tuple, kind: str, thread: int, name: str, pid_ref: int | None = None) -> int:
        """The track of ``key``, made once: of ``kind``, in the process of ``thread`` (or ``pid_ref``'s)."""
        got = self._by_key.get(key)
        if got is None:
            got = self._by_key[key] = self._count
            pid = self._none_ref if kind == GLOBAL else int(self._thread_pid[thread]) if pid_ref is None else pid_ref
            self._single[got] = (kind, int(self._thread_source[thread]), pid, name)
            self._count += 1
        return got

    def thread_tracks(self, threads: np.ndarray, create: bool = True) -> np.ndarray:
        """Track id per event thread; with ``create=False`` unknown threads give -1."""
        if create and len(threads):
            distinct = np.array(distinct_ids(threads), dtype=np.int64)
            new = distinct[self._thread_lookup[distinct] < 0]
            self._thread_lookup[new] = np.arange(self._count, self._count + len(new))
            self._count += len(new)
        return self._thread_lookup[threads] if len(threads) else np.zeros(0, dtype=np.int64)

    def async_groups(self, rows: np.ndarray, family: int) -> np.ndarray:
        """One group per (source, process, cat, id), across processes for an ``id2.global`` id.

        A plain ``id`` is keyed per process (as Perfetto did before 2023, ``InternProcessTrackSet``):
        Kineto traces reuse the same ids in pid 0 and another process, and current Perfetto, which
        keys them globally, then cuts such slices short on one stack (README, importer rules). An
        ``id2.global`` is global by its writer's word (current Perfetto's
        ``legacy_async_global_slice``, and Catapult): a b in one process and its e in another are one
        slice, drawn on the track of its begin's process."""
        m = self.m
        kind, val = m.id_kind[rows], m.id_val[rows]
        shared = np.zeros(len(rows), dtype=bool)
        other = np.flatnonzero(kind == 2)
        if len(other):
            used = np.unique(val[other])
            is_global = np.array([is_global_id(m.ids[int(i)]) for i in used.tolist()], dtype=bool)
            shared[other] = is_global[np.searchsorted(used, val[other])]
        process = np.where(shared, 0, self._process_of_thread[m.thread[rows]] + 1)
        return group_key(m.source[rows], process, m.cat[rows], kind, val, np.full(len(rows), family, dtype=np.int64))

    def async_tracks(self, threads: np.ndarray, names: np.ndarray) -> np.ndarray:
        out = []
        for t, nm in zip(threads.tolist(), names.tolist()):
            src, pid, _ = self.m.thread_keys[t]
            out.append(self._get(("async", src, pid, nm), ASYNC, t, self.m.strings[nm] or "[no name]"))
        return np.array(out, dtype=np.int64)

    def instant_tracks(self, threads: np.ndarray, scope: np.ndarray) -> np.ndarray:
        out = np.empty(len(threads), dtype=np.int64)
        thread_rows = scope == 0
        out[thread_rows] = self.thread_tracks(threads[thread_rows])
        for i in np.flatnonzero(~thread_rows).tolist():
            t = int(threads[i])
            src, pid, _ = self.m.thread_keys[t]
            if scope[i] == 1:
                out[i] = self._get(("process", src, pid), PROCESS, t, "process instants")
            else:
                out[i] = self._get(("global", src), GLOBAL, t, "global instants")
        return out

    def counter_track(self, thread: int, name: int, id_kind: int, id_val: int, series: str) -> int:
        """The track of one counter series: per process, name, id (if any) and series key. Kineto's
        GPU counters (pid ``"GPU n Counters"``) go in the process of GPU n (pid n), beside its
        streams, where the trace has one."""
        src, pid, _ = self.m.thread_keys[thread]
        key = ("counter", src, pid, name, id_kind, id_val, series)
        if key in self._by_key:
            return self._by_key[key]
        base = self.m.strings[name] or "[no name]"
        ident = "" if id_kind == 0 else f"[{_id_text(id_val if id_kind == 1 else self.m.ids[id_val])}]"
        got = self._get(key, COUNTER, thread, base + ident + ("" if series == "value" else f" {series}"),
                        self._gpu_process(pid))
        # Perfetto's JSON importer: name, " id: " and the id when it is a string, then " " and the key.
        text_id = self.m.ids[id_val] if id_kind == 2 else None
        exact = self.m.strings[name] + (f" id: {text_id}" if isinstance(text_id, str) else "")
        self._exact[got] = f"{exact} {series}"
        return got

    def _gpu_process(self, pid: Any) -> int | None:
        """The pid ref of GPU n's process for Kineto's ``"GPU n Counters"``; None otherwise."""
        found = _GPU_COUNTERS.fullmatch(pid) if isinstance(pid, str) else None
        if found is None:
            return None
        if self._id_refs is None:
            self._id_refs = {(type(v), v): i for i, v in enumerate(self.ids)}
        return self._id_refs.get((int, int(found.group(1))))

    # ---- finishing -------------------------------------------------------------------
    def finish(self) -> np.ndarray:
        """Name processes, sort tracks for display and renumber them; the columns in display order.

        Returns old id -> new id, with one extra trailing -1 so that -1 maps to -1.
        """
        n = self._count
        threads = np.flatnonzero(self._thread_lookup >= 0)
        ids = self._thread_lookup[threads]  # their tracks
        kind = np.full(n, KIND_CODE[THREAD], dtype=np.int8)
        source = np.zeros(n, dtype=np.int32)
        pid = np.zeros(n, dtype=np.int32)
        tid = np.full(n, self._none_ref, dtype=np.int32)
        thread_of = np.full(n, -1, dtype=np.int64)  # the thread of a thread track
        source[ids], pid[ids], tid[ids], thread_of[ids] = (
            self._thread_source[threads], self._thread_pid[threads], self._thread_tid[threads], threads)
        single = np.fromiter(self._single, dtype=np.int64, count=len(self._single))
        records = list(self._single.values())
        if records:
            kind[single] = [KIND_CODE[r[0]] for r in records]
            source[single], pid[single] = [r[1] for r in records], [r[2] for r in records]

        text = _Texts()
        name = np.zeros(n, dtype=np.int32)
        name[ids] = self._thread_titles(threads, text)
        name[single] = [text.ref(r[3]) for r in records]
        exact = np.full(n, text.ref(""), dtype=np.int32)
        exact[ids] = self._exact_thread_names(threads, text)
        exact[list(self._exact)] = [text.ref(v) for v in self._exact.values()]
        process, process_keys = self._processes(source, pid)
        sort_key = self._process_column(process_keys, lambda key: self.process_sort.get(key, _NO_SORT))
        thread_sort = np.zeros(n, dtype=np.int64)
        sort_ranks = self._thread_sort_ranks(threads, records)
        thread_sort[ids], thread_sort[single] = sort_ranks[: len(ids)], sort_ranks[len(ids):]
        name_rank = np.zeros(n, dtype=np.int64)  # only tracks made one at a time can tie before their names
        if records:
            by_name = sorted(range(len(records)), key=lambda i: records[i][3])
            name_rank[single[by_name]] = np.arange(len(records))
        rank_of_kind = np.array([_KIND_RANK[k] for k in KIND_CODE], dtype=np.int64)[kind]
        order = np.lexsort((np.arange(n), name_rank, self._id_rank[tid], thread_sort, rank_of_kind,
                            self._id_rank[pid], sort_key[process], rank_of_kind == 4, source))
        remap = np.full(n + 1, -1, dtype=np.int64)
        remap[order] = np.arange(n)

        groups = [text.ref(label) for label in self.labels]
        process_name = self._process_column(process_keys, lambda key: text.ref(self.process_names.get(key, "")))
        process_label = self._process_column(process_keys, lambda key: text.ref(self.process_labels.get(key, "")))
        group = np.array([groups[s] if s < len(groups) else text.ref("") for s in range(int(source.max(initial=0)) + 1)],
                         dtype=np.int32)
        self._labels_gpu = self._process_column(
            process_keys, lambda key: device_label(self.process_labels.get(key, "")), dtype=bool)[process][order]
        self.columns = {
            "kind": kind[order], "source": source[order], "pid": pid[order], "tid": tid[order], "name": name[order],
            "process_name": process_name[process][order].astype(np.int32),
            "process_label": process_label[process][order].astype(np.int32),
            "group": group[source[order]], "exact_name": exact[order],
            **{c: np.zeros(n, dtype=np.int64) for c in COUNTS},
        }
        self.text = text.values
        return remap

    def _processes(self, source: np.ndarray, pid: np.ndarray) -> tuple[np.ndarray, list[tuple[int, Any]]]:
        """Per track: its process (an index into the returned (source, pid) keys)."""
        if not len(source):
            return np.zeros(0, dtype=np.int64), []
        _, first, process = np.unique(group_key(source, pid), return_index=True, return_inverse=True)
        return process.reshape(-1), [(int(source[k]), self.ids[int(pid[k])]) for k in first.tolist()]

    @staticmethod
    def _process_column(keys: list, value, dtype=np.int64) -> np.ndarray:
        """Per process: ``value(key)``; sort values as their ranks (Python's order of the values)."""
        values = [value(key) for key in keys]
        if dtype is not np.int64 or all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 1 << 62 for v in values):
            return np.array(values, dtype=dtype)
        return _ranks(values)

    def _thread_titles(self, threads: np.ndarray, text: _Texts) -> np.ndarray:
        """Text refs of the thread tracks' names: the thread_name, else "thread <tid>"."""
        out = np.empty(len(threads), dtype=np.int32)
        named = np.zeros(len(threads), dtype=bool)
        if self.thread_names:
            names = {t: v.strip() for t, v in self.thread_names.items() if v.strip()}  # a blank name: the tid's title
            named = np.isin(threads, np.fromiter(names, dtype=np.int64, count=len(names)))
            out[named] = [text.ref(names[t]) for t in threads[named].tolist()]
        tid_refs, where = np.unique(self._thread_tid[threads[~named]], return_inverse=True)
        base = text.extend(_thread_title(self.ids[k]) for k in tid_refs.tolist())
        out[~named] = base + where.reshape(-1)
        return out

    def _exact_thread_names(self, threads: np.ndarray, text: _Texts) -> np.ndarray:
        """Text refs of the thread tracks' exact names, as Perfetto's importer names a thread: a string
        tid (each event with it names its thread by it), else the thread_name as written, else ""."""
        out = np.full(len(threads), text.ref(""), dtype=np.int32)
        if self.thread_names:
            named = np.isin(threads, np.fromiter(self.thread_names, dtype=np.int64, count=len(self.thread_names)))
            out[named] = [text.ref(self.thread_names[t]) for t in threads[named].tolist()]
        tid_refs, where = np.unique(self._thread_tid[threads], return_inverse=True)
        texts = np.array([isinstance(self.ids[k], str) and self.ids[k] != "" for k in tid_refs.tolist()], dtype=bool)
        by_tid = texts[where.reshape(-1)]
        if by_tid.any():
            out[by_tid] = [text.ref(self.ids[k]) for k in tid_refs[where.reshape(-1)[by_tid]].tolist()]
        return out

    def _thread_sort_ranks(self, threads: np.ndarray, records: list[tuple]) -> np.ndarray:
        """The thread sort index of the thread tracks, then of the tracks made one at a time
        (those read it as thread (source, pid, None) had: the old keys' lookup), as ranks."""
        n = len(threads) + len(records)
        if not self.thread_sort:
            return np.zeros(n, dtype=np.int64)
        by_key = {self.m.thread_keys[t]: v for t, v in self.thread_sort.items()}
        values = [self.thread_sort.get(t, _NO_SORT) for t in threads.tolist()]
        values += [by_key.get((src, self.ids[p], None), _NO_SORT) for _, src, p, _ in records]
        return _ranks(values)

    def set_slice_stats(self, slices: SliceTable, nested_lanes: np.ndarray, overlapping: np.ndarray) -> None:
        """Per track: slice count, lanes, overlaps, GPU or not. ``slices`` sorted by (track, lane)."""
        n = len(self)
        c = self.columns
        bounds = np.searchsorted(slices.track, np.arange(n + 1))
        c["slice_count"] = np.diff(bounds).astype(np.int64)
        has = c["slice_count"] > 0
        c["lanes"][has] = slices.lane[bounds[1:][has] - 1].astype(np.int64) + 1  # the last row has the top lane
        k = min(n, len(nested_lanes))
        c["nested_lanes"][:k] = nested_lanes[:k]
        c["overlapping"] = np.bincount(slices.track[overlapping], minlength=n).astype(np.int64)
        gpu_cat = np.array([device_category(s) for s in self.m.strings], dtype=bool)
        gpu = np.zeros(n, dtype=bool)
        gpu[slices.track[gpu_cat[slices.cat_id]]] = True
        host_cat = np.array([host_category(s) for s in self.m.strings], dtype=bool)
        host = np.zeros(n, dtype=bool)
        host[slices.track[host_cat[slices.cat_id]]] = True
        # A device label alone makes a device track only where no host-side work sits on it.
        to_gpu = (c["kind"] == KIND_CODE[THREAD]) & (gpu | (self._labels_gpu & ~host))
        c["kind"][to_gpu] = KIND_CODE[GPU]

    def set_point_stats(self, instants: InstantTable, counters: CounterTable) -> None:
        n = len(self)
        self.columns["instant_count"] = np.bincount(instants.track, minlength=n).astype(np.int64)
        self.columns["counter_count"] = np.bincount(counters.track, minlength=n).astype(np.int64)

    def thread_overlaps(self) -> int:
        """Overlapping slices on thread and GPU tracks (the warning's count)."""
        c = self.columns
        return int(c["overlapping"][np.isin(c["kind"], [KIND_CODE[THREAD], KIND_CODE[GPU]])].sum())

    def table(self) -> TrackTable:
        return TrackTable(self.columns, self.ids, self.text)


class _Texts:
    """Distinct texts of the track table (a block of thread titles may repeat a name: harmless)."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, value: str) -> int:
        got = self._index.get(value)
        if got is None:
            got = self._index[value] = len(self.values)
            self.values.append(value)
        return got

    def extend(self, values) -> int:
        """Append ``values`` as one block; the ref of its first."""
        base = len(self.values)
        self.values.extend(values)
        return base


def _intern_ids(values: list) -> tuple[np.ndarray, list[Any], np.ndarray, int]:
    """Refs into the distinct values, the values (None among them), each one's rank in
    ``id_sort_key`` order, and None's ref. Integers in int64 (every thread key of a usual
    trace): numpy; anything else: a dict."""
    if set(map(type, values)) <= {int}:
        try:
            arr = np.fromiter(values, dtype=np.int64, count=len(values))
        except OverflowError:  # an int past int64: the general path
            arr = None
        if arr is not None:
            distinct, refs = np.unique(arr, return_inverse=True)
            return refs.reshape(-1), [*distinct.tolist(), None], np.arange(len(distinct) + 1), len(distinct)
    index: dict[tuple[type, Any], int] = {}  # by type too: 1 and "1" stay apart
    out = np.fromiter((index.setdefault((type(v), v), len(index)) for v in [*values, None]), dtype=np.int64,
                      count=len(values) + 1)
    ids = [v for _, v in index]
    order = sorted(range(len(ids)), key=lambda i: id_sort_key(ids[i]))
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.array(order, dtype=np.int64)] = np.arange(len(ids))
    return out[:-1], ids, rank, int(out[-1])


def _ranks(values: list) -> np.ndarray:
    """Each value's rank in Python's order of the distinct values (equal values, equal ranks)."""
    distinct = sorted(set(values))
    where = {v: i for i, v in enumerate(distinct)}
    return np.fromiter((where[v] for v in values), dtype=np.int64, count=len(values))


def _first_seen_ranks(key: np.ndarray) -> np.ndarray:
    """Per row: 0, 1, ... in the order its key first appears."""
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


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
