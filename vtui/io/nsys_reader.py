"""The Nsight Systems reader: each table of an export read in bulk (SQL and numpy) into groups of
events, launches joined to their GPU work by correlation id."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from vtui.errors import TraceLoadError
from vtui.io.columns import ArgsWriter, Columns
from vtui.io.nsys_meta import export_metadata, metadata_group
from vtui.io.nsys_parts import (
    EVENT_TABLES,
    GPU_TABLES,
    MASK24,
    NSYS_TABLES,
    NVTX_DOMAIN,
    NVTX_MARK,
    NVTX_PUSH_POP,
    NVTX_START_END,
    NVTX_THREAD_NAME,
    PH_B,
    PH_F,
    PH_I,
    PH_S,
    PH_X,
    SYNC_TYPE,
    VERSION_SUFFIX,
    ArgsOut,
    Group,
    Strings,
    as_text,
    distinct_rows,
    factorize,
    memcpy_name,
    memset_name,
    quote_ident,
    to_columns,
)
from vtui.io.sqlbulk import NULL, Connections, fetch_ints_later, int_sql, json_objects

Progress = Callable[[float], None]
Fetch = Callable[[], "dict[str, Any] | None"]  # a table's queued read: waits and gives its columns
Step = tuple[Fetch, Callable[[dict[str, Any]], Any]]  # the read, and what makes events of it


NO_STREAM = 0xFFFFFFFF  # CUPTI's invalid stream id (e.g. a context-wide synchronisation)


@dataclass
class NsysResult:
    columns: Columns
    metadata: dict[str, Any]
    warnings: list[str]


@dataclass
class Reader:
    """One export being read: the tables' events gathered as groups, then turned into columns."""

    con: sqlite3.Connection
    cons: Connections
    path: Path
    args: ArgsWriter | None
    progress: Progress | None
    groups: list[Group] = field(default_factory=list)
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
    out: ArgsOut = field(init=False)

    # ---- schema ----------------------------------------------------------------------
    def _load_schema(self) -> None:
        # Real tables only: a view is a query the file chose (an endless recursive CTE, a cross join
        # of everything), and a virtual table runs a module's code.
        names = [r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                "AND coalesce(sql, '') NOT LIKE 'CREATE VIRTUAL%'")]
        for name in names:
            if isinstance(name, str):
                self.cols[name] = [r[1] for r in self.con.execute(f"PRAGMA table_info({quote_ident(name)})")]
        if not any(t in self.cols for t in NSYS_TABLES):
            raise TraceLoadError(f"{self.path}: an SQLite file, but not an Nsight Systems export "
                                 "(no StringIds, CUPTI, NVTX or export metadata tables)")

    def has(self, table: str, column: str) -> bool:
        return column in self.cols.get(table, ())

    def int_col(self, table: str, *columns: str, default: int = -1) -> str:
        """SQL for the first of ``columns`` the table has, as an integer (NULL -> default)."""
        found = [quote_ident(c) for c in columns if self.has(table, c)]
        if not found:
            return str(default)
        inner = found[0] if len(found) == 1 else f"coalesce({', '.join(found)})"
        return f"coalesce(CAST({inner} AS INTEGER), {default})"

    def _gpid(self, table: str) -> str:
        return self.int_col(table, "globalPid") if self.gpu_pid else "-1"

    def _query(self, table: str, exprs: dict[str, str], args: Sequence[tuple[str, list[str]]] = (),
               raw_args: Sequence[tuple[str, str]] = ()) -> Callable[[], dict[str, Any] | None]:
        """Integer columns of every row, in bulk (``exprs``: name -> SQL, never NULL), plus the
        args fields (JSON key, columns; several columns make an array), kept NULL-aware. Queued
        now (read ahead on the threads); the returned function waits and gives the columns, None
        for an empty table. Rows without a start or end are dropped, counted."""
        sql = list(exprs.values())
        fields: list[tuple[str, int, int]] = []  # key, first column, column count
        for key, columns in args:
            present = [c for c in columns if self.has(table, c)]
            if present:
                fields.append((key, len(sql), len(present) if len(columns) > 1 else 0))
                sql.extend(int_sql(quote_ident(c)) for c in present)
        for key, expr in raw_args:
            fields.append((key, len(sql), 0))
            sql.append(expr)
        fetch = fetch_ints_later(self.cons, quote_ident(table), sql)

        def result() -> dict[str, Any] | None:
            parts = fetch()
            if not parts:
                return None

            def column(i: int) -> np.ndarray:  # one copy out of the row pieces
                return np.concatenate([p[:, i] for p in parts])

            every = {k: column(i) for i, k in enumerate(exprs)}  # every row, the dropped too
            ok = (every["start"] >= 0) & (every["end"] >= 0)
            keep = None if ok.all() else ok
            if keep is not None:
                self.notes.append(f"{int((~ok).sum()):,} {table} rows without a start or end (skipped)")
            kept: Callable[[np.ndarray], np.ndarray] = (lambda a: a) if keep is None else (lambda a: a[keep])
            data: dict[str, Any] = {k: kept(v) for k, v in every.items()}
            data["args"] = []
            for key, at, width in fields:
                if width == 0:
                    every[key] = column(at)
                    data["args"].append((key, kept(every[key])))
                else:
                    data["args"].append((key, np.stack([kept(column(at + j)) for j in range(width)], axis=1)))
            data["keep"], data["every"] = ok, every
            return data

        return result

    def _rows(self, sql: str) -> list[tuple]:
        rows = self.con.execute(sql).fetchall()
        return list(zip(*rows)) if rows else []

    # ---- output ----------------------------------------------------------------------
    def _add(self, group: Group) -> None:
        if len(group.ts):
            self.out.place(group)  # to the args file now: a table's args are not kept in memory
            self.groups.append(group)

    def thread_id(self, key: tuple[Any, Any]) -> int:
        return self.thread_keys.setdefault(key, len(self.thread_keys))

    def _cpu_threads(self, gtids: np.ndarray) -> np.ndarray:
        """Thread ids for globalTids: pid and tid unpacked, per distinct value."""
        uniq, inverse = factorize(gtids)
        local = np.empty(len(uniq), dtype=np.int32)
        for k, g in enumerate(uniq.tolist()):
            pid, tid = (g >> 24) & MASK24, g & MASK24
            self.cpu_threads[g] = (pid, tid)
            self.cpu_pids.add(pid)
            local[k] = self.thread_id((pid, tid))
        return local[inverse] if len(gtids) else np.zeros(0, dtype=np.int32)

    def _plan_gpu_tracks(self, tables: list[dict[str, Any]]) -> None:
        """A track per (device, stream); a stream number used by several processes or contexts
        on one device gets one track per owner (stream ids are per context). Decided over all
        GPU tables' rows at once, so a kernel and a memcpy on one stream share its track."""
        combos: set[tuple[int, int, int, int]] = set()
        for data in tables:
            combos.update(map(tuple, data["combos"].tolist()))
        owners: dict[tuple[int, int], int] = {}
        for d, _p, _c, s in combos:
            owners[(d, s)] = owners.get((d, s), 0) + 1
        for d, p, c, s in sorted(combos):
            who = f"pid {(p >> 24) & MASK24}, context {c}"
            if s < 0 or s == NO_STREAM:  # CUPTI writes "no stream" as -1 or as its uint32 form
                tid: Any = "sync" if owners[(d, s)] == 1 else f"sync ({who})"
            else:
                tid = s if owners[(d, s)] == 1 else f"stream {s} ({who})"
            self.gpu_tracks[(d, p, c, s)] = (f"GPU {d}", tid)

    def _gpu_threads(self, data: dict[str, Any]) -> np.ndarray:
        """Thread ids of the rows' (device, process, context, stream) tracks, given in the order
        of those combinations (only the ones kept rows use)."""
        combos, inverse = data["combos"], data["combo"]
        used = np.flatnonzero(np.bincount(inverse, minlength=len(combos)))
        local = np.zeros(len(combos), dtype=np.int32)
        for k, key in zip(used.tolist(), combos[used].tolist()):
            local[k] = self.thread_id(self.gpu_tracks.get(tuple(key)) or (f"GPU {key[0]}", key[3]))
        return local[inverse]

    # ---- reading ---------------------------------------------------------------------
    def read(self) -> NsysResult:
        self._load_schema()
        self.strings = Strings(self.con, "StringIds" in self.cols)
        self.out = ArgsOut(self.args)
        missing = [t for t in EVENT_TABLES if t not in self.cols]
        # Old exports have no globalPid on GPU rows: then no table's is used (tracks and launch
        # joins by device, stream and correlation id alone), so all tables agree.
        self.gpu_pid = all(self.has(t, "globalPid") for t in GPU_TABLES if t in self.cols)
        # Every table's query is queued at once: SQLite reads ahead on the threads while the
        # tables before are turned into events here.
        gpu = [self._kernels(), self._memcpys(), self._memsets(), self._syncs()]
        cpu = [*self._runtime(), (lambda: {}, lambda _: self._nvtx()), self._osrt()]  # NVTX: read here
        # The GPU tables are waited for together: their tracks are planned over all of them.
        gpu_data = [fetch() for fetch, _ in gpu]
        self._plan_gpu_tracks([d for d in gpu_data if d is not None])
        steps: list[Step] = [(lambda d=d: d, make) for d, (_, make) in zip(gpu_data, gpu)] + cpu
        for k, (fetch, make) in enumerate(steps):
            data = fetch()
            if data is not None:
                make(data)
            if self.progress:
                self.progress((k + 1) / (len(steps) + 2))
        self._flows()
        meta_group = metadata_group(self)
        if missing:
            self.notes.append(f"nsys export without {len(missing)} table(s) (none of those events): "
                              + ", ".join(missing))
        if self.strings.missing_ids:
            self.notes.append(f"{self.strings.missing_ids:,} names pointed at no StringIds entry (shown empty)")
        columns = to_columns([meta_group, *self.groups], self.strings, self.thread_keys, self.out)
        if self.progress:
            self.progress(1.0)
        return NsysResult(columns, export_metadata(self), self.notes)

    _GPU_ARGS = [("device", ["deviceId"]), ("context", ["contextId"]), ("stream", ["streamId"]),
                 ("correlation", ["correlationId"])]

    def _select_gpu(self, table: str, extra: dict[str, str], args: list[tuple[str, list[str]]],
                    raw_args: Sequence[tuple[str, str]] = ()) -> Fetch:
        if table not in self.cols:
            return lambda: None
        exprs = {"start": self.int_col(table, "start"), "end": self.int_col(table, "end"), "gpid": self._gpid(table), **extra}
        fetch = self._query(table, exprs, [*self._GPU_ARGS, *args], raw_args)

        def result() -> dict[str, Any] | None:
            data = fetch()
            if data is None:
                return None
            every, keep = data["every"], data["keep"]
            ids = {}  # the ids in the args, NULL there, -1 here
            for key, arg in (("dev", "device"), ("ctx", "context"), ("stream", "stream"), ("corr", "correlation")):
                values = every.get(arg)
                ids[key] = np.full(len(keep), -1, dtype=np.int64) if values is None else np.where(values == NULL, -1, values)
                data[key] = ids[key] if keep.all() else ids[key][keep]
            # Distinct (device, process, context, stream) over every row, as the tracks are planned
            data["combos"], combo = distinct_rows(ids["dev"], every["gpid"], ids["ctx"], ids["stream"])
            data["combo"] = combo if keep.all() else combo[keep]
            return data

        return result

    def _slices(self, data: dict[str, Any], names: np.ndarray, threads: np.ndarray, cat: str) -> None:
        n = len(names)
        blob, lens = json_objects(data["args"], n)
        self._add(Group(ph=np.full(n, PH_X, dtype=np.int8), ts=data["start"] / 1000.0,
                         dur=(data["end"] - data["start"]) / 1000.0, name=names,
                         cat=np.full(n, self.strings.one(cat), dtype=np.int32), thread=threads,
                         args_blob=blob, args_len=lens))

    def _gpu_group(self, data: dict[str, Any], names: np.ndarray, cat: str, work: bool) -> None:
        threads = self._gpu_threads(data)
        self._slices(data, names, threads, cat)
        if work:  # the flow's f end binds where the activity starts, on its stream
            self.gpu_work.append((data["gpid"], data["corr"], data["start"], threads))

    def _kernels(self) -> Step:
        t = "CUPTI_ACTIVITY_KIND_KERNEL"
        extra = {"name": self.int_col(t, "demangledName", "shortName", "mangledName")}
        shared = [c for c in ("staticSharedMemory", "dynamicSharedMemory") if self.has(t, c)]
        # Kineto's "shared memory" is static + dynamic
        raw = [("shared memory", " + ".join(f"coalesce(CAST({quote_ident(c)} AS INTEGER), 0)" for c in shared))] if shared else []
        fetch = self._select_gpu(t, extra, [("grid", ["gridX", "gridY", "gridZ"]), ("block", ["blockX", "blockY", "blockZ"]),
                                            ("registers per thread", ["registersPerThread"])], raw)
        return fetch, lambda data: self._gpu_group(data, self.strings.lookup(data["name"]), "kernel", True)

    def _memcpys(self) -> Step:
        t = "CUPTI_ACTIVITY_KIND_MEMCPY"
        extra = {"kind": self.int_col(t, "copyKind"), "src": self.int_col(t, "srcKind"), "dst": self.int_col(t, "dstKind")}

        def make(data: dict[str, Any]) -> None:
            names = self._coded_names(np.stack([data["kind"], data["src"], data["dst"]], axis=1), memcpy_name)
            self._gpu_group(data, names, "gpu_memcpy", True)

        return self._select_gpu(t, extra, [("bytes", ["bytes"])]), make

    def _memsets(self) -> Step:
        t = "CUPTI_ACTIVITY_KIND_MEMSET"
        fetch = self._select_gpu(t, {"mem": self.int_col(t, "memKind", "memoryKind")}, [("bytes", ["bytes"]), ("value", ["value"])])
        return fetch, lambda data: self._gpu_group(data, self._coded_names(data["mem"][:, None], memset_name), "gpu_memset", True)

    def _syncs(self) -> Step:
        t = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"

        def make(data: dict[str, Any]) -> None:
            names = self._coded_names(data["type"][:, None], lambda k: SYNC_TYPE.get(k[0], "Synchronization"))
            self._gpu_group(data, names, "cuda_sync", False)

        return self._select_gpu(t, {"type": self.int_col(t, "syncType")}, [("event", ["eventId"])]), make

    def _coded_names(self, codes: np.ndarray, name_of: Callable[[tuple], str]) -> np.ndarray:
        """Names made from a few enum columns: one string per distinct combination."""
        if not len(codes):
            return np.zeros(0, dtype=np.int32)
        uniq, inverse = distinct_rows(*codes.T)
        local = np.array([self.strings.one(name_of(tuple(u))) for u in uniq.tolist()], dtype=np.int32)
        return local[inverse]

    def _runtime(self) -> list[Step]:
        steps = []
        for table, cat in (("CUPTI_ACTIVITY_KIND_RUNTIME", "cuda_runtime"), ("CUPTI_ACTIVITY_KIND_DRIVER", "cuda_driver")):
            if table in self.cols:
                fetch, make = self._cpu_table(table, [("correlation", ["correlationId"]), ("return value", ["returnValue"])],
                                              clean=lambda s: VERSION_SUFFIX.sub("", s), cat=cat)
                steps.append((fetch, lambda data, make=make: self._launches(make(data))))
        return steps

    def _launches(self, data: dict[str, Any]) -> None:
        corr = dict(data["args"]).get("correlation")  # NULL there, -1 here
        corr = np.full(len(data["start"]), -1, dtype=np.int64) if corr is None else np.where(corr == NULL, -1, corr)
        self.launches.append((data["gtid"], corr, data["start"], data["thread"]))

    def _osrt(self) -> Step:
        if "OSRT_API" in self.cols:
            return self._cpu_table("OSRT_API", [("return value", ["returnValue"])], cat="osrt")
        return lambda: None, lambda data: None

    def name_exprs(self, table: str, id_columns: Sequence[str], text_columns: Sequence[str]) -> tuple[str, str]:
        """(id SQL, text SQL) for a name that is a StringIds id in some versions and text in
        others (a column may even hold either: its SQLite type decides)."""
        ids = [c for c in id_columns if self.has(table, c)] + [c for c in text_columns if self.has(table, c)]
        texts = [c for c in text_columns if self.has(table, c)]
        id_sql = ("coalesce(" + ", ".join(f"CASE WHEN typeof({quote_ident(c)}) = 'integer' THEN {quote_ident(c)} END"
                                           for c in ids) + ", -1)") if ids else "-1"
        cases = [f"CASE WHEN typeof({quote_ident(c)}) = 'text' AND {quote_ident(c)} <> '' THEN {quote_ident(c)} END" for c in texts]
        text_sql = "NULL" if not cases else cases[0] if len(cases) == 1 else f"coalesce({', '.join(cases)})"
        return id_sql, text_sql

    def resolve_names(self, ids: np.ndarray, texts: Sequence[Any] | None,
               clean: Callable[[str], str] | None = None) -> np.ndarray:
        local = self.strings.lookup(ids, clean)
        if texts is not None:
            arr = np.array(texts, dtype=object)
            inline = np.flatnonzero(np.not_equal(arr, None))
            if len(inline):
                values = [as_text(v) for v in arr[inline].tolist()] if clean is None else \
                    [clean(as_text(v)) for v in arr[inline].tolist()]
                local[inline] = self.strings.texts(values)
        return local

    def _cpu_table(self, table: str, args: list[tuple[str, list[str]]], clean: Callable[[str], str] | None = None,
                   cat: str = "cuda_runtime") -> tuple[Fetch, Callable[[dict[str, Any]], dict[str, Any]]]:
        """Calls on CPU threads (runtime, driver, OS runtime) as slices; ``make`` returns their columns."""
        id_sql, text_sql = self.name_exprs(table, ["nameId"], ["name"])
        exprs = {"start": self.int_col(table, "start"), "end": self.int_col(table, "end"),
                 "gtid": self.int_col(table, "globalTid"), "name": id_sql}

        def make(data: dict[str, Any]) -> dict[str, Any]:
            texts = None
            if text_sql != "NULL" and self.con.execute(f"SELECT 1 FROM {quote_ident(table)} WHERE {text_sql} IS NOT NULL "
                                                       "LIMIT 1").fetchone():
                # Names written as text (some versions): fetched row by row, in the same rowid order.
                texts = [r[0] for r in self.con.execute(f"SELECT {text_sql} FROM {quote_ident(table)} ORDER BY rowid")]
                texts = [t for t, k in zip(texts, data["keep"].tolist()) if k]
            data["thread"] = self._cpu_threads(data["gtid"])
            self._slices(data, self.resolve_names(data["name"], texts, clean), data["thread"], cat)
            return data

        return self._query(table, exprs, args), make

    def _nvtx(self) -> None:
        t = "NVTX_EVENTS"
        if t not in self.cols:
            return
        id_sql, text_sql = self.name_exprs(t, ["textId"], ["text"])
        cols = self._rows(f"SELECT {self.int_col(t, 'start')}, {self.int_col(t, 'end')}, {self.int_col(t, 'eventType')}, "
                          f"{self.int_col(t, 'globalTid')}, {id_sql}, {self.int_col(t, 'domainId', default=0)}, {text_sql} "
                          f"FROM {quote_ident(t)}")
        if not cols:
            return
        start, end, kind, gtid, text_id, domain = (np.fromiter(c, dtype=np.int64, count=len(c)) for c in cols[:6])
        texts = np.array(cols[6], dtype=object)
        # Domain and thread names are definitions, not events (a few rows: plain Python).
        for i in np.flatnonzero((kind == NVTX_DOMAIN) | (kind == NVTX_THREAD_NAME)).tolist():
            text = as_text(texts[i]) if texts[i] is not None else ""
            if not text and text_id[i] >= 0:
                text = self.strings.values_of([int(text_id[i])]).get(int(text_id[i]), "")
            if kind[i] == NVTX_DOMAIN:
                self.domains[int(domain[i])] = text
            else:
                self.nvtx_thread_names[int(gtid[i])] = text
        ranges = np.isin(kind, [NVTX_PUSH_POP, NVTX_START_END]) & (start >= 0)
        marks = (kind == NVTX_MARK) & (start >= 0)
        rows = np.flatnonzero(ranges | marks)
        if not len(rows):
            return
        names = self.resolve_names(text_id[rows], texts[rows].tolist())
        threads = self._cpu_threads(gtid[rows])
        is_range = ranges[rows]
        closed = end[rows] >= start[rows]
        ph = np.where(is_range, np.where(closed, PH_X, PH_B), PH_I).astype(np.int8)
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
        self._add(Group(ph=ph, ts=start[rows] / 1000.0,
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
        r_key = (((r_gtid >> 24) & MASK24) << 32 | (r_corr & 0xFFFFFFFF)) if with_pid else r_corr
        g_key = (((g_gpid >> 24) & MASK24) << 32 | (g_corr & 0xFFFFFFFF)) if with_pid else g_corr
        valid = np.flatnonzero(r_corr >= 0)
        # Some exports hold a call twice under one correlation id (a wrapper record around the
        # CUPTI one, on the same thread): the launch is the innermost, the one starting last.
        keys = r_key[valid]
        # Calls come in correlation order in an export: no sort needed when the keys only grow.
        order = np.arange(len(valid)) if (keys[1:] > keys[:-1]).all() else np.lexsort((r_start[valid], keys))
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
        for ph, ts, thread, bp in ((PH_S, r_start[cpu_rows], r_thread[cpu_rows], False),
                                   (PH_F, g_start[gpu_rows], g_thread[gpu_rows], True)):
            self._add(Group(ph=np.full(n, ph, dtype=np.int8), ts=ts / 1000.0, dur=np.full(n, np.nan),
                             name=np.full(n, ac2g, dtype=np.int32), cat=np.full(n, ac2g, dtype=np.int32),
                             thread=thread.astype(np.int32), args_blob=b"", args_len=np.zeros(n, dtype=np.int32),
                             id_kind=np.ones(n, dtype=np.int8), id_val=ids, bp=np.full(n, bp)))
