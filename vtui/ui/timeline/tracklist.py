"""The track list: one line beside each timeline row, drawn from the same rows and scroll position.

Line y names what the timeline draws at y: a process's header, a track's first row, a blank guide
for a track's further rows. Below the last row come the hidden tracks, so they can be shown again.
"""

from __future__ import annotations

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from vtui.analysis.gpu.memory_tracks import memory_series
from vtui.present.names import cut_middle
from vtui.ui import colours
from vtui.ui.keys import bindings
from vtui.ui.timeline.follow import follow
from vtui.ui.timeline.lanes import RULER_ROWS, Timeline
from vtui.ui.timeline.pane import Change, TimelinePane
from vtui.ui.timeline.view import HEADER, PENDING, SERIES, Row, ViewState
from vtui.ui.trace_text import visible

KIND_ICON = {"thread": "", "gpu": "GPU ", "async": "async ", "counter": "ctr ", "process": "", "global": ""}

BACK = colours.SURFACE
HEAD = Style(color=colours.RULER_INK, bgcolor=colours.RULER_BG)  # beside the ruler
GROUP = Style(color=colours.FOREGROUND, bgcolor=colours.PANEL, bold=True)  # as the timeline's header rows
NAME = Style(color=colours.LABEL_INK, bgcolor=BACK)
DIM = Style(color=colours.MUTED, bgcolor=BACK)
CURSOR = Style(color=colours.DARK_INK, bgcolor=colours.PRIMARY, bold=True)
MONO = {HEAD: Style(), GROUP: Style(bold=True), NAME: Style(), DIM: Style(dim=True),
        CURSOR: Style(reverse=True, bold=True)}

Key = tuple  # ("group", group key) | ("track", track id) | ("hidden", track id): what the cursor is on


