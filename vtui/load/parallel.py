"""Decode one trace's event array on several cores: byte ranges split at event boundaries.

The array is cut into several ranges per process at ``},{`` matches. Such a match may lie
inside a string or a nested value, so a range is trusted only once the range before it decoded
right up to the cut (see ``decode_range``: that proves the cut is a real event boundary).
Processes claim ranges one at a time (see ``ParallelDecode``); each range's columns come back
through a file, and are joined in order while each earlier range reached its end. Whatever is
left after the first range that did not is decoded by the ordinary one-process scan. Exact by
construction; the worst case is one process's speed plus the wasted work.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import mmap
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import msgspec

from vtui.io.argsfile import ArgsFile, RangeWriter
from vtui.io.columns import Columns, ColumnSink
from vtui.io.events import Event
from vtui.io.jsonbytes import skip as skip_bytes
from vtui.io.jsonscan import BOUNDARY, array_tail_end, decode_range
from vtui.io.mapguard import guarded
from vtui.load.malloc import load_memory_settings
from vtui.tempfiles import temp_prefix
from vtui.termination import start_resource_tracker

_PROBE_DECODER = msgspec.json.Decoder(list[Event])
MIN_RANGE = 16 << 20  # bytes: below this a range is not worth a process start (~0.3 s)
RANGES_PER_JOB = 8
MAX_JOBS = 8

# Shared with the workers (set in each by ``_init``): bytes decoded per range, range claims, their lock.
_done: Any = None  # set in each worker by _init (shared arrays and a lock)
_claims: Any = None
_lock: Any = None


def default_jobs() -> int:
    """Decoder processes for a load that starts now: the cores this process may use, less those
    other work keeps busy (see ``decode_jobs``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average here: assume the cores are free
        load = 0.0
    return decode_jobs(cores, load)


def decode_jobs(cores: int, load: float) -> int:
    """As many decoders as there are idle cores (``load``: the 1-minute load average), at least one.

    A second decoder on a core another job holds buys little and costs much: it gets half a core,
    its start (~0.3 s CPU) and the join of its ranges are paid in full, and two processes sharing
    the caches with a neighbour spend more CPU per byte. Measured on the 2-core machine, 1 GB,
    one core kept busy: two decoders 1.06-1.08x faster than one, for more CPU-seconds.
    The load average trails by up to a minute: a load right after another one may start fewer.
    At most ``MAX_JOBS``: each decoder is a Python with numpy and msgspec (~60-90 MB), and with as
    many processes as ranges there is nothing left to balance. (Only 2 cores were measured here.)
    """
    idle = cores - max(load, 0.0)
    return max(1, min(int(idle + 0.5), cores, MAX_JOBS))


def can_start_workers() -> bool:
    """Daemon processes may not have children (multiprocessing's rule)."""
    return not mp.current_process().daemon


def check_not_bootstrapping() -> None:
    """Fail fast when a spawned worker is re-running an unguarded ``__main__`` script.

    (multiprocessing marks a starting child ``_inheriting``; it uses the same check itself.)
    Without this a script with no ``if __name__ == "__main__":`` guard would load the trace
    again in every worker; failing makes the parent decode in one process instead.
    """
    if getattr(mp.current_process(), "_inheriting", False):
        raise RuntimeError("vtui load_trace() called while a decoder process was starting; "
                           "guard the script's code with `if __name__ == '__main__':`")


def plan_ranges(data, pos: int, jobs: int, min_range: int = MIN_RANGE) -> list[tuple[int, int]]:
    """Byte ranges [start, end) covering the events after ``pos`` (just after the array's ``[``).

    Each range but the last ends just after a ``}`` and the next starts at the ``{`` after the
    comma. The cuts are only candidates: ``decode_range`` proves or refutes them.
    """
    n = len(data)
    pos = skip_bytes(data, pos, b" \t\r\n,")
    if pos >= n or data[pos] != 0x7B:
        return []
    end = array_tail_end(data, pos)
    jobs = max(1, min(jobs, (end - pos) // max(min_range, 1)))
    ranges: list[tuple[int, int]] = []
    start = pos
    for i in range(1, jobs):
        at = pos + (end - pos) * i // jobs
        if at <= start:
            continue
        match = _plausible_cut(data, at, end)
        if match is None:
            break
        ranges.append((start, match.start() + 1))
        start = match.end() - 1
    ranges.append((start, end))
    return ranges


_PROBE = 64 << 10  # bytes decoded after a candidate cut to judge it
_CANDIDATES = 64  # candidate cuts tried per split point


def _plausible_cut(data, at: int, end: int):
    """The first ``},{`` match after ``at`` whose ``{`` starts something that decodes as a run of
    events (objects with a ``ph``): a cheap filter against cuts inside args or strings, so the
    proof (see ``decode_range``) rarely fails. None when no candidate looks right."""
    tried = 0
    for match in BOUNDARY.finditer(data, at, end):
        tried += 1
        if tried > _CANDIDATES:
            return None
        first = match.end() - 1
        stop = min(end, first + _PROBE)
        for probe in BOUNDARY.finditer(data, first + 1, stop):
            try:
                events = _PROBE_DECODER.decode(b"[" + data[first : probe.start() + 1] + b"]")
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if events and all(e.ph is not None for e in events):
                return match
            break
    return None


class ParallelDecode:
    """The ``fast`` hook of ``scan_trace``: decode the event array in ``jobs`` processes.

    ``data_path`` is a file holding exactly ``data`` (the trace, or its gunzipped copy), which
    workers map themselves; their args go into ``args`` at offsets reserved per range.

    The array is cut into more ranges than processes. Each process claims ranges one at a
    time from a shared table: the workers from the front, this process from the back (after the
    first range, which it takes before any worker has started). So nobody waits while work is
    left, and a worker that starts late (spawning took ~0.2 s here) simply claims less.
    """

    steal = True  # this process claims ranges too (tests turn it off so the workers do them)

    def __init__(self, data_path: str, args: ArgsFile, jobs: int, progress: Callable[[float], None] | None = None,
                 min_range: int | None = None, pure_python: bool = False) -> None:
        self.data_path = data_path
        self.pure_python = pure_python
        self.args = args
        self.jobs = jobs
        self.progress = progress
        self.min_range = min_range
        self.used_ranges = 0  # how many ranges were decoded in parallel and kept (for tests / benchmarks)
        self.ranges_total = 0

    def __call__(self, data, pos: int, sink: ColumnSink) -> int:
        ranges = plan_ranges(data, pos, self.jobs * RANGES_PER_JOB,
                             MIN_RANGE if self.min_range is None else self.min_range)
        if len(ranges) < 2:
            return pos  # the one-process scan does it all
        first, last = ranges[0][0], ranges[-1][1]
        region = self.args.reserve(last - first)
        bases = [(region + s - first, e - s) for s, e in ranges]
        ctx = mp.get_context("spawn")  # never fork: the app has threads, and fork is unsafe with them
        start_resource_tracker()  # before the lock registers with it: one that SIGHUP cannot kill
        done = ctx.Array("q", len(ranges), lock=False)  # bytes decoded per range, for progress
        claims = ctx.Array("b", len(ranges), lock=False)
        lock = ctx.Lock()
        claims[0] = 1  # the first range is this process's
        n = max(len(data), 1)
        own = [0]  # bytes this process finished

        def report(done_here: int) -> None:
            if self.progress:
                self.progress(min(1.0, (first + own[0] + done_here + sum(done)) / n))

        def here(k: int) -> tuple[Columns, int]:
            got = _decode_here(data, ranges[k], self.args.path, bases[k], report, self.pure_python)
            own[0] += ranges[k][1] - ranges[k][0]
            return got

        results: list[tuple[Columns, int] | None] = [None] * len(ranges)
        workers = min(self.jobs, len(ranges)) - 1
        try:
            out_dir = tempfile.mkdtemp(prefix=temp_prefix("ranges"), dir=os.path.dirname(self.args.path))
        except OSError:
            return pos
        # Undone in reverse order: close the claims (so the workers stop), wait for them, remove
        # their files — also when this process fails or is interrupted half-way.
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(shutil.rmtree, out_dir, ignore_errors=True)
            try:
                pool = cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init,
                                              initargs=(done, claims, lock))
            except (OSError, ValueError, RuntimeError):
                return pos
            cleanup.enter_context(pool)
            cleanup.callback(_close_claims, claims, lock)
            futures: list[cf.Future] = []
            try:
                with _sigint_blocked():  # the workers start (on submit) with ctrl-c held off, see _init
                    for _ in range(workers):
                        futures.append(pool.submit(_decode_worker, self.data_path, ranges, self.args.path, bases,
                                                   out_dir, self.pure_python))
            except (OSError, RuntimeError, ValueError, cf.process.BrokenProcessPool):
                pass  # no worker (ValueError: e.g. a stderr without a file descriptor): decode here
            results[0] = here(0)
            while self.steal and (k := _claim(claims, lock, from_end=True)) is not None:
                results[k] = here(k)
            reached, kept = _join_in_order(ranges, results, out_dir, futures, sink, pos, report)
        self.used_ranges = kept
        self.ranges_total = len(ranges)
        return reached


def _join_in_order(ranges: list[tuple[int, int]], results: list, out_dir: str, futures: list[cf.Future],
                   sink: ColumnSink, pos: int, report: Callable[[int], None]) -> tuple[int, int]:
    """Absorb the ranges into ``sink`` in file order, each as soon as it is there (this
    process's from ``results``, the workers' from their files), while each earlier range was
    proven to end where the next begins. Returns (position reached, ranges kept)."""
    reached, kept = pos, 0
    pending = set(futures)
    for k, (start, end) in enumerate(ranges):
        result, results[k] = results[k], None
        while result is None:
            path = os.path.join(out_dir, f"{k}.pickle")
            if os.path.exists(path):
                result = _collect(path)
            elif not pending:
                break  # nobody will decode it (a worker died): the scan goes on from here
            else:
                _, pending = cf.wait(pending, timeout=0.02)
                report(0)
        if result is None:
            break
        cols, got = result
        sink.absorb(cols, got - start)
        reached = got
        kept += 1
        if got != end:  # not proven: what follows is decoded again, in order
            break
    return reached, kept


_LOCK_WAIT = 10.0  # seconds: a process killed while holding the claims' lock must not block the rest


def _claim(claims, lock, from_end: bool) -> int | None:
    """Take the next unclaimed range (from the front or the back); None when all are taken."""
    if not lock.acquire(timeout=_LOCK_WAIT):
        return None
    try:
        order = range(len(claims) - 1, -1, -1) if from_end else range(len(claims))
        for k in order:
            if not claims[k]:
                claims[k] = 1
                return k
        return None
    finally:
        lock.release()


def _close_claims(claims, lock) -> None:
    """Mark every range taken: workers start nothing more."""
    got = lock.acquire(timeout=_LOCK_WAIT)
    claims[:] = [1] * len(claims)
    if got:
        lock.release()


@contextlib.contextmanager
def _sigint_blocked():
    """SIGINT blocked in this thread meanwhile: a process started now inherits the block, so a
    ctrl-c while a worker is still starting Python (before ``_init``) cannot print its traceback."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _init(done, claims, lock) -> None:
    global _done, _claims, _lock
    _done, _claims, _lock = done, claims, lock
    # ctrl-c reaches the whole process group: the parent stops the workers (it closes the
    # claims) and cleans up; a worker interrupted itself would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # held off since the start; now ignored
    _die_with_parent()


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when the loading process dies, however it dies (kill -9,
    a SIGBUS on a trace cut while it was mapped): no decoder is left running with parent 1."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        parent = os.getppid()
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the call: nothing would signal us
            os._exit(1)
    except (OSError, AttributeError):
        pass


def _decode_here(data, rng: tuple[int, int], args_path: str, base: tuple[int, int],
                 report: Callable[[int], None], pure_python: bool = False) -> tuple[Columns, int]:
    start, end = rng
    writer = RangeWriter(args_path, *base)
    sink = ColumnSink(args=writer, pure_python=pure_python, expect_bytes=end - start)
    def progress(pos: int) -> None:
        report(pos - start)

    try:
        reached = decode_range(data, start, end, sink, progress)
    finally:
        writer.close()
    return sink.finish(), reached


def _decode_worker(data_path: str, ranges: list[tuple[int, int]], args_path: str,
                   bases: list[tuple[int, int]], out_dir: str, pure_python: bool = False) -> None:
    """In a worker process: claim ranges until none is left; each range's columns go to a file.

    Not through the result pipe: the parent reads a pipe 64 KiB per system call, and each call
    waits for the GIL its decoding thread holds — sending ~30 MB of columns that way stalled
    the worker ~0.5 s per range (measured). One file read is one call.
    """
    guarded()  # the trace cut meanwhile: zeros past its end, not SIGBUS (the parent then refuses it)
    with open(data_path, "rb") as fh:
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    with contextlib.closing(data), load_memory_settings():
        while (k := _claim(_claims, _lock, from_end=False)) is not None:

            def report(done: int, k=k) -> None:
                _done[k] = done

            result = _decode_here(data, ranges[k], args_path, bases[k], report, pure_python)
            path = os.path.join(out_dir, f"{k}.pickle")
            with open(path + ".tmp", "wb") as out:
                pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(path + ".tmp", path)  # the parent takes a range once its file exists


def _collect(path: str) -> tuple[Columns, int]:
    """The parent's side of ``_decode_worker``: read a range's columns back. (Unpickling is safe
    here: the folder is this load's own ``mkdtemp``, readable and writable by this user only.)"""
    with open(path, "rb") as fh:
        return pickle.loads(fh.read())
