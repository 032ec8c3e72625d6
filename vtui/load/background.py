"""Load a trace off the event loop: in a thread for small files, a process for big ones.

Parsing holds the GIL, so a big load in a thread would freeze the UI; a spawned process
keeps it painting (and starts its own decoder processes). When the store went into the
index cache the app maps the entry itself (instant); otherwise the store is sent back.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from contextlib import redirect_stderr
from multiprocessing import resource_tracker
from pathlib import Path

from vtui.errors import TraceLoadError
from vtui.io.argsfile import MappedBlob
from vtui.io.reader import decoded_size
from vtui.load.trace import load_trace, trace_files
from vtui.store import cache as trace_cache
from vtui.store.store import TraceStore
from vtui.tempfiles import temp_prefix

PROCESS_THRESHOLD = 24 << 20  # bytes to decode
_TRACKER_LOCK = threading.Lock()


def _total_size(path: Path) -> int:
    """Bytes to decode (gzips inflated); raises the loader's own one-line errors (missing, link
    loop, pipe…)."""
    return sum(decoded_size(p) for p in trace_files(path))


def _child(path: str, out, cache: bool = True) -> None:
    try:
        private = None
        if not cache:  # a throw-away cache folder: the store still reaches the app by mmap, not a pipe
            private = tempfile.mkdtemp(prefix=temp_prefix("load", os.getppid(), hidden=False))
            os.environ["XDG_CACHE_HOME"] = private  # this process only does this load
        store = load_trace(path, progress=lambda f: out.put(("progress", f)), cache=True)
        blob = store.args_blob
        if isinstance(blob, MappedBlob) and blob.keep:
            out.put(("cached", private))  # saved: the parent maps the entry, no 100s of MB through a pipe
        else:
            if private:
                shutil.rmtree(private, ignore_errors=True)
            out.put(("done", store))
    except TraceLoadError as exc:
        out.put(("error", str(exc)))
    except Exception as exc:  # noqa: BLE001 — reported to the user as one line
        out.put(("error", f"{path}: could not load ({type(exc).__name__}: {exc})"))


def _open_cached(path: Path, private: str | None) -> TraceStore:
    """The entry the loader process wrote: in the user's cache, or in its private folder."""
    if private is None:
        return load_trace(path, cache=True)
    try:
        files = trace_files(path)
        key = trace_cache.entry_key(files)
        store = trace_cache.open_entry(key, Path(private) / "vtui") if key else None
    finally:
        shutil.rmtree(private, ignore_errors=True)  # mapped files stay readable once unlinked
    if store is None:
        raise TraceLoadError(f"{path}: the loader's result could not be read back")
    for src, f in zip(store.sources, files):
        src.path = str(f)
    return store


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker with the real stderr.

    While the app runs, Textual swaps ``sys.stderr`` for a capture whose ``fileno()`` is -1;
    spawning the tracker then fails ("bad value(s) in fds_to_keep") and no big trace loads.
    """
    with _TRACKER_LOCK, redirect_stderr(sys.__stderr__):
        resource_tracker.ensure_running()


class LoadControl:
    """Lets the app stop a load at once (q while loading): the loader process is killed, not awaited."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.process: mp.process.BaseProcess | None = None

    def cancel(self) -> None:
        self.cancelled.set()
        proc = self.process
        if proc is not None and proc.is_alive():
            proc.kill()


def load_in_background(path: Path, progress: Callable[[float], None], cache: bool = True,
                       control: LoadControl | None = None) -> TraceStore:
    """Blocking; call from a worker thread. Raises TraceLoadError (also when ``control`` cancels)."""
    control = control or LoadControl()
    try:
        big = _total_size(path) >= PROCESS_THRESHOLD
    except OSError as exc:
        raise TraceLoadError(f"{path}: {exc.strerror or exc}") from None
    _start_resource_tracker()  # before any process starts: the loader's or the decoders'
    if not big:
        return load_trace(path, progress=progress, cache=cache)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    # Not a daemon: daemons may not start the decoder processes of a parallel load.
    proc = ctx.Process(target=_child, args=(str(path), out, cache), daemon=False)
    if control.cancelled.is_set():
        raise TraceLoadError(f"{path}: load cancelled")
    proc.start()
    control.process = proc
    try:
        while True:
            try:
                kind, value = out.get(timeout=0.1)
            except queue.Empty:
                if control.cancelled.is_set():
                    raise TraceLoadError(f"{path}: load cancelled") from None
                if not proc.is_alive():
                    raise TraceLoadError(f"{path}: the loader process died (out of memory?)") from None
                continue
            if kind == "progress":
                progress(value)
            elif kind == "done":
                return value
            elif kind == "cached":
                return _open_cached(path, value)
            else:
                raise TraceLoadError(value)
    finally:
        proc.join(timeout=0 if control.cancelled.is_set() else 5)
        if proc.is_alive():
            proc.kill()
            proc.join()
