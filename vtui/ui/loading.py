"""Load a trace off the event loop: in a thread for small files, a process for big ones.

Parsing holds the GIL, so a big load in a thread would freeze the UI; a spawned process
keeps it painting (and starts its own decoder processes). When the store went into the
index cache the app maps the entry itself (instant); otherwise the store is sent back.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
from collections.abc import Callable
from pathlib import Path

from vtui.errors import TraceLoadError
from vtui.io.argsfile import MappedBlob
from vtui.store.load import load_trace
from vtui.store.store import TraceStore

PROCESS_THRESHOLD = 24 << 20  # bytes on disk


def _total_size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size


def _child(path: str, out, cache: bool = True) -> None:
    try:
        store = load_trace(path, progress=lambda f: out.put(("progress", f)), cache=cache)
        blob = store.args_blob
        if cache and isinstance(blob, MappedBlob) and blob.keep:
            out.put(("cached", None))  # saved: the parent opens the entry, no 100s of MB through a pipe
        else:
            out.put(("done", store))
    except TraceLoadError as exc:
        out.put(("error", str(exc)))
    except Exception as exc:  # noqa: BLE001 — reported to the user as one line
        out.put(("error", f"{path}: could not load ({type(exc).__name__}: {exc})"))


def load_in_background(path: Path, progress: Callable[[float], None], cache: bool = True) -> TraceStore:
    """Blocking; call from a worker thread. Raises TraceLoadError."""
    try:
        big = _total_size(path) >= PROCESS_THRESHOLD
    except OSError as exc:
        raise TraceLoadError(f"{path}: {exc.strerror or exc}") from None
    if not big:
        return load_trace(path, progress=progress, cache=cache)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    # Not a daemon: daemons may not start the decoder processes of a parallel load.
    proc = ctx.Process(target=_child, args=(str(path), out, cache), daemon=False)
    proc.start()
    try:
        while True:
            try:
                kind, value = out.get(timeout=0.5)
            except queue.Empty:
                if not proc.is_alive():
                    raise TraceLoadError(f"{path}: the loader process died (out of memory?)") from None
                continue
            if kind == "progress":
                progress(value)
            elif kind == "done":
                return value
            elif kind == "cached":
                return load_trace(path, cache=True)
            else:
                raise TraceLoadError(value)
    finally:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
