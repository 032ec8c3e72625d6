"""Trace text made safe to draw: control characters shown as visible escapes.

Names, categories, args and file names come from the trace and may hold ESC/OSC sequences
(retitle or clear the terminal, write the clipboard). Everything the app draws from a trace goes
through ``visible`` and reaches widgets as ``Text`` (never markup).
"""

from __future__ import annotations

import re
from functools import lru_cache

from rich.text import Text

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@lru_cache(maxsize=8192)
def visible(text: str) -> str:
    """``"a\\x1b]0;x\\x07"`` -> ``"a\\\\x1b]0;x\\\\x07"`` (C0, DEL and C1 controls escaped)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text) if _CONTROL.search(text) else text


def plain(text: str, style: str = "") -> Text:
    """Trace text as a ``Text``: escaped, never parsed as markup."""
    return Text(visible(text), style=style)
