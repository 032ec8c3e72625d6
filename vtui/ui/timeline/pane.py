"""One trace's timeline as one unit: its ``ViewState``, the keys that move it, the mouse, the search
job and how its errors are told. The main app mounts one (``vtui.ui.timeline.main_view.MainPane``), compare
mode two (``vtui.ui.screens.compare.TracePane``), as memray's ``TUI`` screen and posting's ``MainScreen``.

The view is three values (``vtui.ui.timeline.state``): the window, the selection and the track
layout. The pane holds each in a reactive, set again after every change (``act``); a change
replaces only the values it touches, so a widget watching one of them (``follow``) redraws when
that one changed, and no action lists the widgets to tell. The widgets read the view and never
write it: what they change goes through the pane. The pane's bindings act only while the focus is
inside it: under Insights, help or a prompt they are out of the focus chain, with no screen counting.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.reactive import var
from textual.widgets import Static

from vtui.analysis.slices.search import SearchResult
from vtui.store.slicetime import time_range
from vtui.store.store import TraceStore
from vtui.ui.screens.computed import Jump
from vtui.ui.screens.modals import PromptScreen
from vtui.ui.timeline.follow import follow
from vtui.ui.timeline.goto import HINT, parse_target
from vtui.ui.timeline.lanes import Timeline
from vtui.ui.timeline.searching import SearchJob
from vtui.ui.timeline.state import Selection, TrackLayout, Window
from vtui.ui.timeline.view import ViewState
from vtui.ui.trace_text import visible

__all__ = ["PAN_STEP", "WHEEL_PAN", "ZOOM_STEP", "TimelinePane", "ViewText", "follow"]

ZOOM_STEP = 0.6  # w: the window shrinks to 60% (s: back)
PAN_STEP = 0.2  # a / d: a fifth of the window
WHEEL_PAN = PAN_STEP / 2  # shift+wheel: finer than a key

Change = Callable[[ViewState], object]


class ViewText(Static):
    """A line drawn from the pane's view (compare mode's title and details): ``text()`` again on
    every change of the values it ``shows`` ("window", "selection", "track_layout", "searching")."""

    def __init__(self, text: Callable[[], Any], shows: tuple[str, ...], **kwargs: Any) -> None:
        super().__init__(text(), markup=False, **kwargs)
        self.text_of = text
        self.shows = shows

    def on_mount(self) -> None:
        for name in self.shows:
            follow(self, name, lambda: self.update(self.text_of()))


class TimelinePane(Vertical):
    """The view of one trace and its keys; subclasses compose the widgets around the ``Timeline``."""

    # The view's values, set again after every change; each is a new object only when it changed.
    window: var[Window] = var(Window(), init=False)
    selection: var[Selection] = var(Selection(), init=False)
    track_layout: var[TrackLayout] = var(TrackLayout(), init=False)  # (``layout`` is Textual's)
    searching: var[str | None] = var(None, init=False)  # the pattern of the search running ("searching…")

    def __init__(self, store: TraceStore, name: str, scale_ns: int = 0, memory_rows: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.name_shown = name  # the trace's file name, for titles
        self.view = ViewState(store, scale_ns=scale_ns, memory_rows=memory_rows)
        self.search = SearchJob()  # at most one running; its pattern says "searching…"
        self.capture: Path | None = None  # vLLM's graph-capture trace of the same run (Insights reads it)
        self.set_reactive(TimelinePane.window, self.view.window)
        self.set_reactive(TimelinePane.selection, self.view.selection)
        self.set_reactive(TimelinePane.track_layout, self.view.layout)

    # ---- the one way a view changes ---------------------------------------------------------
    def act(self, change: Change) -> None:
        """``change(view)``, then its values into the reactives (``publish``)."""
        try:  # what "narrower than a cell" means to a jump: the plot's width on screen now
            self.view.cells = self.timeline.plot_width
        except NoMatches:
            pass
        change(self.view)
        self.publish()

    def publish(self) -> None:
        """The view's values into the reactives: the widgets watching one that was replaced redraw.
        The layout first: a new selection or window is drawn on the rows it goes with."""
        self.track_layout = self.view.layout
        self.window = self.view.window
        self.selection = self.view.selection

    def search_changed(self) -> None:
        """A search started, ended or stopped: the lines that say "searching…" follow."""
        self.searching = self.search.pattern

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    def say(self, text: str, error: bool = False, timeout: float | None = None) -> None:
        """A toast in words from the trace (escaped, never markup); ``timeout`` None: the app's."""
        self.notify(visible(text), severity="error" if error else "information", timeout=timeout, markup=False)

    # ---- zoom and pan: the steps here, for keys and the wheel alike --------------------------
    def action_zoom_in(self) -> None:
        self.act(lambda v: v.zoom(ZOOM_STEP))

    def action_zoom_out(self) -> None:
        self.act(lambda v: v.zoom(1 / ZOOM_STEP))

    def action_pan_left(self) -> None:
        self.act(lambda v: v.pan(-PAN_STEP))

    def action_pan_right(self) -> None:
        self.act(lambda v: v.pan(PAN_STEP))

    def action_frame(self) -> None:
        self.act(lambda v: v.frame_selection())

    def action_show_all(self) -> None:
        self.act(lambda v: v.show_all())

    def on_timeline_wheel(self, message: Timeline.Wheel) -> None:
        message.stop()
        if message.pan:
            self.act(lambda v: v.pan(-WHEEL_PAN if message.zoom_in else WHEEL_PAN))
        else:
            self.act(lambda v: v.zoom(ZOOM_STEP if message.zoom_in else 1 / ZOOM_STEP, message.centre))

    def on_timeline_clicked(self, message: Timeline.Clicked) -> None:
        message.stop()
        self.act(lambda v: v.select(message.slice_row))

    def on_timeline_range_dragged(self, message: Timeline.RangeDragged) -> None:
        message.stop()
        self.dragged(message.t0, message.t1)

    def dragged(self, t0: float, t1: float) -> None:
        """A mouse drag across the plot: here, the range."""
        self.act(lambda v: v.set_range(t0, t1))

    # ---- selection ----------------------------------------------------------------------------
    def action_lane_prev(self) -> None:
        self.act(lambda v: v.step_on_lane(-1))

    def action_lane_next(self) -> None:
        self.act(lambda v: v.step_on_lane(1))

    def action_track_next(self) -> None:
        self.act(lambda v: v.step_on_track(1))

    def action_track_prev(self) -> None:
        self.act(lambda v: v.step_on_track(-1))

    def action_up(self) -> None:
        self.act(lambda v: v.to_parent() or v.to_next_track(-1))

    def action_down(self) -> None:
        self.act(lambda v: v.to_child() or v.to_next_track(1))

    def action_flow_out(self) -> None:
        self.act(lambda v: v.follow_flow(True) or self.say("No outgoing flow from this slice", timeout=2))

    def action_flow_in(self) -> None:
        self.act(lambda v: v.follow_flow(False) or self.say("No incoming flow into this slice", timeout=2))

    def action_rows_up(self) -> None:
        self.timeline.scroll_rows(-10)

    def action_rows_down(self) -> None:
        self.timeline.scroll_rows(10)

    def jump_to(self, row: int) -> None:
        """A slice chosen elsewhere (a list, a query): shown, selected and framed."""
        self.act(lambda v: (v.unhide_track_of(row), v.select(row), v.frame_selection()))

    # ---- time origin, typed range, range and undo -------------------------------------------
    def action_time_origin(self) -> None:
        self.act(lambda v: v.toggle_origin() or self.say("Select a slice or a range first", timeout=2))

    def action_goto(self) -> None:
        self.app.push_screen(PromptScreen(f"Go to {HINT}; times from the trace start (u undoes a range change)",
                                          "12ms:25.5ms"), self._goto_done)

    def _goto_done(self, text: str | None) -> None:
        if not text:
            return
        try:
            target = parse_target(text, self.store)
        except ValueError as exc:
            self.say(str(exc), error=True)
            return
        if target.note:
            self.say(target.note, timeout=4)
        if target.range is not None:
            a, b = target.range
            pad = max((b - a) * 0.05, 1)
            self.act(lambda v: (v.set_range(a, b), v.set_window(a - pad, b + pad)))
        else:
            self.act(lambda v: v.go_to(target.time))

    def action_undo_range(self) -> None:
        self.act(lambda v: v.undo_range() or self.say("No range change to undo", timeout=2))

    def action_range_selection(self) -> None:
        self.act(lambda v: v.range_from_selection() or self.say("Select a slice first", timeout=2))

    def action_range_start(self) -> None:
        self.act(lambda v: v.range_edge_at_selection(end=False))

    def action_range_end(self) -> None:
        self.act(lambda v: v.range_edge_at_selection(end=True))

    def action_range_window(self) -> None:
        self.act(lambda v: v.range_from_window())

    def action_clear(self) -> None:
        """esc: stop a search; from a pane or the track list, back to the timeline (never clearing
        what was built there); on the timeline, clear the mark, highlight, then range (u undoes)."""
        if self.action_stop_search():
            return
        if not self.timeline.has_focus:
            self.timeline.focus()
            return
        v = self.view
        had_range = v.range is not None and v.mark_a < 0 and v.highlight is None and v.found is None
        self.act(lambda v: v.clear())
        if had_range:
            self.say("Range cleared · u brings it back", timeout=3)

    # ---- search: one job, one guard, one way to tell what went wrong -----------------------------
    def action_search(self) -> None:
        last = self.view.found.pattern if self.view.found else ""
        self.app.push_screen(PromptScreen(self.search_prompt(), "aten::.*mm|args:256", last), self._search_done)

    def search_prompt(self) -> str:
        return ("Search slice names (regex, any case unless it has a capital); args:REGEX searches args; "
                "n/N step, L lists by name")

    def _search_done(self, text: str | None) -> None:
        if text:
            self.search.start(self, self.store, text, self.view.visible_track_ids(), self._search_finished)
            self.search_changed()

    def _search_finished(self, found: SearchResult | None, error: str | None) -> None:
        self.search_changed()
        if found is None:  # a bad regex, the time limit, a failure: said, never swallowed
            self.say(f"{self.search_tag}{error or 'search failed'}", error=True)
            return
        if found.count:
            self.act(lambda v: (v.set_found(found), v.next_match(True)))
        else:
            self.act(lambda v: v.set_found(found))
            self.say(f"No slice {self.search_where}matches {found.pattern!r}", timeout=3)

    search_tag = ""  # before a search error: which trace (compare mode)
    search_where = ""  # in "No slice … matches": of which trace (compare mode)

    def action_stop_search(self) -> bool:
        """esc / quit: stop a search still running; False when none ran."""
        if not self.search.stop():
            return False
        self.say("Search stopped", timeout=2)
        self.search_changed()
        return True

    def action_match_next(self) -> None:
        self.act(lambda v: v.next_match(True) or self.say("No search (press /)", timeout=2))

    def action_match_prev(self) -> None:
        self.act(lambda v: v.next_match(False) or self.say("No search (press /)", timeout=2))

    # ---- screens over the view ----------------------------------------------------------------
    def insights_window(self) -> tuple[int, int]:
        """What Insights looks at: the range, else the window."""
        v = self.view
        return v.range or (v.t0, v.t1)

    def action_insights(self) -> None:
        from vtui.ui.screens.insights import InsightsScreen  # noqa: PLC0415

        rng = time_range(self.store, *self.insights_window())
        self.app.push_screen(InsightsScreen(self.store, rng, self.name_shown, capture=self.capture), self.follow_jump)

    def follow_jump(self, to: Jump | None) -> None:
        """Where a closing screen sent the timeline (``None``: nowhere)."""
        if to is None:
            return
        row = to.row
        if to.window is None:  # a step or an outlier: select and frame it
            self.act(lambda v: (v.select(row), v.frame_selection()))
            return
        a, b = to.window  # a GPU idle gap, or a time: show it with some context
        pad = max((b - a) // 2, 1_000)
        if row < 0:  # a time, not one slice
            pad = max(pad, (self.view.t1 - self.view.t0) // 20, 10_000)
            self.act(lambda v: v.set_window(a - pad, b + pad))
            return
        self.act(lambda v: (v.unhide_track_of(row), v.select(row), v.set_window(a - pad, b + pad)))
