"""Draw one timeline row (a lane of slices, instants, or a counter) as Rich segments.

Pure functions of the store and the view window, so the benchmark can time them alone.
Per row the cost follows the width on screen, not the trace: numpy picks, for each cell,
the slice that covers the cell's start (or the next one starting inside it), and a Python
loop runs only over runs of equal cells.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, MutableMapping
from functools import lru_cache

import numpy as np
from rich.segment import Segment
from rich.style import Style

from vtui.present.bars import EIGHTHS, SPARK
from vtui.store.store import TraceStore
from vtui.store.tracks import GPU
from vtui.ui import colours
from vtui.ui.trace_text import visible
from vtui.units import format_duration

PALETTE = list(colours.SLICES)
EMPTY = Style(bgcolor=colours.BACKGROUND)
SELECTED = Style(bgcolor=colours.SELECTED_BG, color=colours.SELECTED_INK, bold=True)
DIMMED = colours.DIMMED_SLICE


@lru_cache(maxsize=4096)
def colour_of(name: str) -> str:
    """Stable across runs and machines (crc32, not Python's salted hash)."""
    return PALETTE[zlib.crc32(name.encode("utf-8", "replace")) % len(PALETTE)]


DARK_INK, LIGHT_INK = colours.DARK_INK, colours.LIGHT_INK


def luminance(colour: str) -> float:
    """Relative luminance (WCAG) of ``#rrggbb``: 0 black … 1 white."""
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


@lru_cache(maxsize=64)
def ink_for(colour: str) -> str:
    """Label colour for a block: dark on light blocks, light on dark ones, whichever contrasts more
    (so yellow or pale blocks stay readable, also once a 16/256-colour terminal rounds the colours)."""
    lum = luminance(colour)
    dark, light = (lum + 0.05) / (luminance(DARK_INK) + 0.05), (luminance(LIGHT_INK) + 0.05) / (lum + 0.05)
    return DARK_INK if dark > light else LIGHT_INK


@lru_cache(maxsize=4096)
def _style(colour: str, selected: bool) -> Style:
    if selected:
        return SELECTED
    return Style(bgcolor=colour, color=ink_for(colour))


# NO_COLOR (no-color.org): no colours at all, so neighbours differ by attributes and glyphs.
# Slices alternate between a solid reverse-video block and a shaded fill; GPU blocks are underlined;
# the selection is reverse + bold with ▶ ◀ at its ends; slices outside a highlight are dim, dotted or light-shaded.
MONO_SOLID, MONO_SHADE = Style(reverse=True), Style(bold=True)
MONO_GPU_SOLID, MONO_GPU_SHADE = Style(reverse=True, underline=True), Style(bold=True, underline=True)
MONO_SELECTED = Style(reverse=True, bold=True)
MONO_DIMMED = Style(dim=True)
SHADE, LIGHT, DOTS = "▒", "░", "·"


def honour_no_color(environ: MutableMapping[str, str] = os.environ) -> None:
    """no-color.org: only a non-empty NO_COLOR turns colour off; Textual reacts to an empty one too."""
    if environ.get("NO_COLOR") == "":
        del environ["NO_COLOR"]


def _mono_look(shade: bool, gpu: bool, selected: bool, dim: bool) -> tuple[Style, str]:
    """(style, fill glyph) of a slice in NO_COLOR mode; the fill surrounds the label."""
    if selected:
        return MONO_SELECTED, " "
    if dim:
        return MONO_DIMMED, LIGHT if shade else DOTS
    if shade:
        return (MONO_GPU_SHADE if gpu else MONO_SHADE), SHADE
    return (MONO_GPU_SOLID if gpu else MONO_SOLID), " "


def _fill(text: str, glyph: str) -> str:
    """A centred label's padding drawn with ``glyph``, one space kept either side of the words."""
    words = text.strip()
    if not words:
        return glyph * len(text)
    left = len(text) - len(text.lstrip())
    right = len(text) - left - len(words)
    return (glyph * (left - 1) + " " if left else "") + words + (" " + glyph * (right - 1) if right else "")


def cell_slices(start: np.ndarray, end: np.ndarray, t0: float, dt: float, width: int) -> np.ndarray:
    """For each cell, the index (into start/end) of the slice drawn there, or -1.

    A cell shows the slice covering its left edge, else the first one starting inside it,
    so a slice narrower than a cell is never invisible.
    """
    edges = t0 + dt * np.arange(width + 1)
    n = len(start)
    if not n:
        return np.full(width, -1, dtype=np.int64)
    k = np.searchsorted(end, edges[:-1], side="right")  # first slice ending after the left edge
    kc = np.minimum(k, n - 1)
    ok = (k < n) & (start[kc] < edges[1:])
    return np.where(ok, kc, -1)


def lane_segments(
    store: TraceStore, track: int, lane: int, t0: int, t1: int, width: int, selected: int = -1,
    highlight: np.ndarray | None = None, mono: bool = False,
) -> list[Segment]:
    """Segments of one lane of slices over [t0, t1] in ``width`` cells.

    ``highlight`` (a bool per slice) keeps the highlighted slices in colour and dims the rest.
    ``mono`` (NO_COLOR): styles without any colour, see ``_mono_look``.
    """
    if width <= 0:
        return []
    empty = Style() if mono else EMPTY
    lo, hi = store.index.lane_window(track, lane, t0, t1)
    if hi <= lo:
        return [Segment(" " * width, empty)]
    s = store.slices
    start = s.start_ns[lo:hi]
    end = s.end_ns[lo:hi]
    dt = (t1 - t0) / width
    cells = cell_slices(start, end, t0, dt, width)
    if lo <= selected < hi:  # the selection always shows, even where a neighbour wins the cell
        a = int(max(0, (s.start_ns[selected] - t0) // dt)) if dt > 0 else 0
        b = int(min(width, max(a + 1, -(-(s.end_ns[selected] - t0) // dt)))) if dt > 0 else width
        if a < width and b > 0:
            cells[a:b] = selected - lo
    out: list[Segment] = []
    change = np.flatnonzero(np.diff(cells)) + 1
    firsts = np.concatenate(([0], change))
    bounds = [*firsts.tolist(), width]
    # One numpy gather per row, then plain Python values: indexing numpy scalars per block
    # (~100 ns each, eight per block) was most of a full repaint at whole-trace zoom.
    block = cells[firsts]
    at = np.maximum(block, 0)
    rows = (lo + at).tolist()
    blocks = block.tolist()
    name_ids = s.name_id[lo + at].tolist()
    durs = (end[at] - start[at]).tolist()
    ends = end[at].tolist()
    lit = highlight[lo + at].tolist() if highlight is not None else None
    strings = store.strings
    gpu = store.tracks[track].kind == GPU
    last_shade, last_end = None, -1  # the previous block's look, and where it ended (mono)
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        k = blocks[i]
        if k < 0:
            out.append(Segment(" " * (b - a), empty))
            continue
        row = rows[i]
        name = visible(strings[name_ids[i]])  # trace text: no control characters reach the terminal
        dim = lit is not None and not lit[i]
        n = b - a
        text = _label(name, durs[i], n)
        if mono:
            # Alternate by slice (stable while panning); flip where a hidden slice between two
            # drawn ones would give touching neighbours the same look.
            shade = row % 2 == 1
            if last_end == a and shade == last_shade:
                shade = not shade
            last_shade, last_end = shade, b
            style, glyph = _mono_look(shade, gpu, row == selected, dim)
            if row == selected:
                text = "▶" if n == 1 else "▶" + text[1:-1] + "◀"
            out.append(Segment(_fill(text, glyph), style))
            continue
        style = _style(DIMMED if dim else colour_of(name), row == selected)
        # Sub-cell right edge: a partly covered last cell gets an eighth block.
        frac = (float(ends[i]) - (t0 + dt * (b - 1))) / dt if dt > 0 else 1.0
        if n >= 2 and 0 < frac < 1 and b < width:  # (the next cell is another block's)
            out.append(Segment(text[: n - 1], style))
            out.append(Segment(EIGHTHS[max(1, int(frac * 8))], _edge_style(style)))
        else:
            out.append(Segment(text, style))
    return out


@lru_cache(maxsize=4096)
def _edge_style(style: Style) -> Style:
    """The eighth block after a bar: the bar's colour as ink on the empty background."""
    return Style(color=style.bgcolor.name if style.bgcolor else None, bgcolor=EMPTY.bgcolor)


def _label(name: str, dur: int, cells: int) -> str:
    """Text inside a bar: the name (and duration when there is room), cut to fit."""
    if cells <= 2:
        return " " * cells
    full = f"{name} {format_duration(dur, 1)}"
    text = full if len(full) + 2 <= cells else name
    if len(text) + 2 > cells:
        text = text[: cells - 3] + "…" if cells > 4 else ""
    return text.center(cells)[:cells]


def instant_segments(store: TraceStore, track: int, t0: int, t1: int, width: int, mono: bool = False) -> list[Segment]:
    inst = store.instants
    lo = int(np.searchsorted(inst.track, track, side="left"))
    hi = int(np.searchsorted(inst.track, track, side="right"))
    ts = inst.ts_ns[lo:hi]
    a, b = np.searchsorted(ts, [t0, t1 + 1])
    cells = np.zeros(width, dtype=bool)
    if b > a and t1 > t0:
        idx = ((ts[a:b] - t0) * width // max(t1 - t0, 1)).clip(0, width - 1)
        cells[idx] = True
    return _runs(cells, "◆", Style() if mono else Style(color=colours.MATCH, bgcolor=EMPTY.bgcolor))


def counter_segments(store: TraceStore, track: int, t0: int, t1: int, width: int, mono: bool = False,
                     at: int | None = None) -> list[Segment]:
    """A ``C`` counter track as a filled line (see ``series_segments``), ending where the trace ends."""
    c = store.counters
    lo = int(np.searchsorted(c.track, track, side="left"))
    hi = int(np.searchsorted(c.track, track, side="right"))
    return series_segments(c.ts_ns[lo:hi], c.value[lo:hi], t0, t1, width, mono, at, end=store.span_ns)


def series_segments(ts: np.ndarray, val: np.ndarray, t0: int, t1: int, width: int, mono: bool = False,
                    at: int | None = None, fmt: Callable[[float], str] | None = None,
                    end: int | None = None) -> list[Segment]:
    """A series (sorted times, values) as a filled line, 0 to the maximum in ▁…█, and its value at
    ``at`` (the cursor: the selected slice's start) written at the row's right end, by ``fmt``
    (default: a plain number).

    A cell shows the highest level the series holds inside it (the level carried in at its left
    edge, or any sample within), so a peak narrower than a cell is never invisible. Cells that
    start at or after ``end`` (the trace's end: compare mode's window can reach past it) stay
    blank, as slices do."""
    if not len(ts) or t1 <= t0:
        return [Segment(" " * width, Style() if mono else EMPTY)]
    edges = t0 + np.arange(width + 1) * (t1 - t0) / width
    carried = np.searchsorted(ts, edges[:-1], side="right") - 1  # the sample in force at the left edge
    lo, hi = np.searchsorted(ts, edges[:-1], side="left"), np.searchsorted(ts, edges[1:], side="left")
    value = np.where(carried >= 0, val[np.maximum(carried, 0)], -np.inf).astype(np.float64)
    inside = np.flatnonzero(hi > lo)
    if len(inside):  # the max of each cell's own samples: one reduceat over (lo, hi) pairs
        bounds = np.stack([lo[inside], hi[inside]], axis=1).ravel()
        peaks = np.maximum.reduceat(np.append(val, -np.inf).astype(np.float64), bounds)[::2]
        value[inside] = np.maximum(value[inside], peaks)
    # Heights from 0 (or the minimum, when below 0) to the maximum, as Perfetto scales a counter:
    # a level that stays near 1.9 GiB is drawn high, not as the floor of its own small range.
    vmin, vmax = min(float(val.min()), 0.0), float(val.max())
    span = (vmax - vmin) or 1.0
    seen = np.isfinite(value)
    level = np.where(seen, ((np.where(seen, value, vmin) - vmin) / span * 7).round().astype(int) + 1, 0)
    if end is not None:
        level[edges[:-1] >= end] = 0
    levels = " " + SPARK  # level 0: no sample yet
    text = "".join(levels[v] for v in level.tolist())
    style = Style() if mono else Style(color=colours.COUNTER, bgcolor=EMPTY.bgcolor)
    if at is not None:
        k_at = int(np.searchsorted(ts, at, side="right")) - 1
        if k_at >= 0:
            label = f" {fmt(float(val[k_at])) if fmt else format(float(val[k_at]), ',.6g')} "
            if len(label) + 2 <= width:
                return [Segment(text[: width - len(label)], style),
                        Segment(label, Style(bold=True) if mono else Style(color=colours.DARK_INK,
                                                                            bgcolor=colours.COUNTER))]
    return [Segment(text, style)]


def _runs(mask: np.ndarray, glyph: str, style: Style) -> list[Segment]:
    text = "".join(glyph if m else " " for m in mask.tolist())
    return [Segment(text, style)]
