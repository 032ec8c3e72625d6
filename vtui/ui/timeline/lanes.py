"""The timeline: a time ruler and one line per lane of every visible track (Line API)."""

from __future__ import annotations

import math

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.reactive import var
from textual.strip import Strip
from textual.widget import Widget

from vtui.analysis.gpu.memory_tracks import memory_series
from vtui.present.names import cut_middle
from vtui.store.tracks import COUNTER
from vtui.ui import colours
from vtui.ui.ruler_times import tick_labels, tick_times
from vtui.ui.timeline.follow import follow
from vtui.ui.timeline.render import EMPTY, counter_segments, instant_segments, lane_segments, series_segments
from vtui.ui.timeline.state import Selection, Window
from vtui.ui.timeline.view import HEADER, PENDING, SERIES, ViewState
from vtui.ui.trace_text import visible
from vtui.units import format_bytes, format_duration

LABEL_WIDTH = 22
RULER_ROWS = 1
LABEL_STYLE = Style(color=colours.LABEL_INK, bgcolor=colours.BAR)
LABEL_DIM = Style(color=colours.MUTED, bgcolor=colours.BAR)
RULER_STYLE = Style(color=colours.RULER_INK, bgcolor=colours.RULER_BG)
RANGE_STYLE = Style(color=colours.DARK_INK, bgcolor=colours.RANGE_BG)  # the selected range on the ruler
MARK_STYLE = Style(color=colours.DARK_INK, bgcolor=colours.MATCH, bold=True)  # measure mark A
FOCUS_STYLE = Style(color=colours.DARK_INK, bgcolor=colours.PRIMARY, bold=True)  # the ruler's head while the keys come here
HEADER_STYLE = Style(color=colours.FOREGROUND, bgcolor=colours.PANEL, bold=True)  # a process's header row
LINK_STYLE = Style(color=colours.MATCH, bgcolor=colours.BACKGROUND, bold=True)  # the selection's flow connector
# NO_COLOR: the same distinctions by attributes alone (Textual greys or drops every colour).
MONO = {LABEL_STYLE: Style(), LABEL_DIM: Style(dim=True), RULER_STYLE: Style(), RANGE_STYLE: Style(reverse=True),
        MARK_STYLE: Style(reverse=True, bold=True), FOCUS_STYLE: Style(reverse=True, bold=True),
        HEADER_STYLE: Style(bold=True), EMPTY: Style(), LINK_STYLE: Style(bold=True)}


