"""The share socket on its own: the private folder and the socket's mode and owner (another
user's, or one open to others, is refused), the line protocol's bounds, and nothing left behind."""

from __future__ import annotations

import asyncio
import os
import socket
import stat

import pytest

from vtui.agent.link import Link, LinkError
from vtui.agent.rundir import (
    ShareRefused,
    check_socket,
    private_folder,
    share_folder,
    shared_apps,
    socket_path,
    sweep_stale,
)
from vtui.agent.server import ShareServer
from vtui.agent.wire import MAX_REPLY_BYTES, MAX_REQUEST_BYTES, encode, ok

NOBODY = 65534


def connect_as(uid: int, path) -> str:
    """Ask ``path`` for a reply from a child process running as ``uid`` (root only): "answered",
    "dropped" (connected, closed unanswered) or "refused" (could not connect)."""
    child = os.fork()
    if child == 0:  # the child: only system calls, then _exit
        code = 1
        try:
            os.setgid(uid)
            os.setuid(uid)
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            s.connect(str(path))
            s.sendall(encode({"op": "hello"}))
            code = 0 if s.recv(100) else 2
        except PermissionError:
            code = 13
        except ConnectionError:  # reset or a broken pipe: closed on it
            code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return {0: "answered", 2: "dropped", 13: "refused"}.get(os.waitstatus_to_exitcode(status), "failed")


async def echo(req, conn):
    if req.get("op") == "attach":
        return ok(trace="t.json")
    if req.get("op") == "huge":
        return ok(text="x" * (MAX_REPLY_BYTES + 10))
    return ok(echo=req)


async def serving(folder, pid=None) -> ShareServer:
    server = ShareServer(socket_path(private_folder(folder), pid), echo)
    await server.start()
    return server


