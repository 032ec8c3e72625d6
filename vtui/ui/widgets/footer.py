"""Textual's Footer without its memory leak (Textual 8.2.8).

Every time the bindings change (focus moves, a screen opens or closes) the Footer recomposes
and data-binds fresh FooterKeys to its ``compact`` reactive. The watcher list keeps the removed
keys — Textual prunes it only when ``compact`` changes, which it never does here — so each
focus change leaked a dozen widgets with their styles and cached lines (≈13 MiB/min in the soak).
"""

from __future__ import annotations

from textual.widgets import Footer as TextualFooter


class Footer(TextualFooter):
    async def recompose(self) -> None:
        await super().recompose()
        for watchers in getattr(self, "__watchers", {}).values():  # Textual's own (private) list
            watchers[:] = [(node, callback) for node, callback in watchers if not (node._closing or node._closed)]
