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

import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from vtui.errors import TraceLoadError
from vtui.io.columns import ArgsWriter
from vtui.io.nsys_parts import PH_B, PH_F, PH_I, PH_M, PH_S, PH_X
from vtui.io.nsys_reader import NsysResult, Progress, Reader
from vtui.io.sqlbulk import Connections

SQLITE_MAGIC = b"SQLite format 3\x00"
FORM = "nsys-sqlite"
__all__ = ["FORM", "NsysResult", "is_sqlite", "nsys_events", "read_nsys"]


def is_sqlite(path: str | Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


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
        return Reader(con, cons, path, args, progress).read()
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
