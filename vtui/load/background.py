"""Load a trace off the event loop: in a thread for small files, a process for big ones.

Parsing holds the GIL, so a big load in a thread would freeze the UI; a spawned process
keeps it painting (and starts its own decoder processes). When the store went into the
index cache the app maps the entry itself (instant); otherwise the store is sent back.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import queue
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable
from multiprocessing.connection import wait as mp_wait
from pathlib import Path

from vtui.errors import TraceLoadError
from vtui.io.argsfile import MappedBlob
from vtui.io.nsys import is_sqlite
from vtui.io.reader import decoded_size
from vtui.load.trace import load_trace, open_cached, trace_files
from vtui.options import LoadOptions
from vtui.store import cache as trace_cache
from vtui.store.store import TraceStore
from vtui.tempfiles import temp_prefix
from vtui.termination import Terminated, as_child_process, signals_as_exceptions, start_resource_tracker

PROCESS_THRESHOLD = 24 << 20  # bytes to decode
STOP_WAIT_S = 10.0  # a stopped loader's cleanup: its decoders finish the range they hold (~1 s)
_LAST_WORD_S = 2.0  # to read what an exited loader sent last (its queue is flushed before it exits)


def _total_size(path: Path) -> int:
    """Bytes to decode (gzips inflated); raises the loader's own one-line errors (missing, link
    loop, pipe…)."""
    return sum(decoded_size(p) for p in trace_files(path))


def _child(path: str, out, options: LoadOptions) -> None:
    """The loader process. SIGTERM / SIGHUP (the app stopping it as it exits) become an
    exception, so the load's temp files (args, inflated gzip, ranges, cache entry) are removed.
    The kernel sends SIGTERM too should the app die first: a loader never outlives it."""
    as_child_process(signal.SIGTERM)
    with signals_as_exceptions():
        try:
            _child_load(path, out, options)
        except Terminated:
            pass  # stopped on purpose: the cleanups have run, nothing to report


def _child_load(path: str, out, options: LoadOptions) -> None:
    private = None
    try:
        if not options.cache:  # a throw-away cache folder: the store still reaches the app by mmap, not a pipe
            private = tempfile.mkdtemp(prefix=temp_prefix("load", os.getppid(), hidden=False))
            options = dataclasses.replace(options, cache=True, cache_dir=Path(private) / "vtui")
        store = load_trace(path, progress=_coarse(lambda f: out.put(("progress", f))), options=options)
        blob = store.args_blob
        if isinstance(blob, MappedBlob) and blob.keep:
            out.put(("cached", private))  # saved: the parent maps the entry, no 100s of MB through a pipe
        else:
            if private:
                shutil.rmtree(private, ignore_errors=True)
            out.put(("done", store))
    except BaseException as exc:
        if private:  # the app takes the folder over only with a "cached" result
            shutil.rmtree(private, ignore_errors=True)
        if isinstance(exc, TraceLoadError):
            out.put(("error", str(exc)))
        elif isinstance(exc, Exception):  # reported to the user as one line
            out.put(("error", f"{path}: could not load ({type(exc).__name__}: {exc})"))
        else:
            raise


PROGRESS_STEP = 0.005  # of the whole load: finer steps are not visible in a bar


def _coarse(progress: Callable[[float], None]) -> Callable[[float], None]:
    """``progress`` called only when the fraction moved by ``PROGRESS_STEP`` (or reached 1): the
    load reports every 512 KiB chunk, and each report through the queue and onto the UI thread
    cost CPU the load itself needs (thousands of repaints of the bar for 1 GB)."""
    last = [-1.0]

    def report(fraction: float) -> None:
        if fraction - last[0] >= PROGRESS_STEP or (fraction >= 1.0 > last[0]) or fraction < last[0]:
            last[0] = fraction
            progress(fraction)

    return report


def _open_cached(path: Path, private: str | None, options: LoadOptions) -> TraceStore:
    """The entry the loader process wrote: in the user's cache, or in its private folder. Not
    verified again (``open_entry(verify=False)``): the loader checked the store as it built it,
    and a pass over every column here would delay the first frame."""
    try:
        files = trace_files(path)
        key = trace_cache.entry_key(files)
        root = Path(private) / "vtui" if private is not None else options.cache_root
        store = trace_cache.open_entry(key, root, verify=False) if key else None
    finally:
        if private is not None:
            shutil.rmtree(private, ignore_errors=True)  # mapped files stay readable once unlinked
    if store is None:
        if private is None:  # gone meanwhile (another vtui evicted it): load it here
            return load_trace(path, options=options)
        raise TraceLoadError(f"{path}: the loader's result could not be read back")
    for src, f in zip(store.sources, files):
        src.path = str(f)
    return store


class LoadControl:
    """Lets the app stop a load at once (q while loading): the loader process is killed, not awaited."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.graceful = False  # stopping with SIGTERM (``stop``): the loader is given time to clean up
        self.process: mp.process.BaseProcess | None = None

    def cancel(self) -> None:
        self.cancelled.set()
        proc = self.process
        if proc is not None and proc.is_alive():
            proc.kill()

    def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """Stop the load and wait while the loader removes its temp files (SIGTERM; SIGKILL after
        ``wait_s``). For an app that is exiting on a signal: q kills at once (``cancel``), and
        leaves those files to the next load's sweep."""
        self.graceful = True
        self.cancelled.set()
        proc = self.process
        if proc is None or not proc.is_alive():
            return
        proc.terminate()
        if not mp_wait([proc.sentinel], wait_s):
            proc.kill()


