"""One search job per view, used by the main app and by compare mode alike: the search runs in a
worker thread in the guarded regex engine (``vtui.regex_guard``: linear time, a time limit, esc
cancels), a newer search or esc stops the one running, and whatever goes wrong comes back as one
line for people (never swallowed)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from textual.worker import Worker

from vtui.analysis.slices.search import SearchResult, search
from vtui.errors import UsageError
from vtui.regex_guard import Budget
from vtui.store.store import TraceStore
from vtui.ui.timeline.view import SEARCH_LIMIT_S, smart_case
from vtui.ui.workers import deliver

Done = Callable[[SearchResult | None, str | None], None]  # (the result, else the error line)


def run_search(store: TraceStore, text: str, tracks: np.ndarray, cancel: threading.Event,
               limit_s: float = SEARCH_LIMIT_S) -> tuple[SearchResult | None, str | None]:
    """Blocking (a worker thread): (result, None) or (None, a line saying why not). Case is smart
    (an engine option, so an error quotes the pattern as typed)."""
    try:
        found = search(store, text, tracks=tracks, ignore_case=smart_case(text), budget=Budget(limit_s, cancel))
    except UsageError as exc:  # a bad pattern, the time limit, esc
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 — a message, never a traceback
        return None, f"search failed ({type(exc).__name__})"
    return replace(found, pattern=text), None


class SearchJob:
    """The search of one view: at most one running; ``pattern`` while it runs (for "searching…")."""

    def __init__(self, limit_s: float = SEARCH_LIMIT_S) -> None:
        self.limit_s = limit_s
        self.pattern: str | None = None
        self._cancel = threading.Event()  # read by the regex engine between chunks
        self._worker: Worker | None = None

    @property
    def running(self) -> bool:
        return self.pattern is not None

    def start(self, node, store: TraceStore, text: str, tracks: np.ndarray, done: Done) -> None:
        """Search ``store`` for ``text`` in a worker of ``node`` (a widget, screen or app); ``done`` is
        called on the UI thread, unless a newer search or ``stop`` came first."""
        self._cancel.set()  # a search still running gives way to this one (the engine stops)
        cancel = self._cancel = threading.Event()
        self.pattern = text
        app = node.app

        def finish(found: SearchResult | None, error: str | None) -> None:
            self.pattern = None
            done(found, error)

        def work() -> None:
            found, error = run_search(store, text, tracks, cancel, self.limit_s)
            deliver(app, finish, found, error)  # dropped once a newer search or stop() cancelled it

        self._worker = node.run_worker(work, thread=True, exclusive=True, group="search", description="search",
                                       exit_on_error=False)

    def stop(self) -> bool:
        """esc / quit: stop the running search (the engine checks the cancel between chunks). False when none ran."""
        self._cancel.set()
        if self._worker is not None:
            self._worker.cancel()
        if self.pattern is None:
            return False
        self.pattern = None
        return True
