"""Names and metadata of an Nsight Systems export: process, thread and GPU names as the
metadata events a Chrome trace carries, and the export's own facts (version, session start)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from vtui.io.nsys_parts import MASK24, PH_M, ExportReader, Group, as_text, quote_ident


def metadata_group(r: ExportReader) -> Group:
    """process_name / thread_name / process_labels events, as a Chrome trace has them."""
    events: list[tuple[str, tuple[Any, Any], dict[str, Any]]] = []
    pnames = _process_names(r)
    for pid in sorted(r.cpu_pids):
        if pid in pnames:
            events.append(("process_name", (pid, 0), {"name": pnames[pid]}))
    tnames = _thread_names(r)
    for gtid, (pid, tid) in sorted(r.cpu_threads.items()):
        name = r.nvtx_thread_names.get(gtid) or tnames.get(gtid)
        if name:
            events.append(("thread_name", (pid, tid), {"name": name}))
    gpus = _gpu_names(r)
    seen: set[str] = set()
    for (dev, _pid, _ctx, _stream), (gpid, tid) in sorted(r.gpu_tracks.items()):
        if gpid not in seen:
            seen.add(gpid)
            events.append(("process_name", (gpid, 0), {"name": gpid}))
            label = f"{gpid} ({gpus[dev]})" if gpus.get(dev) else gpid
            events.append(("process_labels", (gpid, 0), {"labels": label}))
        events.append(("thread_name", (gpid, tid), {"name": f"stream {tid}" if isinstance(tid, int) else tid}))
    blobs = [msgspec.json.encode(a) for _, _, a in events]
    n = len(events)
    meta_threads = np.array([r.thread_id(k) for _, k, _ in events], dtype=np.int32)
    return Group(ph=np.full(n, PH_M, dtype=np.int8), ts=np.zeros(n), dur=np.full(n, np.nan),
                  name=np.array([r.strings.one(e[0]) for e in events], dtype=np.int32),
                  cat=np.full(n, r.strings.one("__metadata"), dtype=np.int32), thread=meta_threads,
                  args_blob=b"".join(blobs), args_len=np.array([len(b) for b in blobs], dtype=np.int32))


def _process_names(r: ExportReader) -> dict[int, str]:
    t = "PROCESSES"
    if t not in r.cols or not r.cpu_pids:
        return {}
    id_sql, text_sql = r.name_exprs(t, [], ["name"])
    pid_sql = (f"(({r.int_col(t, 'globalPid')} >> 24) & {MASK24})" if r.has(t, "globalPid")
               else r.int_col(t, "pid"))
    out: dict[int, str] = {}
    for pid, text in r.con.execute(f"SELECT {pid_sql}, {text_sql} FROM {quote_ident(t)}"):
        if pid in r.cpu_pids and text is not None:
            out[pid] = as_text(text)
    return out


def _thread_names(r: ExportReader) -> dict[int, str]:
    t = "ThreadNames"
    if t not in r.cols or not r.cpu_threads:
        return {}
    id_sql, text_sql = r.name_exprs(t, ["nameId"], ["name"])
    rows = r.con.execute(f"SELECT {r.int_col(t, 'globalTid')}, {id_sql}, {text_sql} FROM {quote_ident(t)}").fetchall()
    rows = [row for row in rows if row[0] in r.cpu_threads]
    if not rows:
        return {}
    names = r.resolve_names(np.array([row[1] for row in rows], dtype=np.int64), [row[2] for row in rows])
    strings = list(r.strings.index)
    return {row[0]: strings[k] for row, k in zip(rows, names.tolist()) if strings[k]}


def _gpu_names(r: ExportReader) -> dict[int, str]:
    t = "TARGET_INFO_GPU"
    if t not in r.cols or not r.has(t, "name"):
        return {}
    dev = r.int_col(t, "id", "cuDevice")
    return {d: as_text(n) for d, n in r.con.execute(f"SELECT {dev}, name FROM {quote_ident(t)}") if n is not None}


def export_metadata(r: ExportReader) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for table in ("EXPORT_META_DATA", "META_DATA_EXPORT"):
        if r.has(table, "name") and r.has(table, "value"):
            for name, value in r.con.execute(f"SELECT name, value FROM {quote_ident(table)}"):
                if isinstance(name, str):
                    meta[name] = as_text(value)
    out: dict[str, Any] = {"nsys": meta} if meta else {}
    t = "TARGET_INFO_SESSION_START_TIME"
    if r.has(t, "utcEpochNs"):
        row = r.con.execute(f"SELECT CAST(utcEpochNs AS INTEGER) FROM {quote_ident(t)} LIMIT 1").fetchone()
        if row and isinstance(row[0], int):
            # Session times count from this instant: Kineto's base time, so that a folder of
            # nsys and Kineto ranks lines up on one clock.
            out["baseTimeNanoseconds"] = row[0]
    return out
