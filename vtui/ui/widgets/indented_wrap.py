"""Report text (Insights) that wraps each line under its own indent: a line too long for the
screen goes on below its first word, not at the left edge, so an indented row of a table or a
hint stays readable as one entry at 80 columns."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

HANG = 2  # a continuation starts this much further in than its line


def hang_wrap(text: Text, width: int) -> Text:
    """``text`` with every line longer than ``width`` cells broken at spaces (a word longer than
    a line at the width), each continuation indented past its line's own indent. Styles kept."""
    if width <= 0:
        return text
    out: list[Text] = []
    for line in text.split("\n", allow_blank=True):
        plain = line.plain
        if cell_len(plain) <= width:
            out.append(line)
            continue
        indent = len(plain) - len(plain.lstrip(" "))
        hang = min(indent + HANG, width // 2)
        pos, avail, first = 0, width, True
        while pos < len(plain):
            end = pos + avail
            if cell_len(plain[pos:]) <= avail:
                end = len(plain)
            else:
                cut = plain.rfind(" ", pos + 1, end + 1)
                end = cut if cut > pos else end
            piece = line[pos:end]
            out.append(piece if first else Text(" " * hang) + piece)
            pos = end
            while pos < len(plain) and plain[pos] == " ":
                pos += 1
            first, avail = False, max(1, width - hang)
    return Text("\n").join(out)


class HangingText(Static):
    """A Static of report lines, wrapped with ``hang_wrap`` at its width (again on a resize)."""

    def __init__(self, text: Text | str = "", **kwargs) -> None:
        super().__init__(text, **kwargs)
        self._source = text if isinstance(text, Text) else Text(text)

    def update(self, content=None, *, layout: bool = True) -> None:  # type: ignore[override]
        content = Text("") if content is None else content
        self._source = content if isinstance(content, Text) else Text(str(content))
        super().update(content, layout=layout)

    def render(self):
        return hang_wrap(self._source, self.content_size.width)

    def get_content_height(self, container, viewport, width: int) -> int:
        return len(hang_wrap(self._source, width).split("\n", allow_blank=True))
