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

import contextlib
import signal
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from vtui.errors import TraceLoadError
from vtui.io.columns import ArgsWriter
from vtui.io.nsys_parts import PH_B, PH_F, PH_I, PH_M, PH_S, PH_X
from vtui.io.nsys_reader import NsysResult, Progress, Reader
from vtui.io.sqlbulk import Connections
from vtui.termination import Terminated

SQLITE_MAGIC = b"SQLite format 3\x00"
FORM = "nsys-sqlite"
TIME_LIMIT_BASE_S = 120.0
TIME_LIMIT_PER_MB_S = 1.0  # 4x the 1 GB export's 248 s
__all__ = ["FORM", "NsysResult", "is_sqlite", "nsys_events", "read_nsys"]


def is_sqlite(path: str | Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def read_nsys(path: str | Path, args: ArgsWriter | None = None, progress: Progress | None = None,
              jobs: int = 1, limit_s: float | None = None) -> NsysResult:
    """Read an nsys SQLite export (big tables on ``jobs`` threads). Raises TraceLoadError (one
    line) for a foreign or damaged file, or one whose queries run past ``limit_s`` (default:
    ``time_limit_s``); a signal stops the queries at once and is then raised."""
    path = Path(path)
    if limit_s is None:
        limit_s = time_limit_s(path)
    cons = Connections(lambda: _connect(path), jobs, limit_s)
    try:
        with _signals_stop(cons):
            try:
                con = cons.get()
            except sqlite3.Error as exc:
                if not cons.stopped:
                    raise TraceLoadError(f"{path}: cannot open the SQLite file ({exc})") from None
                con = None
            try:
                if con is None:  # the time limit (or a signal) came before the first query
                    raise sqlite3.OperationalError("interrupted")
                return Reader(con, cons, path, args, progress).read()
            except (sqlite3.Error, OverflowError) as exc:
                if cons.stopped == "time":
                    raise TraceLoadError(f"{path}: reading the export took more than {limit_s:g} s and was stopped "
                                         "(a crafted or damaged file?)") from None
                if cons.stopped:
                    raise  # a signal: _signals_stop raises it once the queries have ended
                if isinstance(exc, sqlite3.OperationalError):  # a query the file's schema does not allow
                    raise TraceLoadError(f"{path}: unexpected Nsight Systems export schema ({exc})") from None
                # "database disk image is malformed", "file is not a database"
                raise TraceLoadError(f"{path}: damaged SQLite database ({exc})") from None
    finally:
        cons.close()


def time_limit_s(path: Path) -> float:
    """How long reading an export may take: generous for a real one (a 1 GB export read in 248 s
    on a loaded 2-core machine), finite for a crafted one."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    return TIME_LIMIT_BASE_S + TIME_LIMIT_PER_MB_S * size / 1e6


@contextlib.contextmanager
def _signals_stop(cons: Connections) -> Iterator[None]:
    """SIGTERM / SIGHUP / SIGINT during the read stop every query, then are raised as usual
    (``Terminated`` / ``KeyboardInterrupt``). A handler that raised inside SQLite's progress
    callback would be swallowed by sqlite3, and one that waits for the query never runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []

    def on_signal(signum, frame) -> None:
        got.append(signum)
        cons.stop("signal")

    wanted = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n)]
    old = {s: signal.signal(s, on_signal) for s in wanted}
    try:
        yield
    except (sqlite3.Error, TraceLoadError):
        if not got:
            raise
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    if got:
        if got[0] == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(got[0])


def _connect(path: Path) -> sqlite3.Connection:
    # Read-only by URI; immutable: an export is a finished file, so no locks (works on read-only
    # mounts). A file with a WAL beside it may still be written: open it without ``immutable``.
    wal = path.with_name(path.name + "-wal").exists()
    uri = path.resolve().as_uri() + ("?mode=ro" if wal else "?mode=ro&immutable=1")
    con = sqlite3.connect(uri, uri=True, check_same_thread=False)
    # Functions in the file's own schema (views, defaults, indexes) do not run on our reads.
    con.execute("PRAGMA trusted_schema = OFF")
    return con


_PH_LABEL = {PH_X: "X", PH_B: "B", PH_I: "i", PH_M: "M", PH_S: "s", PH_F: "f"}


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
        if ph == PH_X:
            event["dur"] = float(cols.dur[r])
        elif ph == PH_I:
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
