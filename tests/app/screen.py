"""Read what the app draws: the screen as text and background colours, cell by cell.

Rather than assert ``ViewState`` fields, the app's tests read the composed screen (what the
terminal would show), so a widget drawn off screen or cut by its neighbour is seen as the user
sees it."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len


@dataclass
class Screen:
    text: list[str]  # one string per screen line, one character per cell
    bg: list[list[str | None]]  # the background colour of every cell (None: the terminal's)

    @property
    def width(self) -> int:
        return len(self.text[0]) if self.text else 0

    def find(self, needle: str) -> list[int]:
        """Lines holding ``needle``."""
        return [y for y, line in enumerate(self.text) if needle in line]


def read_screen(app) -> Screen:
    """The current screen of ``app`` (inside ``run_test``), as the compositor would write it."""
    text: list[str] = []
    bg: list[list[str | None]] = []
    for strip in app.screen._compositor.render_strips():
        chars: list[str] = []
        colours: list[str | None] = []
        for seg in strip:
            colour = seg.style.bgcolor.get_truecolor().hex if seg.style and seg.style.bgcolor else None
            for ch in seg.text:
                chars.append(ch)
                colours.append(colour)
                if cell_len(ch) == 2:  # a wide character takes two cells
                    chars.append("")
                    colours.append(colour)
        text.append("".join(chars))
        bg.append(colours)
    return Screen(text, bg)


_UNIT = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def tick_time(label: str) -> float:
    """``250ms`` / ``1.2s`` / ``0ns`` as ns (written here, apart from the app's own parser)."""
    for unit in sorted(_UNIT, key=len, reverse=True):
        if label.endswith(unit):
            return float(label[: -len(unit)]) * _UNIT[unit]
    raise ValueError(label)


def ruler_ticks(line: str) -> list[tuple[int, float]]:
    """(column, time) of every ``┼label`` tick on a ruler line."""
    out = []
    for x, ch in enumerate(line):
        if ch != "┼":
            continue
        label = ""
        for c in line[x + 1:]:
            if c in "┼ │":
                break
            label += c
        try:
            out.append((x, tick_time(label)))
        except ValueError:
            continue  # a label cut by the right edge
    return out
