"""The one way a thread worker hands its result to the screen: ``deliver``.

A screen's work runs in a Textual thread worker (``@work(thread=True, exclusive=True)``). A newer
run of the same group on the same node cancels the older one, and closing the screen cancels its
workers; a cancelled worker's thread still runs to its end, so what it found is stale. ``deliver``
drops it: the check runs on the UI thread, where cancelling happens, so no result slips between
a check and its drawing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.worker import get_current_worker


def deliver(app: App, show: Callable[..., Any], *args: Any) -> None:
    """From inside a thread worker: ``show(*args)`` on the UI thread, unless this worker has been
    cancelled by then (a newer run, the screen closed) or the app has ended."""
    worker = get_current_worker()

    def if_current() -> Any:
        if worker.is_cancelled:
            return None
        return show(*args)  # an awaitable ``show`` is awaited by call_from_thread

    try:
        app.call_from_thread(if_current)
    except RuntimeError:  # the app is no longer running
        pass
