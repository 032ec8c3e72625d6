"""A scrollbar whose thumb fills whole cells.

Textual draws the thumb's ends as partial blocks (``▁…▇``) for a smoother look; on a screen of
text they read as stray glyphs at the right edge (and a screen capture shows them as text).
"""

from __future__ import annotations

from rich.color import Color
from rich.segment import Segment, Segments
from rich.style import Style
from textual.scrollbar import ScrollBarRender
from textual.widget import Widget


class WholeCellScrollBar(ScrollBarRender):
    @classmethod
    def render_bar(cls, size: int = 25, virtual_size: float = 50, window_size: float = 20, position: float = 0,
                   thickness: int = 1, vertical: bool = True, back_color: Color = Color.default(),
                   bar_color: Color = Color.default()) -> Segments:  # (Textual passes both)
        blank = " " * (thickness if vertical else 1)
        size = int(size)
        segments = [Segment(blank, Style(bgcolor=back_color, meta={"@mouse.down": "scroll_up"}))] * size
        if window_size and size and virtual_size and size != virtual_size and virtual_size > window_size:
            thumb = min(size, max(1, round(window_size * size / virtual_size)))
            top = round((size - thumb) * min(max(position / (virtual_size - window_size), 0.0), 1.0))
            lower = Segment(blank, Style(bgcolor=back_color, meta={"@mouse.down": "scroll_down"}))
            grab = Segment(blank, Style(color=bar_color, reverse=True, meta={"@mouse.down": "grab"}))
            segments = segments[:top] + [grab] * thumb + [lower] * (size - top - thumb)
        if vertical:
            return Segments(segments, new_lines=True)
        return Segments((segments + [Segment.line()]) * thickness, new_lines=False)


def whole_cell_scrollbars(widget: Widget) -> None:
    """``widget`` and the scrollable widgets inside it draw their scrollbars in whole cells."""
    for w in [widget, *widget.query("*")]:
        if w.is_scrollable:
            w.vertical_scrollbar.renderer = WholeCellScrollBar
            w.horizontal_scrollbar.renderer = WholeCellScrollBar