def _options(cache: bool, options: LoadOptions | None) -> LoadOptions:
    options = LoadOptions.from_environ() if options is None else options
    return options if cache else dataclasses.replace(options, cache=False)


def reopen_cached(path: Path, cache: bool = True, options: LoadOptions | None = None) -> TraceStore | None:
    """The trace's cache entry mapped (milliseconds: no thread needed), as ``load_in_background``
    would open it; None without one, and on any error, which ``load_in_background`` then reports."""
    options = _options(cache, options)
    if not options.cache:
        return None
    try:
        return open_cached(path, options.cache_root)
    except (OSError, TraceLoadError):
        return None


def load_in_background(path: Path, progress: Callable[[float], None], cache: bool = True,
                       control: LoadControl | None = None, options: LoadOptions | None = None) -> TraceStore:
    """Blocking; call from a worker thread. Raises TraceLoadError (also when ``control`` cancels).
    ``options``: as ``load_trace`` takes them (the loader process gets them as an argument)."""
    control = control or LoadControl()
    progress = _coarse(progress)
    options = _options(cache, options)
    if options.cache:  # a reopen maps the cache entry here: no loader process to start (~0.5 s of imports)
        try:
            store = open_cached(path, options.cache_root)
        except OSError as exc:  # a name too long, a folder without permission...
            raise TraceLoadError(f"{path}: {exc.strerror or exc}") from None
        if store is not None:
            progress(1.0)
            return store
    try:
        # An export runs SQLite queries in C that a thread cannot stop: it is read in the loader
        # process, which q kills at once, whatever its size.
        big = _total_size(path) >= PROCESS_THRESHOLD or any(is_sqlite(p) for p in trace_files(path))
    except OSError as exc:
        raise TraceLoadError(f"{path}: {exc.strerror or exc}") from None
    start_resource_tracker()  # before any process starts: the loader's or the decoders'
    if not big:
        return load_trace(path, progress=progress, options=options)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    # Not a daemon: daemons may not start the decoder processes of a parallel load.
    proc = ctx.Process(target=_child, args=(str(path), out, options), daemon=False)
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
                if proc.is_alive():
                    continue
                try:  # its result may have been sent just before it exited, after the wait above ended
                    kind, value = out.get(timeout=_LAST_WORD_S)
                except queue.Empty:
                    raise TraceLoadError(f"{path}: the loader process died (out of memory?)") from None
            if kind == "progress":
                progress(value)
            elif kind == "done":
                return value
            elif kind == "cached":
                return _open_cached(path, value, options)
            else:
                raise TraceLoadError(value)
    finally:
        proc.join(timeout=0 if control.cancelled.is_set() and not control.graceful else STOP_WAIT_S)
        if proc.is_alive():
            proc.kill()
            proc.join()
