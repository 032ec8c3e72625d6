"""An MCP reply's paging: one named list of a result served a page at a time, the reply never
over the character cap.

The list paged is the one the tool names (``rows`` for a query: never ``columns`` or ``types``,
whatever their length) or the one the agent asks for by its dotted path (``roofline.ops``);
other lists too long to fit beside it are cut to their first items, and the ``page`` note names
each with its total, so the agent can page it next. A reply that cannot fit even so is an error
that says how to narrow it, never a cut piece of JSON.
"""

from __future__ import annotations

import json
from typing import Any

from vtui.errors import UsageError

DEFAULT_MAX_CHARS = 60_000  # a reply at most (``VTUI_MCP_MAX_CHARS`` changes it)
DEFAULT_LIMIT = 100
NARROW = "narrow it (range, track, depth, min_pct, a LIMIT or fewer columns) or ask for fewer items"


class ReplyTooBig(UsageError):
    """A result that no page of can fit in a reply."""


def page(doc: Any, offset: int = 0, limit: int = DEFAULT_LIMIT, max_chars: int = DEFAULT_MAX_CHARS,
         more_after: bool = False, path: str | None = None, default: str | None = None) -> str:
    """``doc`` as JSON text of at most ``max_chars``: the list at ``path`` (dotted keys; None:
    the list at ``default`` when the result has one, else the doc itself when it is a list, else
    its top-level list with the most items) cut to
    ``limit`` items from ``offset``, with a ``page`` note saying what is left. While the text is
    over the cap, the longest of the other lists is cut (named in ``page.cut`` with its total)
    or the page's limit halved, whichever is longer. ``more_after``: the producer already cut
    the list. Raises ``ReplyTooBig`` when one item alone cannot fit, a UsageError for a
    ``path`` that is no list of the result."""
    offset, limit = max(offset, 0), max(limit, 1)
    keys = _path_of(doc, path or (default if isinstance(_get(doc, tuple((default or "").split("."))), list) else None))
    items = _get(doc, keys)
    if not isinstance(items, list):
        text = compact_json(doc)
        if len(text) <= max_chars:
            return text
        raise ReplyTooBig(f"the result is {len(text):,} characters, over the {max_chars:,} a reply may hold: {NARROW}")
    others = {k: len(v) for k, v in _lists(doc) if k != keys}
    kept: dict[tuple[str, ...], int] = {}  # other lists cut: items kept
    while True:
        chunk = items[offset:offset + limit]
        left = offset + len(chunk) < len(items) or more_after
        note: dict[str, Any] = {"list": ".".join(keys) or "(result)", "offset": offset, "limit": limit,
                                "returned": len(chunk), "total": None if more_after else len(items),
                                "next_offset": offset + len(chunk) if left else None}
        if kept:
            note["cut"] = {".".join(k): {"returned": n, "total": others[k]} for k, n in sorted(kept.items())}
            note["cut_hint"] = "pass list_path with a name from cut to page that list"
        body = doc
        for k, n in kept.items():
            body = _put(body, k, _get(doc, k)[:n])
        body = {"items": chunk, "page": note} if not keys else {**_put(body, keys, chunk), "page": note}
        text = compact_json(body)
        if len(text) <= max_chars:
            return text
        chunk_len = len(compact_json(chunk))
        sizes = {k: len(compact_json(_get(doc, k)[:kept.get(k, others[k])])) for k in others
                 if kept.get(k, others[k]) > 0}
        longest = max(sizes, key=lambda k: sizes[k], default=None)
        if longest is not None and (sizes[longest] >= chunk_len or limit == 1):
            kept[longest] = kept.get(longest, others[longest]) // 2
        elif limit > 1:
            limit = max(1, limit // 2)
        else:
            raise ReplyTooBig(f"one item of {note['list']} is {chunk_len:,} characters, over the {max_chars:,} "
                              f"a reply may hold: {NARROW}")


def compact_json(value: Any) -> str:
    """JSON without indentation (an agent pays per character), every non-ASCII character escaped,
    so no raw control byte (C0, DEL, C1) of the trace is in it and the data round-trips."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)


def list_paths(doc: Any) -> list[str]:
    """The dotted paths of every list in ``doc`` reached through objects (not inside lists)."""
    return [".".join(k) for k, _v in _lists(doc)]


def _path_of(doc: Any, path: str | None) -> tuple[str, ...]:
    if path:
        keys = tuple(path.split("."))
        if not isinstance(_get(doc, keys), list):
            names = ", ".join(list_paths(doc)[:40]) or "none"
            raise UsageError(f"this result has no list {path!r} to page (its lists: {names})")
        return keys
    if not isinstance(doc, dict):
        return ()
    tops = [(len(v), k) for k, v in doc.items() if isinstance(v, list) and v]
    return (max(tops)[1],) if tops else ()


def _get(doc: Any, keys: tuple[str, ...]) -> Any:
    for k in keys:
        if not isinstance(doc, dict) or k not in doc:
            return None
        doc = doc[k]
    return doc


def _put(doc: dict, keys: tuple[str, ...], value: Any) -> dict:
    """A copy of ``doc`` (only along ``keys``) with ``value`` there."""
    head, *rest = keys
    return {**doc, head: _put(doc[head], tuple(rest), value) if rest else value}


def _lists(doc: Any, at: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], list]]:
    if not isinstance(doc, dict):
        return []
    out: list[tuple[tuple[str, ...], list]] = []
    for k, v in doc.items():
        if isinstance(v, list):
            out.append(((*at, k), v))
        elif isinstance(v, dict):
            out.extend(_lists(v, (*at, k)))
    return out
