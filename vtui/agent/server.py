"""The app's end of the socket: an asyncio unix server on the app's own event loop.

Each connection sends requests one line at a time and gets one reply line for each; ``handle``
makes the reply. The socket is bound in the private folder (``rundir``) and made 0600 before it
listens; a peer whose user is not this one (``SO_PEERCRED``, where the system has it) is dropped
unanswered. ``close`` stops listening, drops every connection and removes the socket file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from vtui.agent.rundir import ShareRefused
from vtui.agent.wire import MAX_REQUEST_BYTES, WireError, decode, encode_reply, error


class Connection:
    """One client: ``attached`` once it has said it is the agent (the status line shows it)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.attached = False


Handler = Callable[[dict[str, Any], Connection], Awaitable[dict[str, Any]]]


class ShareServer:
    def __init__(self, path: Path, handle: Handler, on_change: Callable[[], None] = lambda: None) -> None:
        self.path = path
        self.handle = handle
        self.on_change = on_change  # a connection came or went, or attached
        self.connections: set[Connection] = set()
        self._server: asyncio.base_events.Server | None = None

    @property
    def attached(self) -> bool:
        return any(c.attached for c in self.connections)

    async def start(self) -> None:
        _clear_stale(self.path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(self.path))
            os.chmod(self.path, 0o600)  # before listen: nobody can connect until it is
            sock.listen(4)
            self._server = await asyncio.start_unix_server(self._client, sock=sock, limit=MAX_REQUEST_BYTES + 1)
        except OSError as exc:
            sock.close()
            self._unlink()
            raise ShareRefused(f"cannot listen on {self.path} ({exc.strerror or exc})") from None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(writer)
        if not _same_user(writer):
            writer.close()
            return
        self.connections.add(conn)
        try:
            await self._serve(reader, conn)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:  # the loop ending (the app's exit): nothing awaits this task
            pass
        finally:
            self.connections.discard(conn)
            writer.close()
            if conn.attached:
                self.on_change()

    async def _serve(self, reader: asyncio.StreamReader, conn: Connection) -> None:
        writer = conn.writer
        while True:
            try:
                line = await reader.readline()
            except ValueError:  # over the limit: the rest of the line cannot be told from the next request
                writer.write(encode_reply(error(f"a request over {MAX_REQUEST_BYTES:,} bytes: connection closed")))
                await writer.drain()
                return
            if not line:
                return
            try:
                reply = await self.handle(decode(line), conn)
            except WireError as exc:
                reply = error(str(exc))
            writer.write(encode_reply(reply))
            await writer.drain()

    def close(self) -> None:
        """Stop listening, drop every connection, remove the socket (safe to call twice)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for conn in list(self.connections):
            conn.writer.close()  # its reader sees the end: the connection's task returns
        self.connections.clear()
        self._unlink()

    def _unlink(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(self.path).st_mode):
                os.unlink(self.path)


def _clear_stale(path: Path) -> None:
    """A socket of this name is left by a dead process that had this pid: removed. Anything else
    there is refused (in a private folder only this user can have put it there)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
        raise ShareRefused(f"{path} exists and is not a socket of yours: refused")
    os.unlink(path)


def _same_user(writer: asyncio.StreamWriter) -> bool:
    """The peer runs as this user (Linux's SO_PEERCRED); True where the system cannot say, as the
    0700 folder and the 0600 socket already keep other users out."""
    sock = writer.get_extra_info("socket")
    peercred = getattr(socket, "SO_PEERCRED", None)
    if sock is None or peercred is None:
        return True
    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i")))
    except OSError:
        return True
    return uid == os.geteuid()
