"""Run a search where a runaway regex cannot freeze the app: in a forked process, with a time
limit, stopped at once on cancel.

Python's ``re`` holds the GIL for a whole match: ``(a+)+$`` against one long name would stall
the UI thread even from a worker thread, and could not be interrupted. A forked child shares
the (memory-mapped) store without copying it and can simply be killed.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
import warnings
from collections.abc import Callable
from typing import TypeVar

from vtui.termination import as_child_process

T = TypeVar("T")
SEARCH_LIMIT_S = 10.0


class SearchStopped(Exception):
    """Cancelled, or over the time limit (the message says which, for people)."""


def _child(fn: Callable[[], object], conn) -> None:
    as_child_process()  # killable, and gone with the app (a fork inherits handlers that ignore SIGTERM)
    try:
        conn.send(("ok", fn()))
    except BaseException as exc:  # noqa: BLE001 — handed to the parent, which reports it
        conn.send(("error", exc))
    finally:
        conn.close()


def run_guarded(fn: Callable[[], T], cancel: threading.Event, limit_s: float = SEARCH_LIMIT_S) -> T:
    """``fn()`` in a forked child; its exception re-raised here; SearchStopped on cancel or timeout.

    Where fork is missing (not Linux/macOS) it runs here, unguarded.
    """
    if "fork" not in mp.get_all_start_methods():
        return fn()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    with warnings.catch_warnings():  # 3.12+ warns about fork with threads; the child only matches and exits
        warnings.simplefilter("ignore", DeprecationWarning)
        proc = ctx.Process(target=_child, args=(fn, send), daemon=True)
        proc.start()
    send.close()
    deadline = time.monotonic() + limit_s
    try:
        while True:
            if recv.poll(0.05):
                try:
                    kind, value = recv.recv()
                except EOFError:
                    raise SearchStopped("the search process died") from None
                if kind == "error":
                    raise value
                return value
            if cancel.is_set():
                raise SearchStopped("search cancelled")
            if time.monotonic() > deadline:
                raise SearchStopped(f"search stopped after {limit_s:g} s (a regex that backtracks without end?)")
            if not proc.is_alive() and not recv.poll():
                raise SearchStopped("the search process died")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        recv.close()

