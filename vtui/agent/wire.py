"""The socket's protocol: one JSON object per line each way, one reply per request, sizes bounded.

A request is ``{"op": NAME, ...arguments}``; a reply ``{"ok": true, ...}`` or ``{"ok": false,
"error": LINE}``. Replies are ASCII JSON (every non-ASCII character escaped), so no raw control
byte of a trace can be in them.
"""

from __future__ import annotations

import json
from typing import Any

MAX_REQUEST_BYTES = 64 * 1024  # a request carries a regex, a range or a query: far less than this
MAX_REPLY_BYTES = 1024 * 1024  # the MCP side caps its replies at 60,000 characters by default


class WireError(ValueError):
    """A line that is not a request (or reply) of this protocol; the message says why."""


def encode(message: dict[str, Any]) -> bytes:
    """``message`` as one ASCII line ending in a newline."""
    return (json.dumps(message, separators=(",", ":"), ensure_ascii=True) + "\n").encode("ascii")


def encode_reply(reply: dict[str, Any]) -> bytes:
    """A reply line; one over ``MAX_REPLY_BYTES`` becomes an error saying so (never a cut line)."""
    line = encode(reply)
    if len(line) > MAX_REPLY_BYTES:
        line = encode(error(f"the reply is {len(line):,} bytes, over the {MAX_REPLY_BYTES:,} the socket carries; "
                            "ask for less (a smaller limit or range)"))
    return line


def decode(line: bytes, limit: int = MAX_REQUEST_BYTES) -> dict[str, Any]:
    """One line as a message: a JSON object with a string ``op`` (requests) or ``ok`` (replies)."""
    if len(line) > limit:
        raise WireError(f"a line of {len(line):,} bytes, over the {limit:,} allowed")
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        raise WireError("not a JSON line") from None
    if not isinstance(message, dict):
        raise WireError("a line must be a JSON object")
    return message


def request_op(message: dict[str, Any]) -> str:
    op = message.get("op")
    if not isinstance(op, str) or not op:
        raise WireError('a request needs "op", the name of what to do')
    return op


def ok(**fields: Any) -> dict[str, Any]:
    return {"ok": True, **fields}


def error(line: str) -> dict[str, Any]:
    return {"ok": False, "error": line}
