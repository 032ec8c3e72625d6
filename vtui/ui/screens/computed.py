"""The pattern every screen that computes something as it opens follows: ``ComputedScreen``.

Such a screen draws its title line and a "Computing…" placeholder at once, runs ``compute()`` in a
thread worker, and draws what it returned with ``show(result)``. A computation that raises becomes
one line on the screen (``show_error``), never a traceback; a run superseded by a newer one, or
one whose screen has closed, is dropped (``vtui.ui.workers.deliver``). A screen that sends the
timeline somewhere does it one way: ``dismiss(result)``, and the code that pushed it acts on it."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from textual import work
from textual.screen import Screen
from textual.widgets import Static

from vtui.ui.colours import ERROR
from vtui.ui.trace_text import plain
from vtui.ui.workers import deliver

ResultT = TypeVar("ResultT")


@dataclass(frozen=True)
class Jump:
    """Where a closing screen sends the timeline: slice ``row``, and for a time span (a GPU idle gap)
    ``window`` ``(t0, t1)`` around it."""

    row: int
    window: tuple[int, int] | None = None


class ComputedScreen(Screen[ResultT]):
    """A screen whose content is computed off the UI thread each time it opens (or ``start``\\ s again).

    A subclass composes its own widgets, among them the title line ``TITLE_WIDGET`` (drawn from
    ``title_line()``) and the Static ``STATUS_WIDGET`` that reads "Computing…" until the result comes;
    it gives ``compute()`` (runs in the worker; may raise) and ``show(result)`` (on the UI thread;
    may be async). A failure is ``FAILED (ExceptionType: message)`` in ``STATUS_WIDGET``, in the error colour.
    A subclass's own ``on_mount`` runs as well (Textual calls each class's handler), before this one's.
    """

    TITLE_WIDGET = ""  # selector of the title line; empty: the screen has none it redraws
    STATUS_WIDGET = ""  # selector of the Static where "Computing…" and a failure are said
    FAILED = "could not compute"  # how a failure's line begins
    COMPUTING = "Computing…"  # the placeholder until the result comes

    def on_mount(self) -> None:
        self.refresh_title()
        self.start()

    # ---- what a screen gives -------------------------------------------------------------------
    def title_line(self) -> str:
        return ""

    def compute(self) -> Any:
        """The work, on the worker's thread; what it returns goes to ``show``."""
        raise NotImplementedError

    def show(self, result: Any) -> Awaitable[None] | None:
        """The result, drawn on the UI thread."""
        raise NotImplementedError

    def failure(self, exc: BaseException) -> str:
        """The one line a failed computation leaves on the screen."""
        return f"{self.FAILED} ({type(exc).__name__}: {exc})"

    def show_error(self, message: str) -> Awaitable[None] | None:
        self.query_one(self.STATUS_WIDGET, Static).update(plain(message, style=ERROR))
        return None

    # ---- the machinery ---------------------------------------------------------------------------
    def refresh_title(self) -> None:
        if self.TITLE_WIDGET:
            self.query_one(self.TITLE_WIDGET, Static).update(plain(self.title_line()))

    def start(self) -> None:
        """Compute (again): a run still going is cancelled, and what it finds is dropped."""
        self._compute()

    # Failures are caught here, not left to end the worker in ERROR: a failed worker raises out of
    # ``App.workers.wait_for_complete`` (tests, the agent's waits), and a superseded run's failure
    # must be dropped as its result is, which ``deliver`` does for both.
    @work(thread=True, exclusive=True, group="computed-screen", exit_on_error=False)
    def _compute(self) -> None:
        try:
            result = self.compute()
        except Exception as exc:  # noqa: BLE001 — one line on the screen, never a traceback
            deliver(self.app, self.show_error, self.failure(exc))
            return
        deliver(self.app, self.show, result)
