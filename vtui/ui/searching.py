"""One search job per view, used by the main app and by compare mode alike: the search runs in a
worker thread and a guarded process (``search_job.run_guarded``), a newer search or esc stops
the one running, and whatever goes wrong comes back as one line for people (never swallowed)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from vtui.analysis.search import ARGS_PREFIX, SearchResult, search
from vtui.errors import UsageError
from vtui.store.store import TraceStore
from vtui.ui.search_job import SEARCH_LIMIT_S, SearchStopped, run_guarded
from vtui.ui.view import smart_case

Done = Callable[[SearchResult | None, str | None], None]  # (the result, else the error line)


def said_plainly(text: str, message: str) -> str:
    """A regex error in the user's own terms: without the ``(?i)`` that smart case added."""
    smart = smart_case(text)
    if smart == text:
        return message
    prefix = ARGS_PREFIX if text.startswith(ARGS_PREFIX) else ""
    mine, theirs = text[len(prefix):], smart[len(prefix):]
    shift = len(theirs) - len(mine)
    message = message.replace(repr(smart), repr(text)).replace(repr(theirs), repr(mine))
    # re's "at position N" counts in the pattern it compiled
    return re.sub(r"position (\d+)", lambda m: f"position {max(int(m.group(1)) - shift, 0)}", message)


def run_search(store: TraceStore, text: str, tracks: np.ndarray, cancel: threading.Event,
               limit_s: float = SEARCH_LIMIT_S) -> tuple[SearchResult | None, str | None]:
    """Blocking (a worker thread): (result, None) or (None, a line saying why not)."""
    try:
        found = run_guarded(lambda: search(store, smart_case(text), tracks=tracks), cancel, limit_s)
    except (UsageError, SearchStopped) as exc:
        return None, said_plainly(text, str(exc))
    except Exception as exc:  # noqa: BLE001 — a message, never a traceback
        return None, f"search failed ({type(exc).__name__})"
    return replace(found, pattern=text), None


class SearchJob:
    """The search of one view: at most one running; ``pattern`` while it runs (for "searching…")."""

    def __init__(self, limit_s: float = SEARCH_LIMIT_S) -> None:
        self.limit_s = limit_s
        self.pattern: str | None = None
        self._cancel = threading.Event()

    @property
    def running(self) -> bool:
        return self.pattern is not None

    def start(self, node, store: TraceStore, text: str, tracks: np.ndarray, done: Done) -> None:
        """Search ``store`` for ``text`` in a worker of ``node`` (a widget, screen or app); ``done`` is
        called on the UI thread, unless a newer search or ``stop`` came first."""
        self._cancel.set()  # a search still running gives way to this one
        cancel = self._cancel = threading.Event()
        self.pattern = text
        app = node.app

        def finish(found: SearchResult | None, error: str | None) -> None:
            if cancel is not self._cancel:
                return  # a newer search, or a stopped one, owns the status now
            self.pattern = None
            done(found, error)

        def work() -> None:
            found, error = run_search(store, text, tracks, cancel, self.limit_s)
            if not cancel.is_set():
                try:
                    app.call_from_thread(finish, found, error)
                except RuntimeError:  # the app has ended meanwhile
                    pass

        node.run_worker(work, thread=True, group="search", description="search", exit_on_error=False)

    def stop(self) -> bool:
        """esc / quit: stop the running search (its process is killed). False when none ran."""
        self._cancel.set()
        if self.pattern is None:
            return False
        self.pattern = None
        return True
