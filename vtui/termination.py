"""SIGTERM / SIGHUP: stop in an orderly way, so every cleanup (temp files) runs.

The CLI and the app's loader process turn the signals into an exception raised where the
process is (``signals_as_exceptions``); the app, whose main thread runs an event loop, stops
its loader and exits instead (``exit_on_signals``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator

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
