"""The app's side of sharing: the socket (``ShareServer``), the requests it serves (``ViewTools``)
and what the person sees and does about it: the status words, the agent's log line over the
status line, esc to interrupt what the agent started, ``S`` to end it all.

One agent at a time is attached (the status line says so); requests from any connection run one
after another, as keys do.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual.app import SystemCommand
from textual.widgets import Static

from vtui.agent.rundir import private_folder, share_folder, socket_path, sweep_stale
from vtui.agent.server import Connection, ShareServer
from vtui.agent.view_tools import ViewTools
from vtui.agent.wire import WireError, error, ok, request_op
from vtui.errors import UsageError
from vtui.safe_text import escape_controls
from vtui.ui.trace_text import plain
from vtui.units import format_duration

INTERRUPTED = "interrupted by the person (esc); the view is theirs now"


class AgentLog(Static):
    """One line over the status line: what the agent did last."""

    DEFAULT_CSS = "AgentLog { height: 1; padding: 0 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis; }"


class AppShare:
    def __init__(self, app: Any, folder: Path | None = None) -> None:
        self.app = app
        self.folder = folder
        self.server: ShareServer | None = None
        self.tools = ViewTools(app, self.log)
        self.last_action = ""
        self._lock = asyncio.Lock()
        self._current: asyncio.Task | None = None
        self._interrupted = False
        self._was_attached = False
        self.changed_event = asyncio.Event()  # set on every change of the sharing state (tests wait on it)

    @property
    def active(self) -> bool:
        return self.server is not None

    @property
    def path(self) -> Path | None:
        return self.server.path if self.server is not None else None

    async def start(self) -> Path:
        """Listen (ShareRefused when the folder or socket is not safe), show the log line."""
        folder = private_folder(self.folder or share_folder())
        sweep_stale(folder)
        server = ShareServer(socket_path(folder), self.handle, self.changed)
        await server.start()
        self.server = server
        atexit.register(self._unlink_at_exit, server.path)  # a process ending past the app's own exit
        base = self.app.screen_stack[0]
        if not base.query(AgentLog):
            await base.mount(AgentLog(plain(f"agent: none yet · vtui mcp --attach {os.getpid()}"), id="agent-log"),
                             before="#status")
        self.changed()
        return server.path

    def stop(self, closing: bool = False) -> None:
        """Stop sharing: the socket goes, the agent is dropped (safe to call twice). ``closing``:
        the app is shutting down, nothing is redrawn."""
        server, self.server = self.server, None
        if server is None:
            return
        self.interrupt(quiet=True)
        server.close()
        atexit.unregister(self._unlink_at_exit)
        if closing:
            return
        for log in self.app.screen_stack[0].query(AgentLog):
            log.remove()
        self.changed()

    def palette_commands(self) -> Iterable[SystemCommand]:
        """The agent's bookmarks in the command palette (ctrl+p): the person's way back to them."""
        from vtui.agent.view_tools import restore

        pane = self.app.pane
        if pane is None:
            return
        for name, mark in sorted(self.tools.bookmarks.items()):
            a, b = mark["window"]
            yield SystemCommand(f"bookmark: {name}", f"Back to the agent's bookmark ({format_duration(a)} – "
                                f"{format_duration(b)})", partial(restore, pane, mark))

    @staticmethod
    def _unlink_at_exit(path: Path) -> None:
        with contextlib.suppress(OSError):
            os.unlink(path)

    # ---- what the person sees ----------------------------------------------------------------------
    def status_words(self) -> str:
        if self.server is None:
            return ""
        if self.server.attached:
            return "shared with an agent (S ends, esc interrupts)"
        return "sharing, no agent yet (S stops)"

    def changed(self) -> None:
        attached = self.server is not None and self.server.attached
        if self._was_attached and not attached and self.server is not None:
            self.log("detached (the agent's connection closed)")
        self._was_attached = attached
        self.changed_event.set()
        show = getattr(self.app, "_show_status", None)
        if show is not None:
            show()

    def log(self, text: str) -> None:
        """The agent's action in its line over the status line; also a short toast while a screen
        (Insights, the call tree…) covers that line."""
        self.last_action = text
        base = self.app.screen_stack[0]
        for line in base.query(AgentLog):
            line.update(plain(f"agent: {text}"))
        if self.app.screen is not base:
            self.app.notify(escape_controls(f"agent: {text}"), timeout=3, markup=False)

    def interrupt(self, quiet: bool = False) -> bool:
        """esc: stop the agent's request in progress (its waits end; what it started stops as esc stops it)."""
        task = self._current
        if task is None or task.done():
            return False
        self._interrupted = True
        task.cancel()
        if not quiet:
            self.log("interrupted (esc)")
        return True

    # ---- requests ------------------------------------------------------------------------------------
    async def handle(self, req: dict[str, Any], conn: Connection) -> dict[str, Any]:
        try:
            op = request_op(req)
        except WireError as exc:
            return error(str(exc))
        if op == "hello":
            return ok(pid=os.getpid(), trace=self.tools_trace(), attached=self.server is not None and self.server.attached)
        if op == "attach":
            if self.server is not None and any(c.attached and c is not conn for c in self.server.connections):
                return error("another agent is attached to this app")
            conn.attached = True
            self.changed()
            self.log("attached")
            return ok(pid=os.getpid(), trace=self.tools_trace())
        async with self._lock:  # one request at a time, as keys come one at a time
            self._interrupted = False
            task = asyncio.ensure_future(self.tools.run(op, req))
            self._current = task
            try:
                return await task
            except Exception as exc:  # noqa: BLE001 — one line to the agent, never a dead connection
                return error(escape_controls(f"internal error ({type(exc).__name__}: {exc}); please report it")[:600])
            except asyncio.CancelledError:
                me = asyncio.current_task()
                if self._interrupted and (me is None or not me.cancelling()):  # esc, not the share closing
                    return error(INTERRUPTED)
                raise
            finally:
                self._current = None

    def tools_trace(self) -> str:
        from vtui.agent.view_doc import safe

        return safe(str(self.app.path), 300)


async def toggle_share(app: Any) -> None:
    """``S`` / ``--share``: start sharing ``app``'s view, or stop; what happened is said in a toast."""
    if app.pane is None:
        app.notify("Sharing starts once the trace is loaded", timeout=3)
        return
    if app.agent is not None and app.agent.active:
        app.agent.stop()
        app.notify("Stopped sharing: the agent is detached and the socket removed", timeout=3)
        return
    if app.agent is None:
        app.agent = AppShare(app)
    try:
        path = await app.agent.start()
    except UsageError as exc:
        app.notify(escape_controls(f"Cannot share: {exc}"), severity="error", markup=False)
        return
    app.notify(escape_controls(f"Sharing: an agent attaches with  vtui mcp --attach {os.getpid()}  (socket {path}; S stops)"),
               timeout=6, markup=False)