class TrackList(Widget, can_focus=True):
    """Redrawn when the track layout changes or the timeline scrolls its rows; its first line (the
    ruler's head) when the window changes or the timeline takes or loses the keys. A new
    selection leaves it be."""

    BINDINGS = bindings("tracks")

    def __init__(self, view: ViewState, timeline: Timeline, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view = view
        self.timeline = timeline
        self.cursor: Key | None = None
        self._cursor_at: tuple = (None, None, -1)  # (rows list, cursor, its line): one search per change, not per line

    def on_mount(self) -> None:
        follow(self, "track_layout", lambda: self.refresh())
        follow(self, "window", self._refresh_head)
        self.watch(self.timeline, "top", lambda: self.refresh(), init=False)
        self.watch(self.timeline, "has_focus", self._refresh_head, init=False)

    def _refresh_head(self) -> None:
        self.refresh(Region(0, 0, self.size.width, RULER_ROWS))

    # ---- what line i is ---------------------------------------------------------------------
    def row_at(self, y: int) -> Row | None:
        """The timeline row beside line ``y`` (None for the heading and the hidden tracks)."""
        index = self.timeline.top + y - RULER_ROWS
        return self.view.rows[index] if y >= RULER_ROWS and 0 <= index < len(self.view.rows) else None

    def _key_of(self, index: int) -> Key | None:
        """The cursor key of line ``index`` (0 = the first row), None where the cursor does not stop."""
        rows = self.view.rows
        if index < len(rows):
            row = rows[index]
            if row.lane == HEADER:
                return ("group", row.group)
            return ("track", row.track) if row.first else None
        hidden = self.view.hidden_tracks()
        k = index - len(rows) - 1  # after the "hidden" heading
        return ("hidden", hidden[k].id) if 0 <= k < len(hidden) else None

    def _stop_lines(self) -> np.ndarray:
        """The lines the cursor stops on, ascending: the rows' headers and track labels (found in
        the row columns: a million tracks are a million stops), then the hidden tracks."""
        lines = self.view.rows.stop_lines()
        if self.view.hidden:
            start = len(self.view.rows) + 1
            lines = np.concatenate([lines, start + np.arange(len(self.view.hidden_tracks()))])
        return lines

    def cursor_index(self) -> int:
        """The line the cursor is on (a track that became hidden is found among the hidden), else -1."""
        if self.cursor is None:
            return -1
        rows, cursor, index = self._cursor_at
        if rows is self.view.rows and cursor == self.cursor:  # rows are rebuilt (a new RowList) on every change
            return index
        kind, value = self.cursor
        if kind == "group":
            index = self.view.rows.header_line(value)
        else:  # the track's label row, else its line among the hidden
            index = self.view.rows.first_line(value)
            hidden = [t.id for t in self.view.hidden_tracks()] if index < 0 and self.view.hidden else []
            if value in hidden:
                index = len(self.view.rows) + 1 + hidden.index(value)
        self._cursor_at = (self.view.rows, self.cursor, index)
        return index

    @property
    def cursor_track(self) -> int | None:
        return self.cursor[1] if self.cursor is not None and self.cursor[0] != "group" else None

    # ---- drawing ------------------------------------------------------------------------------
    def _s(self, style: Style) -> Style:
        return MONO.get(style, style) if self.app.no_color else style

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y < RULER_ROWS:
            # The ruler's head (span shown, its anchor, the origin): the timeline beside has no label column.
            hint = " · enter fold · space hide" if self.has_focus else ""
            head = self.timeline.ruler_head() + hint
            style = CURSOR if self.timeline.has_focus else HEAD
            return Strip([Segment(head.ljust(width)[:width], self._s(style))])
        index = self.timeline.top + y - RULER_ROWS
        parts = self._line(index, width)
        if self.has_focus and self.cursor is not None and index == self.cursor_index():
            parts = [(text, CURSOR) for text, _ in parts]
        segments = [Segment(text, self._s(style)) for text, style in parts]
        return Strip(segments).adjust_cell_length(width, self._s(NAME)).crop(0, width)

    def _line(self, index: int, width: int) -> list[tuple[str, Style]]:
        v = self.view
        if index < len(v.rows):
            row = v.rows[index]
            track = v.store.tracks[row.track]
            if row.lane == HEADER:
                folded = row.group in v.folded
                count = v.group_size(row.group) if folded else 0
                return [(("▶ " if folded else "▼ ") + visible(v.group_title(row.group)), GROUP),
                        (f" ({count} track{'s' if count != 1 else ''})" if folded else "", GROUP)]
            if row.lane == SERIES and row.series == PENDING:
                return [("   mem computing…", DIM)]
            if row.lane == SERIES:
                return [("   mem " + visible(memory_series(v.store)[row.series].title), NAME)]
            if row.first:
                fold = ("▸ " if v.is_collapsed(track.id) else "▾ ") if track.lanes > v.lane_cap + 1 else "  "
                head = " " + fold + KIND_ICON.get(track.kind, "")
                count = _short(track.slice_count or track.instant_count or track.counter_count)
                # The title gives way (its middle), never the count: a count cut to "1" reads as one slice.
                title = cut_middle(visible(track.title), max(1, width - len(head) - len(count) - 1))
                return [(head + title + " ", NAME), (count, DIM)]
            if row.more:
                return [(f"   ⋯ +{row.more} rows (enter)", DIM)]
            return [("   │", DIM)]
        k = index - len(v.rows)
        hidden = v.hidden_tracks() if v.hidden else []
        if k == 0 and hidden:
            return [("hidden tracks (space shows)", DIM)]
        if 0 < k <= len(hidden):
            t = hidden[k - 1]
            return [("   " + visible(f"{t.process_title} › {t.title}"), DIM)]
        return []

    # ---- keys and mouse --------------------------------------------------------------------------
    def action_move(self, step: int) -> None:
        lines = self._stop_lines()
        if not len(lines):
            return
        here = self.cursor_index()
        if here < 0:  # the first move starts on screen, where the eye is
            k = int(np.searchsorted(lines, self.timeline.top))
            k = k if k < len(lines) else 0
        else:
            k = int(np.searchsorted(lines, here, side="right")) if step > 0 else int(np.searchsorted(lines, here)) - 1
            if not 0 <= k < len(lines):
                return
        index = int(lines[k])
        key = self._key_of(index)
        if key is not None:
            self._go(key, index)

    def _go(self, key: Key, index: int) -> None:
        self.cursor = key
        self.timeline.show_line(index)
        self.refresh()  # the cursor's line, where the rows did not scroll

    def action_toggle_track(self) -> None:
        track = self.cursor_track
        if track is None:
            self.app.notify("space shows or hides a track; enter folds a process", timeout=2)
            return
        self._change(lambda v: v.toggle_hidden(track))
        self.cursor = ("hidden" if track in self.view.hidden else "track", track)
        self._show_cursor()

    def action_pin_track(self) -> None:
        track = self.cursor_track
        if track is None or track in self.view.hidden:
            return
        self._change(lambda v: v.toggle_pinned(track))
        self._show_cursor()

    def action_fold(self) -> None:
        if self.cursor is None:
            return
        kind, value = self.cursor
        if kind == "group":
            self._change(lambda v: v.toggle_folded(value))
        elif kind == "track" and self.view.store.tracks[value].lanes > self.view.lane_cap + 1:
            self._change(lambda v: v.toggle_expanded(value))
        else:
            return
        self._show_cursor()

    def _change(self, change: Change) -> None:
        """Visibility, pinning or folding: made by the pane (the list draws the view, never writes it)."""
        self.query_ancestor(TimelinePane).act(change)

    def _show_cursor(self) -> None:
        index = self.cursor_index()
        if index >= 0:
            self.timeline.show_line(index)
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        index = self.timeline.top + event.y - RULER_ROWS
        key = self._key_of(index) if event.y >= RULER_ROWS else None
        if key is None:
            return
        self._go(key, index)
        if key[0] == "group":  # a click on a process folds or unfolds it, as in a tree
            self.action_fold()

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self.timeline.scroll_rows(3)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self.timeline.scroll_rows(-3)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


def _short(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 1000:
        return f"{n / 1e3:.0f}k"
    return str(n)
