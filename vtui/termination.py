"""SIGTERM / SIGHUP: stop in an orderly way, so every cleanup (temp files) runs.

The CLI and the app's loader process turn the signals into an exception raised where the
process is (``signals_as_exceptions``); the app, whose main thread runs an event loop, stops
its loader and exits instead (``exit_on_signals``), and makes sure it really ends
(``hard_exit_after``). Child processes ask to die with the app (``as_child_process``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from multiprocessing import resource_tracker

SIGNAL_NAMES = ("SIGTERM", "SIGHUP")


class Terminated(BaseException):
    """SIGTERM / SIGHUP, raised where the process is. ``code``: the exit status a shell shows."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.code = 128 + signum


def _wanted() -> list[int]:
    return [getattr(signal, n) for n in SIGNAL_NAMES if hasattr(signal, n)]


@contextlib.contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Meanwhile SIGTERM / SIGHUP raise ``Terminated`` (main thread only; elsewhere a no-op)."""
    def on_signal(signum, frame) -> None:
        raise Terminated(signum)

    try:
        old = {s: signal.signal(s, on_signal) for s in _wanted()}
    except ValueError:  # not the main thread: leave them
        yield
        return
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def exit_on_signals(callback: Callable[[int], None]) -> None:
    """Call ``callback(signum)`` in the running event loop on SIGTERM / SIGHUP (an app's way:
    an exception raised inside the loop would leave the terminal in the app's mode)."""
    loop = asyncio.get_running_loop()
    for signum in _wanted():
        try:
            loop.add_signal_handler(signum, callback, signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such support
            return


EXIT_GRACE_S = 5.0  # after an exit began: long enough for an orderly one, short enough that no one waits


def hard_exit_after(seconds: float, code: Callable[[], int]) -> threading.Timer:
    """Make sure the process ends: ``seconds`` from now, kill our child processes and ``os._exit``.

    An orderly exit can hang for good: a worker thread blocked handing its result to an event
    loop that no longer runs (``call_from_thread``) keeps the interpreter joining it, and the
    loop's signal handlers (still installed) swallow SIGTERM. With the terminal gone, nobody
    would ever see or end that process; this timer (a daemon thread) does."""
    def fire() -> None:
        kill_children()
        os._exit(code())

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


@contextlib.contextmanager
def end_at_once_on_signals(busy: Callable[[], bool]) -> Iterator[None]:
    """Meanwhile SIGTERM / SIGHUP / SIGINT end the process at once, whatever its threads wait on
    (a server whose worker thread blocks reading stdin would otherwise wait for the next line):
    idle (``busy()`` false), ``os._exit(128 + signum)`` right away; busy, ``Terminated`` is raised
    in the main thread so the work's cleanups run (the caller then exits), and the process ends
    within ``EXIT_GRACE_S`` anyway: work in C code (a DuckDB query) runs no Python handler until
    it returns, so a watcher thread reads the signal from the wakeup fd and keeps the deadline."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signums = [*_wanted(), signal.SIGINT]

    def on_signal(signum, frame) -> None:
        if busy():
            raise Terminated(signum)
        exit_now(128 + signum)

    def watch(fd: int) -> None:
        while True:
            try:
                data = os.read(fd, 1)
            except OSError:
                return
            if not data:
                return
            if data[0] not in signums:
                continue
            if not busy():
                exit_now(128 + data[0])
            code = 128 + data[0]
            hard_exit_after(EXIT_GRACE_S, functools.partial(int, code))

    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    old = {s: signal.signal(s, on_signal) for s in signums}
    old_fd = signal.set_wakeup_fd(write_end)
    watcher = threading.Thread(target=watch, args=(read_end,), daemon=True, name="vtui-signals")
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        for s, handler in old.items():
            signal.signal(s, handler)
        os.close(write_end)  # the watcher reads the end of the pipe and returns
        watcher.join(timeout=1.0)
        os.close(read_end)


def exit_now(code: int) -> None:
    """End the process with ``code`` now: child processes killed, nothing else waited for."""
    kill_children()
    os._exit(code)


def kill_children() -> None:
    """SIGKILL every child process multiprocessing started here (the loader, its decoders)."""
    import multiprocessing as mp  # noqa: PLC0415 — only on the way out

    for child in mp.active_children():
        with contextlib.suppress(Exception):
            child.kill()


def as_child_process(death_signal: int = signal.SIGKILL) -> None:
    """First thing in a child process (spawned from the app): the default response to SIGTERM /
    SIGHUP / SIGINT (whatever the parent's handlers were when it started the child), and
    ``death_signal`` from the kernel when the parent dies (Linux), so no child outlives vtui."""
    with contextlib.suppress(ValueError, OSError):  # not the main thread / no wakeup fd
        signal.set_wakeup_fd(-1)
    for signum in (*_wanted(), signal.SIGINT):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signum, signal.SIG_DFL)
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes  # noqa: PLC0415

            ctypes.CDLL(None, use_errno=True).prctl(1, int(death_signal))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


_TRACKER_LOCK = threading.Lock()


def start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (a no-op once it runs) so that SIGHUP cannot kill it.

    The tracker ignores SIGINT and SIGTERM but not SIGHUP, which a closing terminal sends to
    the whole process group: it died mid-load, and this process, cleaning up, started a new one
    that printed "process died unexpectedly" and a ``KeyError`` traceback per semaphore it had
    never seen. Started with SIGHUP blocked (it inherits the mask and unblocks only SIGINT and
    SIGTERM), it lives until every process holding its pipe has ended, then exits by itself.

    The real stderr too: while the app runs, Textual swaps ``sys.stderr`` for a capture whose
    ``fileno()`` is -1, and spawning the tracker then fails ("bad value(s) in fds_to_keep").
    """
    hup = {signal.SIGHUP} if hasattr(signal, "SIGHUP") and hasattr(signal, "pthread_sigmask") else set()
    with _TRACKER_LOCK, contextlib.redirect_stderr(sys.__stderr__):
        old = signal.pthread_sigmask(signal.SIG_BLOCK, hup) if hup else None
        try:
            resource_tracker.ensure_running()
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
