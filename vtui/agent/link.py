"""The attach side's connection to a shared app: found in the private folder (``rundir``),
checked (folder and socket this user's alone) before connecting, one request and one reply at a
time over one connection, made again when the app went away and came back."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from vtui.agent.rundir import (
    SharedApp,
    ShareRefused,
    check_folder,
    check_socket,
    share_folder,
    shared_apps,
    socket_path,
)
from vtui.agent.wire import MAX_REPLY_BYTES, MAX_REQUEST_BYTES, WireError, decode, encode

REPLY_WAIT_S = 330.0  # a CLI query may run 300 s in the app


class LinkError(Exception):
    """No app to talk to, or it went away; the message says which and what to do."""


class Link:
    def __init__(self, pid: int | None = None, folder: Path | None = None) -> None:
        self.pid = pid  # None: the one app sharing
        self.folder = folder or share_folder()
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock = asyncio.Lock()
        self.trace = ""

    def apps(self) -> list[SharedApp]:
        try:
            return shared_apps(self.folder)
        except ShareRefused as exc:
            raise LinkError(str(exc)) from None

    def choose(self, pid: int) -> None:
        """Talk to app ``pid`` from the next request on."""
        self.close()
        self.pid = pid

    def _target(self) -> Path:
        if self.pid is not None:
            path = socket_path(self.folder, self.pid)
            if not path.exists():
                raise LinkError(f"app {self.pid} is not sharing (start it with vtui --share TRACE, or press S in it)")
            return path
        apps = self.apps()
        if not apps:
            raise LinkError("no vtui app is sharing: start one with  vtui --share TRACE  or press S in the app")
        if len(apps) > 1:
            raise LinkError(f"{len(apps)} apps are sharing (pids {', '.join(str(a.pid) for a in apps)}): "
                            "list them with the apps tool and pick one with attach")
        return apps[0].path

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        path = self._target()
        try:
            check_folder(path.parent)
            check_socket(path)
        except ShareRefused as exc:
            raise LinkError(str(exc)) from None
        try:
            reader, writer = await asyncio.open_unix_connection(str(path), limit=MAX_REPLY_BYTES + 1)
        except OSError as exc:
            raise LinkError(f"cannot connect to {path} ({exc.strerror or exc}): is the app still sharing?") from None
        self._streams = (reader, writer)
        hello = await self._exchange({"op": "attach"})
        if not hello.get("ok"):
            self.close()
            raise LinkError(str(hello.get("error") or "the app refused"))
        self.trace = str(hello.get("trace", ""))
        return reader, writer

    async def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """The app's reply to ``request`` (LinkError when there is no app to ask)."""
        line = encode(request)
        if len(line) > MAX_REQUEST_BYTES:
            raise LinkError(f"the request is {len(line):,} bytes, over the {MAX_REQUEST_BYTES:,} allowed")
        async with self._lock:
            if self._streams is None:
                await self._connect()
            try:
                return await self._exchange(request)
            except LinkError:
                self.close()
                raise

    async def _exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._streams is not None
        reader, writer = self._streams
        try:
            writer.write(encode(request))
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), REPLY_WAIT_S)
        except (TimeoutError, OSError, ValueError) as exc:
            self.close()
            raise LinkError(f"the app stopped answering ({type(exc).__name__}): it closed, or stopped sharing") from None
        if not line:
            self.close()
            raise LinkError("the app closed the connection: it quit or stopped sharing (S)")
        try:
            return decode(line, MAX_REPLY_BYTES)
        except WireError as exc:
            self.close()
            raise LinkError(f"a reply that is not this protocol's: {exc}") from None

    async def hello(self, app: SharedApp) -> dict[str, Any]:
        """What app ``app`` says of itself (a short connection of its own, not attached)."""
        try:
            check_socket(app.path)
            reader, writer = await asyncio.open_unix_connection(str(app.path), limit=MAX_REPLY_BYTES + 1)
        except (ShareRefused, OSError) as exc:
            return {"ok": False, "error": str(exc)}
        try:
            writer.write(encode({"op": "hello"}))
            await writer.drain()
            return decode(await asyncio.wait_for(reader.readline(), 10), MAX_REPLY_BYTES)
        except (TimeoutError, OSError, ValueError) as exc:
            return {"ok": False, "error": type(exc).__name__}
        finally:
            writer.close()

    def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None
