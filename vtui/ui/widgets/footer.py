"""Textual's Footer without its memory leak (Textual 8.2.8).

Every time the bindings change (focus moves, a screen opens or closes) the Footer recomposes
and data-binds fresh FooterKeys to its ``compact`` reactive. The watcher list keeps the removed
keys — Textual prunes it only when ``compact`` changes, which it never does here — so each
focus change leaked a dozen widgets with their styles and cached lines (≈13 MiB/min in the soak).
And only the keys that fit whole are shown: Textual's cut the last one mid-word.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer as TextualFooter
from textual.widgets._footer import FooterKey


class Footer(TextualFooter):
    async def recompose(self) -> None:
        await super().recompose()
        for watchers in getattr(self, "__watchers", {}).values():  # Textual's own (private) list
            watchers[:] = [(node, callback) for node, callback in watchers if not (node._closing or node._closed)]

    def compose(self) -> ComposeResult:
        """Only the keys that fit whole (the palette key kept at the right): a key cut mid-word
        ("Pa▏") says nothing. Which keys, in the table's order, is ``footer_fit``."""
        items = list(super().compose())
        palette = [w for w in items if isinstance(w, FooterKey) and w.has_class("-command-palette")]
        keys = [w for w in items if w not in palette]
        for w in keys:  # bound to the footer's value: born with it, or each key restyles on mount (~76 before a first frame)
            if isinstance(w, FooterKey):
                w.set_reactive(FooterKey.compact, self.compact)
        width = self.size.width or self.app.size.width
        budget = width - sum(_cells(w) for w in palette) - 1
        yield from footer_fit(keys, budget)
        yield from palette

    def on_resize(self) -> None:
        self.refresh(recompose=True)


def _cells(item) -> int:
    """Cells a footer key takes: " key description " (Textual's FooterKey padding)."""
    if not isinstance(item, FooterKey):
        return 0
    return len(item.key_display) + (len(item.description) + 1 if item.description else 0) + 2


def footer_fit(items: list, budget: int) -> list:
    """The leading ``items`` whose cells add up to at most ``budget``."""
    out, used = [], 0
    for item in items:
        used += _cells(item)
        if used > budget:
            break
        out.append(item)
    return out
