"""Shared pieces of the Nsight Systems reader: the tables it knows, CUPTI enums and the names made
from them, the string table (StringIds fetched only for the ids used), and groups of events
turned into the columns the JSON decoder fills."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from vtui.io.columns import ArgsWriter, Columns
from vtui.io.events import PH_CODE

# Tables that mark a file as an nsys export (any one of them).
NSYS_TABLES = ("StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
                "TARGET_INFO_SESSION_START_TIME", "EXPORT_META_DATA", "META_DATA_EXPORT")
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
               "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
EVENT_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                 "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "OSRT_API")

# CUPTI / nsys enums (stable across versions; newer exports also ship them as ENUM_* tables).
COPY_KIND = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH",
             10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD"}  # 11-13: unified memory migrations
MEM_KIND = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
            6: "Managed Static", 7: "Unknown"}
SYNC_TYPE = {1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}
NVTX_MARK, NVTX_THREAD_NAME, NVTX_PUSH_POP, NVTX_START_END, NVTX_DOMAIN = 34, 39, 59, 60, 75

PH_X, PH_B, PH_I, PH_M = PH_CODE["X"], PH_CODE["B"], PH_CODE["i"], PH_CODE["M"]
PH_S, PH_F = PH_CODE["s"], PH_CODE["f"]
VERSION_SUFFIX = re.compile(r"_v\d+$")  # cudaLaunchKernel_v7000 -> cudaLaunchKernel (as Kineto names it)
MASK24 = 0xFFFFFF


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class Group:
    """Events of one kind from one table, as arrays (row i of each array is one event)."""

    ph: np.ndarray
    ts: np.ndarray  # float64 µs
    dur: np.ndarray
    name: np.ndarray  # int32 local string id
    cat: np.ndarray
    thread: np.ndarray  # int32 into thread keys
    args_blob: bytes | list[np.ndarray]  # the args objects back to back, or uint8 pieces of them
    args_len: np.ndarray
    id_kind: np.ndarray | None = None
    id_val: np.ndarray | None = None
    bp: np.ndarray | None = None
    args_off: np.ndarray | None = None  # set once the args are placed (``ArgsOut.place``)


class ArgsOut:
    """Where the reader's args bytes go: the load's args file as each table is read (so they
    never sit in memory all at once), or memory."""

    def __init__(self, writer: ArgsWriter | None) -> None:
        self.writer = writer
        self.parts: list[bytes | np.ndarray] = []
        self.size = 0

    def put(self, data: bytes | np.ndarray) -> int:
        if self.writer is not None:
            return self.writer.put(memoryview(data))  # any buffer: no copy
        self.parts.append(data)
        self.size += len(data)
        return self.size - len(data)

    def place(self, group: Group) -> None:
        """Write the group's args; its rows' offsets (the pieces hold whole rows, in order)."""
        lens = np.asarray(group.args_len, dtype=np.int64)
        local = np.zeros(len(lens), dtype=np.int64)
        if len(lens) > 1:
            np.cumsum(lens[:-1], out=local[1:])
        pieces = [group.args_blob] if isinstance(group.args_blob, bytes) else group.args_blob or [b""]
        sizes = np.array([len(p) for p in pieces], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        shift = np.array([self.put(p) for p in pieces], dtype=np.int64) - starts
        if (shift == shift[0]).all():  # pieces written back to back
            group.args_off = local + shift[0]
        else:
            group.args_off = local + shift[np.searchsorted(starts, local, side="right") - 1]
        group.args_blob = b""

    def blob(self) -> bytes:
        return b"".join(self.parts)


class ExportReader(Protocol):
    """What the metadata pass reads of the reader (typed here so that neither module imports the other)."""

    con: sqlite3.Connection
    cols: dict[str, list[str]]
    strings: Strings
    cpu_pids: set[int]
    cpu_threads: dict[int, tuple[int, int]]
    gpu_tracks: dict[tuple, tuple[str, Any]]
    nvtx_thread_names: dict[int, str]

    def has(self, table: str, column: str) -> bool: ...
    def int_col(self, table: str, *columns: str, default: int = -1) -> str: ...
    def thread_id(self, key: tuple[Any, Any]) -> int: ...
    def name_exprs(self, table: str, id_columns: Sequence[str], text_columns: Sequence[str]) -> tuple[str, str]: ...
    def resolve_names(self, ids: np.ndarray, texts: Sequence[Any] | None,
                      clean: Callable[[str], str] | None = None) -> np.ndarray: ...


class Strings:
    """Local string table: nsys StringIds (fetched only for the ids used) and texts, interned."""

    def __init__(self, con: sqlite3.Connection, has_ids: bool) -> None:
        self.con = con
        self.has_ids = has_ids
        self.index: dict[str, int] = {}
        self.missing_ids = 0

    def one(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    def texts(self, values: Sequence[str]) -> np.ndarray:
        """Intern many texts: a dict pass over the distinct ones, C-level maps over the rows."""
        for v in dict.fromkeys(values):
            self.index.setdefault(v, len(self.index))
        return np.fromiter(map(self.index.__getitem__, values), dtype=np.int32, count=len(values))

    def lookup(self, ids: np.ndarray, clean: Callable[[str], str] | None = None) -> np.ndarray:
        """Local ids for StringIds ids (-1 or unknown: the empty name, counted)."""
        uniq, inverse = factorize(ids)
        values = self.values_of(uniq[uniq >= 0].tolist())
        counts = np.bincount(inverse, minlength=len(uniq))
        local = np.empty(len(uniq), dtype=np.int32)
        for k, sid in enumerate(uniq.tolist()):
            text = values.get(sid)
            if text is None:
                self.missing_ids += int(counts[k]) if sid >= 0 else 0
                text = ""
            local[k] = self.one(clean(text) if clean else text)
        return local[inverse] if len(ids) else np.zeros(0, dtype=np.int32)

    def values_of(self, ids: list[int]) -> dict[int, str]:
        if not ids or not self.has_ids:
            return {}
        out: dict[int, str] = {}
        step = 900  # below SQLite's smallest limit on bound parameters
        for i in range(0, len(ids), step):
            part = ids[i : i + step]
            sql = f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(part))})"
            for sid, value in self.con.execute(sql, part):
                out[sid] = as_text(value)
        return out


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of an integer array and each value's index into them. Values in a
    narrow range (ids, devices, streams) are counted in a table, in linear time; others sorted."""
    if not len(values):
        return values[:0], np.zeros(0, dtype=np.int64)
    lo, hi = int(values.min()), int(values.max())
    if hi - lo >= max(1 << 16, 2 * len(values)):
        uniq, inverse = np.unique(values, return_inverse=True)
        return uniq, inverse.reshape(-1)
    offset = values - lo
    seen = np.zeros(hi - lo + 1, dtype=bool)
    seen[offset] = True
    rank = np.cumsum(seen) - 1
    return np.flatnonzero(seen) + lo, rank[offset]


