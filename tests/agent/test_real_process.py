"""The app as a person runs it, in a terminal (a pty): `vtui --share` listens once loaded, and
quitting (q) or being told to stop (SIGTERM, the terminal's SIGHUP) leaves no socket and no
process behind."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys

import pytest

from tests.agent.traces import kineto_like
from tests.helpers import ROOT, deadline


def start_app(trace, runtime_dir) -> tuple[int, int]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: the app in the pty (never back into pytest)
        try:
            os.environ.update({"XDG_RUNTIME_DIR": str(runtime_dir), "PYTHONPATH": str(ROOT), "TERM": "xterm-256color",
                               "COLUMNS": "160", "LINES": "48"})
            os.chdir(ROOT)
            os.execv(sys.executable, [sys.executable, "-m", "vtui", "--share", "--no-cache", str(trace)])
        finally:
            os._exit(127)
    return pid, fd


def read_until(fd: int, needle: bytes) -> bytes:
    """The terminal's output up to ``needle`` (the caller's deadline bounds it)."""
    seen = b""
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            raise AssertionError(f"no {needle!r} on the terminal; it showed {seen[-400:]!r}")
        try:
            seen += os.read(fd, 65536)
        except OSError:  # the pty closed: the app ended
            raise AssertionError(f"the app ended before {needle!r}: {seen[-400:]!r}") from None
    return seen


def drain_until_exit(pid: int, fd: int) -> int:
    """Keep reading the terminal (the app must not block on a full pty) until the app has exited."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                os.read(fd, 65536)
            except OSError:
                pass


@pytest.mark.parametrize("how", ["q", "SIGTERM", "SIGHUP"])
def test_the_app_leaves_no_socket_and_no_process(tmp_path, runtime_dir, how):
    trace, _ = kineto_like(tmp_path)
    with deadline(120, f"vtui --share ended by {how}"):
        pid, fd = start_app(trace, runtime_dir)
        try:
            read_until(fd, b"sharing, no agent yet")
            sock = runtime_dir / "vtui" / f"{pid}.sock"
            assert sock.exists()
            if how == "q":
                os.write(fd, b"q")
            else:
                os.kill(pid, getattr(signal, how))
            code = drain_until_exit(pid, fd)
        finally:
            os.close(fd)
    assert code == (0 if how == "q" else 128 + getattr(signal, how))
    assert not sock.exists(), f"the socket outlived the app ({how})"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