class Timeline(Widget, can_focus=True):
    """Draws ``ViewState``: redrawn when its pane's window, selection or track layout changes
    (``follow``); the rows on screen (``top``) are its own, and the track list beside follows them."""

    top: var[int] = var(0, init=False)  # first data row shown
    labelled: var[bool] = var(True, init=False)  # draws its own label column (the pane says: no track list beside)

    class Clicked(Message):
        def __init__(self, slice_row: int) -> None:
            self.slice_row = slice_row
            super().__init__()

    class RangeDragged(Message):
        """A mouse drag across the plot: a time range."""

        def __init__(self, t0: float, t1: float) -> None:
            self.t0, self.t1 = t0, t1
            super().__init__()

    class Wheel(Message):
        def __init__(self, zoom_in: bool, pan: bool, centre: float) -> None:
            self.zoom_in, self.pan, self.centre = zoom_in, pan, centre
            super().__init__()

    def __init__(self, view: ViewState, labelled: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.set_reactive(Timeline.labelled, labelled)
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._selected_lane: tuple[int, int] | None = None
        self._drag_from: int | None = None  # x where a mouse drag started
        self._links: list[tuple[int, int, int]] = []  # the selection's flows: (time, row, row)

    def on_mount(self) -> None:
        follow(self, "track_layout", self._layout_changed)
        follow(self, "window", self._window_changed)
        follow(self, "selection", self._selection_changed)
        self._read_selection()

    # ---- what changed ----------------------------------------------------------------------
    def _layout_changed(self) -> None:
        self._links = self.view.flow_links()  # their ends' rows moved
        self._keep_top_in_range()
        self.refresh()

    def _window_changed(self, old: Window, new: Window) -> None:
        # A new window (f, zoom, a jump) scrolls to the selection; rows scrolled away from it by
        # PgDn or the track list (hide, pin, fold) stay put, and so they do on a new range.
        if (old.t0, old.t1) != (new.t0, new.t1):
            self._reveal_selection()
        self.refresh()

    def _selection_changed(self, old: Selection, new: Selection) -> None:
        self._read_selection()
        if old.selected != new.selected:
            self._reveal_selection()
        self.refresh()

    def _read_selection(self) -> None:
        s = self.view.store.slices
        sel = self.view.selected
        self._selected_lane = (int(s.track[sel]), int(s.lane[sel])) if sel >= 0 else None
        self._links = self.view.flow_links()

    def watch_top(self) -> None:
        self.refresh()

    def watch_labelled(self) -> None:
        self.refresh()

    @property
    def mono(self) -> bool:
        """NO_COLOR is set: slices told apart by attributes and glyphs, not colours."""
        return self.app.no_color

    def _s(self, style: Style) -> Style:
        return MONO.get(style, style) if self.mono else style

    def _reveal_selection(self) -> None:
        row = self.view.row_of_selection()
        if row >= 0:
            self.show_line(row)
        else:
            self._keep_top_in_range()

    def scroll_rows(self, delta: int) -> None:
        self.top = self._in_range(self.top + delta)

    def show_line(self, index: int) -> None:
        """Scroll the least that brings line ``index`` (a row, or a line the track list adds below) into view."""
        height = self.rows_height
        top = self.top
        if index < top:
            top = index
        elif index >= top + height:
            top = index - height + 1
        self.top = self._in_range(top)

    @property
    def rows_height(self) -> int:
        return max(self.size.height - RULER_ROWS, 1)

    def _keep_top_in_range(self) -> None:
        self.top = self._in_range(self.top)

    def _in_range(self, top: int) -> int:
        return max(0, min(top, max(self.view.line_count() - self.rows_height, 0)))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.view.rows) + RULER_ROWS

    # ---- drawing -----------------------------------------------------------------------
    @property
    def label_width(self) -> int:
        """Narrow timelines give the label column less, so the plot keeps most of the width."""
        if not self.labelled:
            return 0
        return LABEL_WIDTH if self.size.width >= 100 else max(10, min(LABEL_WIDTH, self.size.width // 5))

    @property
    def plot_x(self) -> int:
        """The first column of the plot (after the label column and its rule, when drawn)."""
        return self.label_width + 1 if self.labelled else 0

    @property
    def plot_width(self) -> int:
        """The plot's cells: the timeline's real width on screen, less the label column."""
        return max(self.size.width - self.plot_x, 1)

    def time_at_x(self, x: int) -> float:
        v = self.view
        return v.t0 + (x - self.plot_x) / self.plot_width * v.span

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y < RULER_ROWS:
            return self._ruler(width)
        index = self.top + y - RULER_ROWS
        rows = self.view.rows
        if index >= len(rows):
            return Strip.blank(width, self._s(EMPTY))
        row = rows[index]
        window, selection = self.view.window, self.view.selection  # read once: a line is drawn often
        # A row's pixels depend on the row, the window, the width, and the selection only when
        # the selection lies on it: moving the selection redraws two rows, not the screen.
        selected = selection.selected if (row.track, row.lane) == self._selected_lane else -1
        links = self._links_at(index)
        cursor = self._cursor_time() if row.lane < 0 else None  # a counter row shows its value there
        key = (row, window.t0, window.t1, width, self.plot_x, selected, selection.highlight_version,
               row.group in self.view.layout.folded, links, cursor)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        label = self._label(row) if self.labelled else []
        strip = Strip(label + self._plot(row), width).crop(0, width)
        for x, glyph in links:  # the flow's connector over the row (the slice's colour kept around it)
            strip = _overlay(strip, self.plot_x + x, glyph, self._s(LINK_STYLE))
        self._cache[key] = strip
        return strip

    def _cursor_time(self) -> int | None:
        """Where counters read their value: the selected slice's start, else none."""
        sel = self.view.selected
        return int(self.view.store.slices.start_ns[sel]) if sel >= 0 else None

    def _links_at(self, index: int) -> tuple[tuple[int, str], ...]:
        """(plot column, glyph) of the selection's flow connectors crossing row ``index``: ● at the
        ends, │ between them."""
        out = []
        for t, a, b in self._links:
            lo, hi = min(a, b), max(a, b)
            x = self._x_of(t)
            if lo <= index <= hi and 0 <= x < self.plot_width:
                out.append((x, "●" if index in (a, b) else "│"))
        return tuple(out)

    def _label(self, row) -> list[Segment]:
        track = self.view.store.tracks[row.track]
        if row.lane == HEADER:
            folded = row.group in self.view.folded
            text, style = ("▶ " if folded else "▼ ") + visible(self.view.group_title(row.group)), HEADER_STYLE
        elif row.lane == SERIES and row.series == PENDING:
            text, style = "mem computing…", LABEL_DIM
        elif row.lane == SERIES:
            title = visible(memory_series(self.view.store)[row.series].title)
            text = "mem " + title if len(title) + 4 <= self.label_width else cut_middle(title, self.label_width)
            style = LABEL_STYLE
        elif row.first:
            text = visible(f"{track.process_title} › {track.title}" if track.kind != COUNTER else f"{track.title}")
            text = text if len(text) <= self.label_width else "…" + text[-(self.label_width - 1):]
            style = LABEL_STYLE
        elif row.more:  # a collapsed deep track: say what is folded and how to unfold it
            text, style = f"  +{row.more} rows (c)", LABEL_DIM
        else:
            text, style = "", LABEL_DIM
        return [Segment(text.ljust(self.label_width)[:self.label_width], self._s(style)),
                Segment("│", self._s(LABEL_DIM))]

    def _plot(self, row) -> list[Segment]:
        v = self.view
        w = self.plot_width
        track = v.store.tracks[row.track]
        if row.lane == HEADER:
            return [Segment(" " * w, self._s(EMPTY))]
        if row.lane == SERIES and row.series == PENDING:
            return [Segment("memory: computing…".ljust(w)[:w], self._s(LABEL_DIM))]
        if row.lane == SERIES:
            series = memory_series(v.store)[row.series]
            return series_segments(series.times_ns, series.values, v.t0, v.t1, w, mono=self.mono,
                                   at=self._cursor_time(), fmt=format_bytes, end=v.store.span_ns)
        if row.lane >= 0:
            return lane_segments(v.store, row.track, row.lane, v.t0, v.t1, w, v.selected, v.highlight, mono=self.mono)
        if track.kind == COUNTER:
            return counter_segments(v.store, row.track, v.t0, v.t1, w, mono=self.mono, at=self._cursor_time())
        return instant_segments(v.store, row.track, v.t0, v.t1, w, mono=self.mono)

    def _ruler(self, width: int) -> Strip:
        v = self.view
        w = self.plot_width
        step = nice_step(v.span / max(w / 14, 1))
        cells = [" "] * w
        zero = v.origin_ns  # ticks fall on round times from the origin and read from it
        ticks = tick_times(v.t0 - zero, v.t1 - zero, step)
        anchor, labels = tick_labels(ticks, step)
        for t, text in zip(ticks, labels):
            x = self._x_of(t + zero)
            if x < 0 or x + 1 + len(text) > w:  # a label cut by an edge misreads ("2s" as "2", "12ms" as "12m")
                text = ""
            for i, ch in enumerate("┼" + text):
                if 0 <= x + i < w:
                    cells[x + i] = ch
        styles = [self._s(RULER_STYLE)] * w
        if v.range is not None:  # the range as a band on the ruler
            a, b = (self._x_of(t) for t in v.range)
            for x in range(max(a, 0), min(max(b, a + 1), w)):
                styles[x] = self._s(RANGE_STYLE)
        if v.mark_a >= 0:
            x = self._x_of(int(v.store.slices.start_ns[v.mark_a]))
            if 0 <= x < w:
                cells[x], styles[x] = "A", self._s(MARK_STYLE)
        plot = [Segment(ch, st) for ch, st in zip(cells, styles)]
        if not self.labelled:  # the track list beside shows the head (ruler_head)
            return Strip(plot, width).simplify()
        head = self.ruler_head().ljust(self.label_width)[:self.label_width]
        head_style = self._s(FOCUS_STYLE if self.has_focus else LABEL_STYLE)
        return Strip([Segment(head, head_style), Segment("│", self._s(LABEL_DIM)), *plot], width).simplify()

    def ruler_head(self) -> str:
        """What the ruler's head says: the span shown, the anchor of "+offset" ticks, the origin."""
        v = self.view
        step = nice_step(v.span / max(self.plot_width / 14, 1))
        zero = v.origin_ns
        anchor, _ = tick_labels(tick_times(v.t0 - zero, v.t1 - zero, step), step)
        # Deep in a long trace the ticks differ only in far digits: the head then holds the
        # anchor time the "+offset" ticks count from.
        head = f" @{anchor}" if anchor else f" {format_duration(v.span, 2)} shown"
        if v.origin is not None:  # say what the times count from
            head = f" Δ{anchor} from {visible(v.origin[1])}" if anchor else f" Δ from {visible(v.origin[1])}"
        return head

    def _x_of(self, t: int) -> int:
        v = self.view
        return int((t - v.t0) / v.span * self.plot_width) if v.span else 0

    def on_focus(self) -> None:
        self.refresh()  # the ruler's head shows the focus (the track list's watches it); rows come from the cache

    def on_blur(self) -> None:
        self.refresh()

    # ---- mouse -------------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        index = self.top + event.y - RULER_ROWS
        if event.y < RULER_ROWS or index >= len(self.view.rows) or event.x < self.plot_x:
            return
        row = self.view.rows[index]
        if row.lane < 0:
            return
        t = self.time_at_x(event.x)
        half_cell = self.view.span / self.plot_width / 2
        lo, hi = self.view.store.index.lane_window(row.track, row.lane, int(t - half_cell), int(t + half_cell))
        if hi > lo:
            self.post_message(self.Clicked(lo))

    def on_mouse_down(self, event: events.MouseDown) -> None:
        if event.x >= self.plot_x:
            self._drag_from = event.x
            self.capture_mouse()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        start, self._drag_from = self._drag_from, None
        self.release_mouse()
        if start is not None and abs(event.x - start) >= 2:  # a drag, not a click
            self.post_message(self.RangeDragged(self.time_at_x(start), self.time_at_x(event.x)))

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.post_message(self.Wheel(False, event.shift, self.time_at_x(event.x)))

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.post_message(self.Wheel(True, event.shift, self.time_at_x(event.x)))


def _overlay(strip: Strip, x: int, glyph: str, style: Style) -> Strip:
    """``strip`` with the cell at ``x`` replaced by ``glyph``."""
    if not 0 <= x < strip.cell_length:
        return strip
    left, _, right = strip.divide([x, x + 1, strip.cell_length])
    return Strip.join([left, Strip([Segment(glyph, style)], 1), right])


def nice_step(raw: float) -> float:
    """1/2/5 × 10^k at or above ``raw`` (ns), for ruler ticks."""
    if raw <= 1:
        return 1
    exp = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * exp >= raw:
            return m * exp
    return 10 * exp
