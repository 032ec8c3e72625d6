"""Keys as people read them (``.`` not "full stop") and the help text built from bindings."""

from __future__ import annotations

from textual.binding import Binding
from textual.keys import format_key

_ARROWS = {"left": "←", "right": "→", "up": "↑", "down": "↓", "pageup": "PgUp", "pagedown": "PgDn",
           "escape": "esc", "enter": "enter", "tab": "tab", "space": "space"}


def key_glyph(key: str) -> str:
    """``"full_stop"`` -> ``"."``; ``"shift+left"`` -> ``"shift+←"``; ``"f1"`` -> ``"F1"``."""
    *mods, last = key.split("+")
    name = _ARROWS.get(last) or (last.upper() if last[:1] == "f" and last[1:].isdigit() else format_key(last))
    return "+".join([*mods, name])


def keys_glyphs(keys: str) -> str:
    """A binding's comma-separated keys: ``"question_mark,f1"`` -> ``"? F1"``."""
    return " ".join(key_glyph(k.strip()) for k in keys.split(","))


def binding_rows(bindings: list) -> list[tuple[str, str]]:
    return [(keys_glyphs(b.key), b.description) for b in bindings if isinstance(b, Binding) and b.description]


HelpSection = tuple[str, list[tuple[str, str]]]

EVERYWHERE: list[tuple[str, str]] = [
    ("tab shift+tab", "Move focus between panes (the focused one is outlined in blue)"),
    ("ctrl+p", "Command palette: every action, found by what you type (step, gpu, export…)"),
    ("? F1", "This help (esc closes; ↑ ↓ PgUp PgDn scroll)"),
]
