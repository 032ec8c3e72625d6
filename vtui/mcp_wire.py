"""The MCP server's stdin, read a JSON-RPC line at a time before the SDK sees it.

The SDK drops, without a reply, every message it cannot validate: a line that is no JSON, a JSON
value that is no object (a batch list, a number), a request whose ``id`` is no string or integer,
one without ``"jsonrpc": "2.0"``, or whose ``params`` is no object. A client waiting on such a
request waits for ever. So:

- a request whose ``params`` is no object gets its params replaced by an object the SDK refuses in
  turn, so the client gets the JSON-RPC error it waits for (-32602) under its own id;
- the other cases never reach the SDK: they are answered here as JSON-RPC 2.0 asks — -32700
  (parse error) or -32600 (invalid request), under the request's id where it has a usable one, else
  under ``null``. A notification (no ``id``) is never answered.

Replies go to a duplicate of the stdout descriptor taken before the SDK starts (mcp 2 moves fd 1
off the wire while it serves), each in one ``write`` of a few hundred bytes: a pipe keeps writes
under ``PIPE_BUF`` whole, so a reply never tears one of the SDK's lines.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

REFUSED = {"_meta": "params must be an object"}  # _meta must be an object: the SDK answers -32602
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _usable_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _error(id_: object, code: int, message: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}).encode() + b"\n"


def triage(line: bytes) -> tuple[bytes, bytes]:
    """(what the SDK should see, what to answer at once); either may be empty."""
    if not line.strip():
        return line, b""
    try:
        msg = json.loads(line)
    except ValueError:
        return b"", _error(None, PARSE_ERROR, "Parse error: the line is no JSON")
    if not isinstance(msg, dict):
        return b"", _error(None, INVALID_REQUEST, "Invalid Request: a message must be one JSON object (no batches)")
    if "method" not in msg:
        return line, b""  # a client's reply to the server: the SDK's business
    if "id" not in msg:
        return line, b""  # a notification: never answered, whatever it holds
    id_ = msg["id"]
    if not _usable_id(id_):
        return b"", _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    if msg.get("jsonrpc") != "2.0" or not isinstance(msg["method"], str):
        return b"", _error(id_, INVALID_REQUEST, 'Invalid Request: needs "jsonrpc": "2.0" and a string method')
    if "params" in msg and not isinstance(msg["params"], dict):
        return json.dumps({**msg, "params": REFUSED}).encode() + b"\n", b""
    return line, b""


class RepairedLines(io.RawIOBase):
    """``source``'s bytes, a line at a time through ``triage``; answers go to ``replies``."""

    def __init__(self, source: BinaryIO, replies: BinaryIO | None = None) -> None:
        super().__init__()
        self.source = source
        self.replies = replies
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.pending:
            line = self.source.readline()
            if not line:
                return 0
            self.pending, answer = triage(line)
            if answer and self.replies is not None:
                self.replies.write(answer)
                self.replies.flush()
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


@contextlib.contextmanager
def repaired_stdin() -> Iterator[None]:
    """Meanwhile ``sys.stdin`` (what the SDK's stdio transport reads) goes through ``triage``, and
    its answers go to the wire the SDK writes to."""
    before = sys.stdin
    try:
        wire: BinaryIO = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    except (OSError, ValueError, io.UnsupportedOperation):  # no descriptor (a test's captured stdout)
        wire = sys.stdout.buffer
    sys.stdin = io.TextIOWrapper(io.BufferedReader(RepairedLines(before.buffer, wire)), encoding="utf-8")
    try:
        yield
    finally:
        sys.stdin = before
        if wire is not sys.stdout.buffer:
            wire.close()
