"""Trace text made safe to draw: control characters shown as visible escapes.

Names, categories, args and file names come from the trace and may hold ESC/OSC sequences
(retitle or clear the terminal, write the clipboard). Everything the app draws from a trace goes
through ``visible`` and reaches widgets as ``Text`` (never markup).
"""

from __future__ import annotations

from functools import lru_cache

from rich.text import Text

from vtui.safe_text import escape_controls


@lru_cache(maxsize=8192)
def visible(text: str) -> str:
    """C0, DEL and C1 controls as visible ``\\xNN`` (the CLI's rule, cached per name)."""
    return escape_controls(text)


def plain(text: str, style: str = "") -> Text:
    """Trace text as a ``Text``: escaped, never parsed as markup."""
    return Text(visible(text), style=style)
