"""Read an Nsight Systems SQLite export (``nsys export --type sqlite``) into the same columns the
JSON path fills, so nothing above the io layer knows where a trace came from.

What becomes what (categories are Kineto's, so GPU analyses work unchanged):
- CUPTI kernels / memcpys / memsets / synchronizations: slices on a track per GPU and stream
  (pid ``"GPU n"``, tid the stream), cats ``kernel`` / ``gpu_memcpy`` / ``gpu_memset`` / ``cuda_sync``;
- CUDA runtime (and driver) calls: slices on their CPU thread, cats ``cuda_runtime`` / ``cuda_driver``;
  each kernel, memcpy and memset is joined to its call by correlation id: a flow (``ac2g``) and a
  ``correlation`` arg on both;
- NVTX ranges: slices on their thread (cat ``nvtx``); marks: thread instants; OS runtime calls: ``osrt``;
- thread, process and GPU names: metadata events, as a Chrome trace writes them.

Tables and columns differ between nsys versions: every column is looked up by name
(``PRAGMA table_info``), a missing table means none of those events (a counted note), and all
work is per table in SQL and numpy; Python loops run over distinct values only (names, threads).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from vtui.errors import TraceLoadError
from vtui.io.columns import ArgsWriter, Columns
from vtui.io.events import PH_CODE
from vtui.io.sqlbulk import NULL, Connections, fetch_ints, int_sql, json_objects

SQLITE_MAGIC = b"SQLite format 3\x00"
FORM = "nsys-sqlite"

# Tables that mark a file as an nsys export (any one of them).
_NSYS_TABLES = ("StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
                "TARGET_INFO_SESSION_START_TIME", "EXPORT_META_DATA", "META_DATA_EXPORT")
_GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
               "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
_EVENT_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                 "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "OSRT_API")

# CUPTI / nsys enums (stable across versions; newer exports also ship them as ENUM_* tables).
COPY_KIND = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH",
             10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD"}  # 11-13: unified memory migrations
MEM_KIND = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
            6: "Managed Static", 7: "Unknown"}
SYNC_TYPE = {1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}
NVTX_MARK, NVTX_THREAD_NAME, NVTX_PUSH_POP, NVTX_START_END, NVTX_DOMAIN = 34, 39, 59, 60, 75

_X, _B, _I, _M = PH_CODE["X"], PH_CODE["B"], PH_CODE["i"], PH_CODE["M"]
_S, _F = PH_CODE["s"], PH_CODE["f"]
_VERSION_SUFFIX = re.compile(r"_v\d+$")  # cudaLaunchKernel_v7000 -> cudaLaunchKernel (as Kineto names it)
_MASK24 = 0xFFFFFF

Progress = Callable[[float], None]


def is_sqlite(path: str | Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


@dataclass
class NsysResult:
    columns: Columns
    metadata: dict[str, Any]
    warnings: list[str]


def read_nsys(path: str | Path, args: ArgsWriter | None = None, progress: Progress | None = None,
              jobs: int = 1) -> NsysResult:
    """Read an nsys SQLite export (big tables on ``jobs`` threads). Raises TraceLoadError (one
    line) for a foreign or damaged file."""
    path = Path(path)
    cons = Connections(lambda: _connect(path), jobs)
    try:
        con = cons.get()
    except sqlite3.Error as exc:
        raise TraceLoadError(f"{path}: cannot open the SQLite file ({exc})") from None
    try:
        return _Reader(con, cons, path, args, progress).read()
    except sqlite3.OperationalError as exc:  # a query the file's schema does not allow
        raise TraceLoadError(f"{path}: unexpected Nsight Systems export schema ({exc})") from None
    except (sqlite3.Error, OverflowError) as exc:  # "database disk image is malformed", "file is not a database"
        raise TraceLoadError(f"{path}: damaged SQLite database ({exc})") from None
    finally:
        cons.close()


def _connect(path: Path) -> sqlite3.Connection:
    # Read-only by URI; immutable: an export is a finished file, so no locks (works on read-only
    # mounts). A file with a WAL beside it may still be written: open it without ``immutable``.
    wal = path.with_name(path.name + "-wal").exists()
    uri = path.resolve().as_uri() + ("?mode=ro" if wal else "?mode=ro&immutable=1")
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class _Group:
    """Events of one kind from one table, as arrays (row i of each array is one event)."""

    ph: np.ndarray
    ts: np.ndarray  # float64 µs
    dur: np.ndarray
    name: np.ndarray  # int32 local string id
    cat: np.ndarray
    thread: np.ndarray  # int32 into thread keys
    args_blob: bytes
    args_len: np.ndarray
    id_kind: np.ndarray | None = None
    id_val: np.ndarray | None = None
    bp: np.ndarray | None = None


class _Strings:
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
        uniq, inverse = np.unique(ids, return_inverse=True)
        values = self._fetch(uniq[uniq >= 0].tolist())
        counts = np.bincount(inverse.reshape(-1), minlength=len(uniq))
        local = np.empty(len(uniq), dtype=np.int32)
        for k, sid in enumerate(uniq.tolist()):
            text = values.get(sid)
            if text is None:
                self.missing_ids += int(counts[k]) if sid >= 0 else 0
                text = ""
            local[k] = self.one(clean(text) if clean else text)
        return local[inverse.reshape(-1)] if len(ids) else np.zeros(0, dtype=np.int32)

    def _fetch(self, ids: list[int]) -> dict[int, str]:
        if not ids or not self.has_ids:
            return {}
        out: dict[int, str] = {}
        step = 900  # below SQLite's smallest limit on bound parameters
        for i in range(0, len(ids), step):
            part = ids[i : i + step]
            sql = f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(part))})"
            for sid, value in self.con.execute(sql, part):
                out[sid] = _as_text(value)
        return out


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


@dataclass
class _Reader:
    con: sqlite3.Connection
    cons: Connections
    path: Path
    args: ArgsWriter | None
    progress: Progress | None
    groups: list[_Group] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    thread_keys: dict[tuple[Any, Any], int] = field(default_factory=dict)
    cols: dict[str, list[str]] = field(default_factory=dict)
    cpu_pids: set[int] = field(default_factory=set)
    cpu_threads: dict[int, tuple[int, int]] = field(default_factory=dict)  # globalTid -> (pid, tid)
    gpu_tracks: dict[tuple, tuple[str, Any]] = field(default_factory=dict)  # (dev, pid, ctx, stream) -> key
    launches: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    gpu_work: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    gpu_pid: bool = True  # every GPU table has globalPid
    domains: dict[int, str] = field(default_factory=dict)  # NVTX domain id -> name
    nvtx_thread_names: dict[int, str] = field(default_factory=dict)  # globalTid -> name (nvtxNameOsThread)

    # ---- schema ----------------------------------------------------------------------
    def _load_schema(self) -> None:
        names = [r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
        for name in names:
            if isinstance(name, str):
                self.cols[name] = [r[1] for r in self.con.execute(f"PRAGMA table_info({_quote(name)})")]
        if not any(t in self.cols for t in _NSYS_TABLES):
            raise TraceLoadError(f"{self.path}: an SQLite file, but not an Nsight Systems export "
                                 "(no StringIds, CUPTI, NVTX or export metadata tables)")

    def has(self, table: str, column: str) -> bool:
        return column in self.cols.get(table, ())

    def _int(self, table: str, *columns: str, default: int = -1) -> str:
        """SQL for the first of ``columns`` the table has, as an integer (NULL -> default)."""
        found = [_quote(c) for c in columns if self.has(table, c)]
        if not found:
            return str(default)
        inner = found[0] if len(found) == 1 else f"coalesce({', '.join(found)})"
        return f"coalesce(CAST({inner} AS INTEGER), {default})"

    def _gpid(self, table: str) -> str:
        return self._int(table, "globalPid") if self.gpu_pid else "-1"

    def _fetch(self, table: str, exprs: dict[str, str], args: Sequence[tuple[str, list[str]]] = (),
               raw_args: Sequence[tuple[str, str]] = ()) -> dict[str, Any] | None:
        """Integer columns of every row, in bulk (``exprs``: name -> SQL, never NULL), plus the
        args fields (JSON key, columns; several columns make an array), kept NULL-aware.
        Rows without a start or end are dropped, counted. None for an empty table."""
        sql = list(exprs.values())
        fields: list[tuple[str, int, int]] = []  # key, first column, column count
        for key, columns in args:
            present = [c for c in columns if self.has(table, c)]
            if present:
                fields.append((key, len(sql), len(present) if len(columns) > 1 else 0))
                sql.extend(int_sql(_quote(c)) for c in present)
        for key, expr in raw_args:
            fields.append((key, len(sql), 0))
            sql.append(expr)
        values = fetch_ints(self.cons, _quote(table), sql)
        if not len(values):
            return None
        ok = (values[:, 0] >= 0) & (values[:, 1] >= 0)  # start, end
        if not ok.all():
            self.notes.append(f"{int((~ok).sum()):,} {table} rows without a start or end (skipped)")
        data: dict[str, Any] = {k: values[ok, i] for i, k in enumerate(exprs)}
        data["args"] = [(key, values[ok, at] if width == 0 else values[ok, at : at + width])
                        for key, at, width in fields]
        data["keep"] = ok
        return data

    def _rows(self, sql: str) -> list[tuple]:
        rows = self.con.execute(sql).fetchall()
        return list(zip(*rows)) if rows else []

    # ---- output ----------------------------------------------------------------------
    def _add(self, group: _Group) -> None:
        if len(group.ts):
            self.groups.append(group)

    def _thread(self, key: tuple[Any, Any]) -> int:
        return self.thread_keys.setdefault(key, len(self.thread_keys))

    def _cpu_threads(self, gtids: np.ndarray) -> np.ndarray:
        """Thread ids for globalTids: pid and tid unpacked, per distinct value."""
        uniq, inverse = np.unique(gtids, return_inverse=True)
        local = np.empty(len(uniq), dtype=np.int32)
        for k, g in enumerate(uniq.tolist()):
            pid, tid = (g >> 24) & _MASK24, g & _MASK24
            self.cpu_threads[g] = (pid, tid)
            self.cpu_pids.add(pid)
            local[k] = self._thread((pid, tid))
        return local[inverse.reshape(-1)] if len(gtids) else np.zeros(0, dtype=np.int32)

    def _plan_gpu_tracks(self) -> None:
        """A track per (device, stream); a stream number used by several processes or contexts
        on one device gets one track per owner (stream ids are per context). Decided over all
        GPU tables at once, so a kernel and a memcpy on one stream share its track."""
        present = [t for t in _GPU_TABLES if t in self.cols]
        # Old exports have no globalPid on GPU rows: then no table's is used (tracks and launch
        # joins by device, stream and correlation id alone), so all tables agree.
        self.gpu_pid = all(self.has(t, "globalPid") for t in present)
        combos: set[tuple[int, int, int, int]] = set()
        for table in present:
            if table in self.cols:
                sql = (f"SELECT DISTINCT {self._int(table, 'deviceId')}, {self._gpid(table)}, "
                       f"{self._int(table, 'contextId')}, {self._int(table, 'streamId')} FROM {_quote(table)}")
                combos.update(self.con.execute(sql).fetchall())
        owners: dict[tuple[int, int], int] = {}
        for d, _p, _c, s in combos:
            owners[(d, s)] = owners.get((d, s), 0) + 1
        for d, p, c, s in sorted(combos):
            who = f"pid {(p >> 24) & _MASK24}, context {c}"
            if s < 0:
                tid: Any = "sync" if owners[(d, s)] == 1 else f"sync ({who})"
            else:
                tid = s if owners[(d, s)] == 1 else f"stream {s} ({who})"
            self.gpu_tracks[(d, p, c, s)] = (f"GPU {d}", tid)

    def _gpu_threads(self, dev: np.ndarray, gpid: np.ndarray, ctx: np.ndarray, stream: np.ndarray) -> np.ndarray:
        if not len(dev):
            return np.zeros(0, dtype=np.int32)
        uniq, inverse = _distinct_rows(dev, gpid, ctx, stream)
        local = np.array([self._thread(self.gpu_tracks.get(tuple(k)) or (f"GPU {k[0]}", k[3]))
                          for k in uniq.tolist()], dtype=np.int32)
        return local[inverse]

    # ---- reading ---------------------------------------------------------------------
    def read(self) -> NsysResult:
        self._load_schema()
        self.strings = _Strings(self.con, "StringIds" in self.cols)
        missing = [t for t in _EVENT_TABLES if t not in self.cols]
        self._plan_gpu_tracks()
        steps = [self._kernels, self._memcpys, self._memsets, self._syncs, self._runtime, self._nvtx, self._osrt]
        for k, step in enumerate(steps):
            step()
            if self.progress:
                self.progress((k + 1) / (len(steps) + 2))
        self._flows()
        meta_group = self._metadata()
        if missing:
            self.notes.append(f"nsys export without {len(missing)} table(s) (none of those events): "
                              + ", ".join(missing))
        if self.strings.missing_ids:
            self.notes.append(f"{self.strings.missing_ids:,} names pointed at no StringIds entry (shown empty)")
        columns = self._finish([meta_group, *self.groups])
        if self.progress:
            self.progress(1.0)
        return NsysResult(columns, self._export_metadata(), self.notes)

    _GPU_ARGS = [("device", ["deviceId"]), ("context", ["contextId"]), ("stream", ["streamId"]),
                 ("correlation", ["correlationId"])]

    def _select_gpu(self, table: str, extra: dict[str, str], args: list[tuple[str, list[str]]],
                    raw_args: Sequence[tuple[str, str]] = ()) -> dict[str, Any] | None:
        if table not in self.cols:
            return None
        exprs = {"start": self._int(table, "start"), "end": self._int(table, "end"), "gpid": self._gpid(table), **extra}
        data = self._fetch(table, exprs, [*self._GPU_ARGS, *args], raw_args)
        if data is not None:  # the ids in the args, NULL there, -1 here
            fields = dict(data["args"])
            for key, arg in (("dev", "device"), ("ctx", "context"), ("stream", "stream"), ("corr", "correlation")):
                values = fields.get(arg)
                data[key] = np.full(len(data["start"]), -1, dtype=np.int64) if values is None else \
                    np.where(values == NULL, -1, values)
        return data

    def _slices(self, data: dict[str, Any], names: np.ndarray, threads: np.ndarray, cat: str) -> None:
        n = len(names)
        blob, lens = json_objects(data["args"], n)
        self._add(_Group(ph=np.full(n, _X, dtype=np.int8), ts=data["start"] / 1000.0,
                         dur=(data["end"] - data["start"]) / 1000.0, name=names,
                         cat=np.full(n, self.strings.one(cat), dtype=np.int32), thread=threads,
                         args_blob=blob, args_len=lens))

    def _gpu_group(self, data: dict[str, Any], names: np.ndarray, cat: str, work: bool) -> None:
        threads = self._gpu_threads(data["dev"], data["gpid"], data["ctx"], data["stream"])
        self._slices(data, names, threads, cat)
        if work:  # the flow's f end binds where the activity starts, on its stream
            self.gpu_work.append((data["gpid"], data["corr"], data["start"], threads))

    def _kernels(self) -> None:
        t = "CUPTI_ACTIVITY_KIND_KERNEL"
        extra = {"name": self._int(t, "demangledName", "shortName", "mangledName")}
        shared = [c for c in ("staticSharedMemory", "dynamicSharedMemory") if self.has(t, c)]
        # Kineto's "shared memory" is static + dynamic
        raw = [("shared memory", " + ".join(f"coalesce(CAST({_quote(c)} AS INTEGER), 0)" for c in shared))] if shared else []
        data = self._select_gpu(t, extra, [("grid", ["gridX", "gridY", "gridZ"]), ("block", ["blockX", "blockY", "blockZ"]),
                                           ("registers per thread", ["registersPerThread"])], raw)
        if data is not None:
            self._gpu_group(data, self.strings.lookup(data["name"]), "kernel", True)

    def _memcpys(self) -> None:
        t = "CUPTI_ACTIVITY_KIND_MEMCPY"
        extra = {"kind": self._int(t, "copyKind"), "src": self._int(t, "srcKind"), "dst": self._int(t, "dstKind")}
        data = self._select_gpu(t, extra, [("bytes", ["bytes"])])
        if data is not None:
            names = self._coded_names(np.stack([data["kind"], data["src"], data["dst"]], axis=1), _memcpy_name)
            self._gpu_group(data, names, "gpu_memcpy", True)

    def _memsets(self) -> None:
        t = "CUPTI_ACTIVITY_KIND_MEMSET"
        data = self._select_gpu(t, {"mem": self._int(t, "memKind", "memoryKind")}, [("bytes", ["bytes"]), ("value", ["value"])])
        if data is not None:
            self._gpu_group(data, self._coded_names(data["mem"][:, None], _memset_name), "gpu_memset", True)

    def _syncs(self) -> None:
        t = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
        data = self._select_gpu(t, {"type": self._int(t, "syncType")}, [("event", ["eventId"])])
        if data is not None:
            names = self._coded_names(data["type"][:, None], lambda k: SYNC_TYPE.get(k[0], "Synchronization"))
            self._gpu_group(data, names, "cuda_sync", False)

    def _coded_names(self, codes: np.ndarray, name_of: Callable[[tuple], str]) -> np.ndarray:
        """Names made from a few enum columns: one string per distinct combination."""
        if not len(codes):
            return np.zeros(0, dtype=np.int32)
        uniq, inverse = _distinct_rows(*codes.T)
        local = np.array([self.strings.one(name_of(tuple(u))) for u in uniq.tolist()], dtype=np.int32)
        return local[inverse]

    def _runtime(self) -> None:
        for table, cat in (("CUPTI_ACTIVITY_KIND_RUNTIME", "cuda_runtime"), ("CUPTI_ACTIVITY_KIND_DRIVER", "cuda_driver")):
            if table not in self.cols:
                continue
            data = self._cpu_table(table, {"corr": self._int(table, "correlationId")},
                                   [("correlation", ["correlationId"]), ("return value", ["returnValue"])],
                                   clean=lambda s: _VERSION_SUFFIX.sub("", s), cat=cat)
            if data is not None:
                self.launches.append((data["gtid"], data["corr"], data["start"], data["thread"]))

    def _osrt(self) -> None:
        if "OSRT_API" in self.cols:
            self._cpu_table("OSRT_API", {}, [("return value", ["returnValue"])], cat="osrt")

    def _name_exprs(self, table: str, id_columns: Sequence[str], text_columns: Sequence[str]) -> tuple[str, str]:
        """(id SQL, text SQL) for a name that is a StringIds id in some versions and text in
        others (a column may even hold either: its SQLite type decides)."""
        ids = [c for c in id_columns if self.has(table, c)] + [c for c in text_columns if self.has(table, c)]
        texts = [c for c in text_columns if self.has(table, c)]
        id_sql = ("coalesce(" + ", ".join(f"CASE WHEN typeof({_quote(c)}) = 'integer' THEN {_quote(c)} END"
                                           for c in ids) + ", -1)") if ids else "-1"
        cases = [f"CASE WHEN typeof({_quote(c)}) = 'text' AND {_quote(c)} <> '' THEN {_quote(c)} END" for c in texts]
        text_sql = "NULL" if not cases else cases[0] if len(cases) == 1 else f"coalesce({', '.join(cases)})"
        return id_sql, text_sql

    def _names(self, ids: np.ndarray, texts: Sequence[Any] | None,
               clean: Callable[[str], str] | None = None) -> np.ndarray:
        local = self.strings.lookup(ids, clean)
        if texts is not None:
            arr = np.array(texts, dtype=object)
            inline = np.flatnonzero(np.not_equal(arr, None))
            if len(inline):
                values = [_as_text(v) for v in arr[inline].tolist()] if clean is None else \
                    [clean(_as_text(v)) for v in arr[inline].tolist()]
                local[inline] = self.strings.texts(values)
        return local

    def _cpu_table(self, table: str, extra: dict[str, str], args: list[tuple[str, list[str]]],
                   clean: Callable[[str], str] | None = None, cat: str = "cuda_runtime") -> dict[str, Any] | None:
        """Calls on CPU threads (runtime, driver, OS runtime) as slices; returns their columns."""
        id_sql, text_sql = self._name_exprs(table, ["nameId"], ["name"])
        exprs = {"start": self._int(table, "start"), "end": self._int(table, "end"),
                 "gtid": self._int(table, "globalTid"), "name": id_sql, **extra}
        data = self._fetch(table, exprs, args)
        if data is None:
            return None
        texts = None
        if text_sql != "NULL" and self.con.execute(f"SELECT 1 FROM {_quote(table)} WHERE {text_sql} IS NOT NULL "
                                                   "LIMIT 1").fetchone():
            # Names written as text (some versions): fetched row by row, in the same rowid order.
            texts = [r[0] for r in self.con.execute(f"SELECT {text_sql} FROM {_quote(table)} ORDER BY rowid")]
            texts = [t for t, k in zip(texts, data["keep"].tolist()) if k]
        data["thread"] = self._cpu_threads(data["gtid"])
        self._slices(data, self._names(data["name"], texts, clean), data["thread"], cat)
        return data

    def _nvtx(self) -> None:
        t = "NVTX_EVENTS"
        if t not in self.cols:
            return
        id_sql, text_sql = self._name_exprs(t, ["textId"], ["text"])
        cols = self._rows(f"SELECT {self._int(t, 'start')}, {self._int(t, 'end')}, {self._int(t, 'eventType')}, "
                          f"{self._int(t, 'globalTid')}, {id_sql}, {self._int(t, 'domainId', default=0)}, {text_sql} "
                          f"FROM {_quote(t)}")
        if not cols:
            return
        start, end, kind, gtid, text_id, domain = (np.fromiter(c, dtype=np.int64, count=len(c)) for c in cols[:6])
        texts = np.array(cols[6], dtype=object)
        # Domain and thread names are definitions, not events (a few rows: plain Python).
        for i in np.flatnonzero((kind == NVTX_DOMAIN) | (kind == NVTX_THREAD_NAME)).tolist():
            text = _as_text(texts[i]) if texts[i] is not None else ""
            if not text and text_id[i] >= 0:
                text = self.strings._fetch([int(text_id[i])]).get(int(text_id[i]), "")
            if kind[i] == NVTX_DOMAIN:
                self.domains[int(domain[i])] = text
            else:
                self.nvtx_thread_names[int(gtid[i])] = text
        ranges = np.isin(kind, [NVTX_PUSH_POP, NVTX_START_END]) & (start >= 0)
        marks = (kind == NVTX_MARK) & (start >= 0)
        rows = np.flatnonzero(ranges | marks)
        if not len(rows):
            return
        names = self._names(text_id[rows], texts[rows].tolist())
        threads = self._cpu_threads(gtid[rows])
        is_range = ranges[rows]
        closed = end[rows] >= start[rows]
        ph = np.where(is_range, np.where(closed, _X, _B), _I).astype(np.int8)
        open_ranges = int((is_range & ~closed).sum())
        if open_ranges:
            self.notes.append(f"{open_ranges:,} NVTX ranges were never ended (they run to the trace end)")
        # args: the domain name, one JSON text per distinct domain.
        dom = domain[rows]
        uniq, inverse = np.unique(dom, return_inverse=True)
        per = [msgspec.json.encode({"domain": self.domains.get(d, f"domain {d}")}) if d > 0 else b"" for d in uniq.tolist()]
        per_len = np.array([len(p) for p in per], dtype=np.int32)
        lens = per_len[inverse.reshape(-1)]
        blob = b"".join(map(per.__getitem__, inverse.reshape(-1).tolist())) if per_len.any() else b""
        self._add(_Group(ph=ph, ts=start[rows] / 1000.0,
                         dur=np.where(is_range & closed, end[rows] - start[rows], 0) / 1000.0,
                         name=names, cat=np.full(len(rows), self.strings.one("nvtx"), dtype=np.int32),
                         thread=threads, args_blob=blob, args_len=lens))

    # ---- flows -----------------------------------------------------------------------
    def _flows(self) -> None:
        """One s/f pair per GPU activity whose launching call is known (by correlation id within
        its process); each pair its own id, so a call that starts many activities (a graph
        launch, a cudaMemcpy in pieces) draws an arrow to each."""
        if not self.launches or not self.gpu_work:
            if self.gpu_work:
                n = sum(len(w[0]) for w in self.gpu_work)
                self.notes.append(f"{n:,} GPU activities have no runtime call (no runtime table)")
            return
        r_gtid, r_corr, r_start, r_thread = (np.concatenate(x) for x in zip(*self.launches))
        g_gpid, g_corr, g_start, g_thread = (np.concatenate(x) for x in zip(*self.gpu_work))
        with_pid = self.gpu_pid  # old exports: no globalPid on GPU rows, correlation ids alone
        r_key = (((r_gtid >> 24) & _MASK24) << 32 | (r_corr & 0xFFFFFFFF)) if with_pid else r_corr
        g_key = (((g_gpid >> 24) & _MASK24) << 32 | (g_corr & 0xFFFFFFFF)) if with_pid else g_corr
        valid = np.flatnonzero(r_corr >= 0)
        # Some exports hold a call twice under one correlation id (a wrapper record around the
        # CUPTI one, on the same thread): the launch is the innermost, the one starting last.
        order = np.lexsort((r_start[valid], r_key[valid]))
        sorted_keys, sorted_rows = r_key[valid][order], valid[order]
        pos = np.searchsorted(sorted_keys, g_key, side="right") - 1
        hit = (pos >= 0) & (g_corr >= 0)
        hit[hit] = sorted_keys[pos[hit]] == g_key[hit]
        unmatched = int((~hit).sum())
        if unmatched:
            self.notes.append(f"{unmatched:,} GPU activities have no runtime call with their correlation id")
        gpu_rows = np.flatnonzero(hit)
        cpu_rows = sorted_rows[pos[gpu_rows]]
        n = len(gpu_rows)
        if not n:
            return
        ac2g = self.strings.one("ac2g")
        ids = np.arange(n, dtype=np.int64)
        for ph, ts, thread, bp in ((_S, r_start[cpu_rows], r_thread[cpu_rows], False),
                                   (_F, g_start[gpu_rows], g_thread[gpu_rows], True)):
            self._add(_Group(ph=np.full(n, ph, dtype=np.int8), ts=ts / 1000.0, dur=np.full(n, np.nan),
                             name=np.full(n, ac2g, dtype=np.int32), cat=np.full(n, ac2g, dtype=np.int32),
                             thread=thread.astype(np.int32), args_blob=b"", args_len=np.zeros(n, dtype=np.int32),
                             id_kind=np.ones(n, dtype=np.int8), id_val=ids, bp=np.full(n, bp)))

    # ---- names and metadata --------------------------------------------------------------
    def _metadata(self) -> _Group:
        """process_name / thread_name / process_labels events, as a Chrome trace has them."""
        events: list[tuple[str, tuple[Any, Any], dict[str, Any]]] = []
        pnames = self._process_names()
        for pid in sorted(self.cpu_pids):
            if pid in pnames:
                events.append(("process_name", (pid, 0), {"name": pnames[pid]}))
        tnames = self._thread_names()
        for gtid, (pid, tid) in sorted(self.cpu_threads.items()):
            name = self.nvtx_thread_names.get(gtid) or tnames.get(gtid)
            if name:
                events.append(("thread_name", (pid, tid), {"name": name}))
        gpus = self._gpu_names()
        seen: set[str] = set()
        for (dev, _pid, _ctx, _stream), (gpid, tid) in sorted(self.gpu_tracks.items()):
            if gpid not in seen:
                seen.add(gpid)
                events.append(("process_name", (gpid, 0), {"name": gpid}))
                label = f"{gpid} ({gpus[dev]})" if gpus.get(dev) else gpid
                events.append(("process_labels", (gpid, 0), {"labels": label}))
            events.append(("thread_name", (gpid, tid), {"name": f"stream {tid}" if isinstance(tid, int) else tid}))
        blobs = [msgspec.json.encode(a) for _, _, a in events]
        n = len(events)
        meta_threads = np.array([self._thread(k) for _, k, _ in events], dtype=np.int32)
        return _Group(ph=np.full(n, _M, dtype=np.int8), ts=np.zeros(n), dur=np.full(n, np.nan),
                      name=np.array([self.strings.one(e[0]) for e in events], dtype=np.int32),
                      cat=np.full(n, self.strings.one("__metadata"), dtype=np.int32), thread=meta_threads,
                      args_blob=b"".join(blobs), args_len=np.array([len(b) for b in blobs], dtype=np.int32))

    def _process_names(self) -> dict[int, str]:
        t = "PROCESSES"
        if t not in self.cols or not self.cpu_pids:
            return {}
        id_sql, text_sql = self._name_exprs(t, [], ["name"])
        pid_sql = (f"(({self._int(t, 'globalPid')} >> 24) & {_MASK24})" if self.has(t, "globalPid")
                   else self._int(t, "pid"))
        out: dict[int, str] = {}
        for pid, text in self.con.execute(f"SELECT {pid_sql}, {text_sql} FROM {_quote(t)}"):
            if pid in self.cpu_pids and text is not None:
                out[pid] = _as_text(text)
        return out

    def _thread_names(self) -> dict[int, str]:
        t = "ThreadNames"
        if t not in self.cols or not self.cpu_threads:
            return {}
        id_sql, text_sql = self._name_exprs(t, ["nameId"], ["name"])
        rows = self.con.execute(f"SELECT {self._int(t, 'globalTid')}, {id_sql}, {text_sql} FROM {_quote(t)}").fetchall()
        rows = [r for r in rows if r[0] in self.cpu_threads]
        if not rows:
            return {}
        names = self._names(np.array([r[1] for r in rows], dtype=np.int64), [r[2] for r in rows])
        strings = list(self.strings.index)
        return {r[0]: strings[k] for r, k in zip(rows, names.tolist()) if strings[k]}

    def _gpu_names(self) -> dict[int, str]:
        t = "TARGET_INFO_GPU"
        if t not in self.cols or not self.has(t, "name"):
            return {}
        dev = self._int(t, "id", "cuDevice")
        return {d: _as_text(n) for d, n in self.con.execute(f"SELECT {dev}, name FROM {_quote(t)}") if n is not None}

    def _export_metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        for table in ("EXPORT_META_DATA", "META_DATA_EXPORT"):
            if self.has(table, "name") and self.has(table, "value"):
                for name, value in self.con.execute(f"SELECT name, value FROM {_quote(table)}"):
                    if isinstance(name, str):
                        meta[name] = _as_text(value)
        out: dict[str, Any] = {"nsys": meta} if meta else {}
        t = "TARGET_INFO_SESSION_START_TIME"
        if self.has(t, "utcEpochNs"):
            row = self.con.execute(f"SELECT CAST(utcEpochNs AS INTEGER) FROM {_quote(t)} LIMIT 1").fetchone()
            if row and isinstance(row[0], int):
                # Session times count from this instant: Kineto's base time, so that a folder of
                # nsys and Kineto ranks lines up on one clock.
                out["baseTimeNanoseconds"] = row[0]
        return out

    # ---- columns ---------------------------------------------------------------------
    def _finish(self, groups: list[_Group]) -> Columns:
        def cat(get, dtype) -> np.ndarray:
            parts = [np.asarray(get(g), dtype=dtype) for g in groups]
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        def fill(attr: str, value, dtype):
            return lambda g: getattr(g, attr) if getattr(g, attr) is not None else np.full(len(g.ts), value, dtype=dtype)

        lens = cat(lambda g: g.args_len, np.int64)
        offs = np.zeros(len(lens), dtype=np.int64)
        if len(lens) > 1:
            np.cumsum(lens[:-1], out=offs[1:])
        blob = b"".join(g.args_blob for g in groups)
        if self.args is not None:
            offs += self.args.put(blob)
            blob = b""
        ph = cat(lambda g: g.ph, np.int8)
        by_phase: dict[str, int] = {}
        for p, code in (("X", _X), ("B", _B), ("i", _I), ("M", _M), ("s", _S), ("f", _F)):
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
            strings=list(self.strings.index), thread_keys=list(self.thread_keys), ids=[], args_blob=blob,
            by_phase=by_phase,
        )


def _distinct_rows(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of parallel integer columns (as an (k, ncols) array) and each row's index
    into them. One lexsort: ``np.unique(axis=0)`` sorts a void view and is ~10x slower."""
    n = len(columns[0])
    order = np.lexsort(columns[::-1])
    stacked = np.stack([c[order] for c in columns], axis=1)
    new = np.ones(n, dtype=bool)
    new[1:] = (stacked[1:] != stacked[:-1]).any(axis=1)
    group = np.cumsum(new) - 1
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = group
    return stacked[new], inverse