def distinct_rows(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of parallel integer columns (as an (k, ncols) array, in lexicographic order)
    and each row's index into them. Each column is factorized, and the codes combined into one
    key where they fit 62 bits; else one lexsort (``np.unique(axis=0)`` sorts a void view and is
    ~10x slower)."""
    n = len(columns[0])
    codes = [factorize(c) for c in columns]
    if n and np.prod([float(len(u)) for u, _ in codes]) < 2.0**62:
        key = np.zeros(n, dtype=np.int64)
        for uniq, code in codes:
            key = key * len(uniq) + code
        ukey, inverse = factorize(key)
        digits = []
        for uniq, _ in reversed(codes):
            digits.append(uniq[ukey % len(uniq)])
            ukey = ukey // len(uniq)
        return np.stack(digits[::-1], axis=1), inverse
    order = np.lexsort(columns[::-1])
    stacked = np.stack([c[order] for c in columns], axis=1)
    new = np.ones(n, dtype=bool)
    new[1:] = (stacked[1:] != stacked[:-1]).any(axis=1)
    group = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = group
    return stacked[new], inverse


def memset_name(codes: tuple) -> str:
    return "Memset" if codes[0] < 0 else f"Memset ({MEM_KIND.get(codes[0], 'Unknown')})"


def memcpy_name(codes: tuple) -> str:
    """Kineto's memcpy names: ``Memcpy HtoD (Pageable -> Device)``."""
    kind, src, dst = codes
    direction = COPY_KIND.get(kind, "Unknown")
    if src < 0 and dst < 0:
        return f"Memcpy {direction}"
    return f"Memcpy {direction} ({MEM_KIND.get(src, 'Unknown')} -> {MEM_KIND.get(dst, 'Unknown')})"


def to_columns(groups: list[Group], strings: Strings, thread_keys: dict, out: ArgsOut) -> Columns:
    """The groups, in order, as the columns the JSON decoder fills (args placed in ``out``)."""
    def cat(get, dtype) -> np.ndarray:
        parts = [np.asarray(get(g), dtype=dtype) for g in groups]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    def fill(attr: str, value, dtype):
        return lambda g: getattr(g, attr) if getattr(g, attr) is not None else np.full(len(g.ts), value, dtype=dtype)

    for g in groups:
        if g.args_off is None:
            out.place(g)
    lens = cat(lambda g: g.args_len, np.int64)
    offs = cat(lambda g: g.args_off, np.int64)
    ph = cat(lambda g: g.ph, np.int8)
    by_phase: dict[str, int] = {}
    for p, code in (("X", PH_X), ("B", PH_B), ("i", PH_I), ("M", PH_M), ("s", PH_S), ("f", PH_F)):
        count = int((ph == code).sum())
        if count:
            by_phase[p] = count
    n = len(ph)
    return Columns(
        ph=ph, ts=cat(lambda g: g.ts, np.float64), dur=cat(lambda g: g.dur, np.float64),
        name=cat(lambda g: g.name, np.int32), cat=cat(lambda g: g.cat, np.int32),
        thread=cat(lambda g: g.thread, np.int32), args_off=offs, args_len=lens.astype(np.int32),
        id_kind=cat(fill("id_kind", 0, np.int8), np.int8), id_val=cat(fill("id_val", 0, np.int64), np.int64),
        scope=np.zeros(n, dtype=np.int8), bp_enclosing=cat(fill("bp", False, bool), bool), flow_v2=[],
        strings=list(strings.index), thread_keys=list(thread_keys), ids=[], args_blob=out.blob(),
        by_phase=by_phase,
    )
