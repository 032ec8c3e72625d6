"""The MCP server's stdin, read a JSON-RPC line at a time before the SDK sees it.

A request whose ``params`` is not an object (a string, a list) fails the SDK's validation of
the whole message, which it then drops: the client waits for a reply that never comes. Such a
request's params are replaced by an object the SDK refuses in turn, so the client gets the
JSON-RPC error it waits for (-32602, "Invalid request parameters") under its own id.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

REFUSED = {"_meta": "params must be an object"}  # _meta must be an object: the SDK answers -32602


def repaired(line: bytes) -> bytes:
    """The line as the SDK should see it: unchanged unless a request's params are no object."""
    if b'"params"' not in line:
        return line
    try:
        msg = json.loads(line)
    except ValueError:
        return line
    if isinstance(msg, dict) and "method" in msg and "id" in msg and "params" in msg \
            and not isinstance(msg["params"], dict):
        return json.dumps({**msg, "params": REFUSED}).encode() + b"\n"
    return line


class RepairedLines(io.RawIOBase):
    """``source``'s bytes, a line at a time through ``repaired``."""

    def __init__(self, source: BinaryIO) -> None:
        super().__init__()
        self.source = source
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self.pending:
            line = self.source.readline()
            if not line:
                return 0
            self.pending = repaired(line)
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


@contextlib.contextmanager
def repaired_stdin() -> Iterator[None]:
    """Meanwhile ``sys.stdin`` (what the SDK's stdio transport reads) goes through ``repaired``."""
    before = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BufferedReader(RepairedLines(before.buffer)), encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin = before