def test_the_folder_is_the_runtime_dirs_else_a_users_own_under_tmp(tmp_path):
    assert share_folder({"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path / "vtui"
    for env in ({}, {"XDG_RUNTIME_DIR": "relative/dir"}, {"XDG_RUNTIME_DIR": str(tmp_path / "missing")}):
        folder = share_folder(env, uid=1234)
        assert folder.name == "vtui-1234" and folder.is_absolute()


def test_the_folder_is_made_private_and_a_loose_or_linked_one_refused(tmp_path):
    made = private_folder(tmp_path / "vtui")
    assert stat.S_IMODE(os.lstat(made).st_mode) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o755)
    with pytest.raises(ShareRefused, match="open to other users .mode 755.: refused; chmod 700 it"):
        private_folder(loose)
    link = tmp_path / "link"
    link.symlink_to(made)
    with pytest.raises(ShareRefused, match="is not a folder"):
        private_folder(link)


async def test_another_users_folder_or_socket_is_refused(runtime_dir, monkeypatch):
    folder = runtime_dir / "vtui"
    server = await serving(folder)
    try:
        sock = server.path
        assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
        assert (await Link(os.getpid(), folder).call({"op": "get_view"}))["ok"]
        if os.geteuid() == 0:
            # A real second user: the 0700 folder keeps it from the socket altogether.
            assert await asyncio.to_thread(connect_as, NOBODY, sock) == "refused"
            # Opened up by hand, the socket still drops a peer of another user unanswered (SO_PEERCRED).
            for opened in (runtime_dir, folder):
                os.chmod(opened, 0o711)
            os.chmod(sock, 0o666)
            assert await asyncio.to_thread(connect_as, NOBODY, sock) == "dropped"
            assert await asyncio.to_thread(connect_as, 0, sock) == "answered"
            for opened in (runtime_dir, folder):
                os.chmod(opened, 0o700)
            os.chmod(sock, 0o600)
            os.chown(sock, NOBODY, NOBODY)  # a socket of someone else's in our folder
            with pytest.raises(ShareRefused, match=f"belongs to user {NOBODY}"):
                check_socket(sock)
            with pytest.raises(LinkError, match=f"belongs to user {NOBODY}"):
                await Link(os.getpid(), folder).call({"op": "get_view"})
            os.chown(sock, 0, 0)
            os.chown(folder, NOBODY, NOBODY)  # the folder made by someone else
        else:  # as another user would see these files: not theirs
            mine = os.geteuid()
            monkeypatch.setattr(os, "geteuid", lambda: mine + 1)
        with pytest.raises(ShareRefused, match="belongs to user .*not to you"):
            private_folder(folder)
        with pytest.raises(LinkError, match="belongs to user .*not to you"):
            await Link(os.getpid(), folder).call({"op": "get_view"})
        with pytest.raises(LinkError, match="belongs to user"):
            Link(None, folder).apps()
    finally:
        monkeypatch.undo()
        if os.geteuid() == 0:
            os.chown(folder, 0, 0)
        server.close()
    assert not server.path.exists()


async def test_a_socket_open_to_others_is_refused(runtime_dir):
    folder = runtime_dir / "vtui"
    server = await serving(folder)
    try:
        os.chmod(server.path, 0o666)
        with pytest.raises(LinkError, match="open to other users .mode 666."):
            await Link(os.getpid(), folder).call({"op": "get_view"})
        assert shared_apps(folder) == []  # not listed either
    finally:
        server.close()


async def test_one_line_each_way_bounded(runtime_dir):
    server = await serving(runtime_dir / "vtui")
    try:
        reader, writer = await asyncio.open_unix_connection(str(server.path), limit=2 * MAX_REPLY_BYTES)
        writer.write(b"not json\n" + encode({"op": "x", "n": 1}) + encode({"op": "huge"}) + b"[1]\n")
        assert b'"error":"not a JSON line"' in await reader.readline()
        assert b'"echo":{"op":"x","n":1}' in await reader.readline()
        huge = await reader.readline()
        assert len(huge) < 1000 and b"over the 1,048,576 the socket carries" in huge
        assert b"must be a JSON object" in await reader.readline()
        writer.write(b"{" + b" " * MAX_REQUEST_BYTES + b"}\n")
        assert b"a request over 65,536 bytes: connection closed" in await reader.readline()
        assert await reader.readline() == b""  # closed
        writer.close()
    finally:
        server.close()


async def test_several_apps_are_listed_and_one_must_be_chosen(runtime_dir):
    folder = runtime_dir / "vtui"
    first, second = await serving(folder), await serving(folder, os.getppid())  # both pids alive
    (folder / "99999999.sock").touch()  # neither a socket nor a live pid: not an app
    try:
        assert [a.pid for a in shared_apps(folder)] == sorted([os.getpid(), os.getppid()], key=str)
        with pytest.raises(LinkError, match="2 apps are sharing .pids .*: list them with the apps tool"):
            await Link(None, folder).call({"op": "get_view"})
        link = Link(None, folder)
        link.choose(os.getppid())
        assert (await link.call({"op": "get_view"}))["echo"] == {"op": "get_view"}
        link.close()
    finally:
        first.close()
        second.close()
    assert not first.path.exists() and not second.path.exists()
    with pytest.raises(LinkError, match="no vtui app is sharing"):
        await Link(None, folder).call({"op": "get_view"})


async def test_a_stale_socket_is_replaced_and_anything_else_refused(runtime_dir):
    folder = private_folder(runtime_dir / "vtui")
    path = socket_path(folder)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens: what a killed app leaves
    server = await serving(folder)
    assert (await Link(os.getpid(), folder).call({"op": "ping"}))["ok"]
    server.close()
    dead = socket_path(folder, 2**22 + 12345)  # above Linux's largest pid: no such process
    left = socket.socket(socket.AF_UNIX)
    left.bind(str(dead))
    left.close()
    (folder / "77.sock.txt").touch()
    assert sweep_stale(folder) == 1 and not dead.exists() and (folder / "77.sock.txt").exists()
    path.write_text("not a socket")
    with pytest.raises(ShareRefused, match="is not a socket of yours"):
        await serving(folder)
    assert path.read_text() == "not a socket"