def _memset_name(codes: tuple) -> str:
    return "Memset" if codes[0] < 0 else f"Memset ({MEM_KIND.get(codes[0], 'Unknown')})"


def _memcpy_name(codes: tuple) -> str:
    """Kineto's memcpy names: ``Memcpy HtoD (Pageable -> Device)``."""
    kind, src, dst = codes
    direction = COPY_KIND.get(kind, "Unknown")
    if src < 0 and dst < 0:
        return f"Memcpy {direction}"
    return f"Memcpy {direction} ({MEM_KIND.get(src, 'Unknown')} -> {MEM_KIND.get(dst, 'Unknown')})"


_PH_LABEL = {_X: "X", _B: "B", _I: "i", _M: "M", _S: "s", _F: "f"}


def nsys_events(path: str | Path, ordinals: np.ndarray) -> list[msgspec.Raw]:
    """The events at ``ordinals`` (as the loader numbered them) as Chrome-trace JSON objects, so a
    range of an export can be written out for Perfetto. The file is read again (an export is rare)."""
    cols = read_nsys(path).columns
    out: list[msgspec.Raw] = []
    encode = msgspec.json.encode
    for r in np.unique(np.asarray(ordinals, dtype=np.int64)).tolist():
        if not 0 <= r < len(cols):
            continue
        ph = int(cols.ph[r])
        pid, tid = cols.thread_keys[int(cols.thread[r])]
        event: dict[str, Any] = {"ph": _PH_LABEL.get(ph, "X"), "name": cols.strings[int(cols.name[r])],
                                 "cat": cols.strings[int(cols.cat[r])], "ts": float(cols.ts[r]), "pid": pid, "tid": tid}
        if ph == _X:
            event["dur"] = float(cols.dur[r])
        elif ph == _I:
            event["s"] = "t"
        if cols.id_kind[r] == 1:
            event["id"] = int(cols.id_val[r])
        if cols.bp_enclosing[r]:
            event["bp"] = "e"
        off, length = int(cols.args_off[r]), int(cols.args_len[r])
        if length:
            event["args"] = msgspec.Raw(cols.args_blob[off : off + length])
        out.append(msgspec.Raw(encode(event)))
    return out
