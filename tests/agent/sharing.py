"""Pilot steps for a shared app: wait until it listens, or until its sharing state changes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.helpers import settle


async def until_shared(pilot, pauses: int = 100) -> None:
    """The trace loaded and the socket listening (``--share`` starts it right after the load)."""
    await settle(pilot)
    app = pilot.app
    for _ in range(pauses):
        if app.agent is not None and app.agent.active:
            return
        await pilot.pause()
    raise AssertionError("the app did not start sharing")


async def until_change(app, ready: Callable[[], bool], bound_s: float = 30.0) -> None:
    """Wait for the share's state to change until ``ready()`` (a bound, not a sleep)."""
    event = app.agent.changed_event
    while not ready():
        event.clear()
        if ready():
            return
        await asyncio.wait_for(event.wait(), bound_s)
