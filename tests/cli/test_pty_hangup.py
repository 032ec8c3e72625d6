"""Closing the terminal ends vtui: the app in a real pty, the pty's master closed (what a terminal
window or a killed tmux session does), then vtui and every process it started must be gone."""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "fixtures" / "hf_llama_stack.json.gz"
LIMIT_S = 60.0  # a bound for a busy machine, not a sleep: the waits poll and return at once

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="needs a pty and /proc")


def _descendants(pid: int) -> set[int]:
    """Every living process below ``pid`` (from /proc: the loader, its decoders, a search)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for kid in children.get(todo.pop(), []):
            out.add(kid)
            todo.append(kid)
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "?"


def _read_until(fd: int, needle: bytes, pid: int) -> bytes:
    seen = b""
    deadline = time.monotonic() + LIMIT_S
    while needle not in seen:
        assert time.monotonic() < deadline, f"never drew {needle!r}: {seen[-400:]!r}"
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                raise AssertionError(f"vtui ended early: {seen[-400:]!r}") from None
    return seen


def _run_and_hang_up(keys: list[bytes], env: dict[str, str], wait_for: bytes) -> tuple[int | None, set[int]]:
    """vtui on TRACE in a pty; type ``keys``; close the master. (exit status or None, processes left)."""
    pid, master = os.forkpty()
    if pid == 0:  # the child: vtui in the pty, as a shell would start it
        try:
            os.chdir(ROOT)
            os.environ.update(env)
            os.execv(sys.executable, [sys.executable, "-m", "vtui", str(TRACE), "--no-cache"])
        finally:
            os._exit(127)
    below: set[int] = set()
    try:
        _read_until(master, b"window", pid)  # the status line: loaded and drawn
        for key in keys:
            os.write(master, key)
        if keys:
            _read_until(master, wait_for, pid)
        below = _descendants(pid)
        os.close(master)  # the terminal is gone
        master = -1
        deadline = time.monotonic() + LIMIT_S
        status = None
        while time.monotonic() < deadline:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
                break
            select.select([], [], [], 0.05)
        while time.monotonic() < deadline and any(_alive(p) for p in below):  # its children on their way out
            select.select([], [], [], 0.05)
        left = {f"{p}: {_cmdline(p)}" for p in below | {pid} if _alive(p)}
        return status, left
    finally:
        if master >= 0:
            os.close(master)
        for p in below | {pid}:  # never leave one behind, whatever failed
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def test_closing_the_terminal_under_insights_ends_the_app():
    """The report's case: i, Tab, PgDn, then the terminal killed at once (a worker thread still
    running must not keep vtui waiting for good, deaf to SIGTERM)."""
    env = {"TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    status, left = _run_and_hang_up([b"i", b"\t", b"\x1b[6~"], env, b"Insights")
    assert left == set(), left
    assert status is not None and status != 0  # ended by the hangup, not by a q
