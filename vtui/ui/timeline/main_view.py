"""The main view of one trace: the timeline pane with the track list beside it and the Details,
Aggregation and Measure tabs under it, and the keys only this view has (measure, export, filter,
the screens opened over it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import TabbedContent, TabPane

from vtui.errors import TraceLoadError, UsageError
from vtui.store.store import TraceStore
from vtui.ui.keys import bindings
from vtui.ui.ruler_times import window_text
from vtui.ui.screens.modals import PromptScreen, WarningsScreen
from vtui.ui.timeline.lanes import Timeline
from vtui.ui.timeline.pane import TimelinePane, follow
from vtui.ui.timeline.state import Selection, TrackLayout, Window
from vtui.ui.timeline.tracklist import TrackList
from vtui.ui.timeline.view import ViewState
from vtui.ui.widgets.aggregation import AggregationPane
from vtui.ui.widgets.details import DetailsPanel
from vtui.ui.widgets.measurements import MeasurePane
from vtui.ui.workers import deliver
from vtui.units import counted, format_duration

NARROW = 110  # columns below which the track list hides itself (the timeline needs the room)

# What 1/2/3 focus: the pane's own key target.
_PANE_FOCUS = {"details": "DetailsPanel", "aggregation": "#agg-table", "measure": "#measure-pane"}


class BottomPanes(Vertical):
    """Details, Aggregation and Measure as tabs under the timeline; the shown one follows the view:
    the details and the marks the selection, the aggregation table the range, the visible tracks
    and (when it counts only them) the search matches, recomputed when shown."""

    def __init__(self, view: ViewState) -> None:
        super().__init__()
        self.view = view
        self.table_stale = True  # the aggregation table's inputs changed since it was computed

    def compose(self) -> ComposeResult:
        with TabbedContent(id="bottom"):
            yield TabPane("Details", DetailsPanel(id="details"), id="details")
            yield TabPane("Aggregation", AggregationPane(self.view, id="aggregation-pane"), id="aggregation")
            yield TabPane("Measure", MeasurePane(id="measure-pane"), id="measure")

    def on_mount(self) -> None:
        follow(self, "selection", self._selection_changed)
        follow(self, "window", self._window_changed)
        follow(self, "track_layout", self._layout_changed)
        self._show_details(self.view.selected)

    def _show_details(self, row: int) -> None:
        # Absent while the app mounts or tears down around us (an exit on a signal mid-mount).
        for details in self.query(DetailsPanel):
            details.show_slice(self.view.store, row)

    def _selection_changed(self, old: Selection, new: Selection) -> None:
        self._show_details(new.selected)
        if old.found is not new.found and any(p.matches_only for p in self.query(AggregationPane)):
            self.table_stale = True
        self.show_tab()

    def _window_changed(self, old: Window, new: Window) -> None:
        if old.range != new.range:
            self.table_stale = True
            self.show_tab()

    def _layout_changed(self, old: TrackLayout, new: TrackLayout) -> None:
        # Which tracks are visible follows from the filter and the hidden set alone (pins and
        # folds reorder them): cheap to compare, where listing them runs the filter over every track.
        if (old.filter_text, old.hidden) != (new.filter_text, new.hidden):
            self.table_stale = True
            self.show_tab()

    def on_tabbed_content_tab_activated(self) -> None:
        self.show_tab()

    def show_tab(self) -> None:
        """The tab shown, brought up to date (the aggregation table only when its inputs changed)."""
        tabs = self.query_one("#bottom", TabbedContent)
        if tabs.active == "aggregation" and self.table_stale:
            self.table_stale = False
            self.query_one(AggregationPane).refresh_table()
        elif tabs.active == "measure":
            self.query_one(MeasurePane).show(self.view)


INLINE_MEMORY_EVENTS = 20_000  # [memory] events whose series build in a few ms (more: in a worker)


class MainPane(TimelinePane):
    BINDINGS = bindings("timeline", on="view")

    def __init__(self, store: TraceStore, path: Path, **kwargs: Any) -> None:
        super().__init__(store, path.name, memory_rows=False, **kwargs)  # added after the first frame
        self.path = path
        self.tracklist_wanted: bool | None = None  # None: shown from NARROW columns up; T decides

    def compose(self) -> ComposeResult:
        # The track list beside the timeline alone: the same height, so line i sits next to row i.
        timeline = Timeline(self.view, labelled=False, id="timeline")  # the track list names the rows
        yield Horizontal(TrackList(self.view, timeline, id="tracks"), timeline, id="rows")
        yield BottomPanes(self.view)

    def on_mount(self) -> None:
        self.call_after_refresh(self._after_show)

    def _after_show(self) -> None:
        self._fit_tracklist()
        self.timeline.focus()
        self.call_after_refresh(self._add_memory_rows)

    def _add_memory_rows(self) -> None:
        # After the first frame, off the UI thread: building the memory series reads every
        # [memory] event's args (seconds on a big trace); meanwhile their rows say "computing…".
        if self.view.memory_rows:
            return
        from vtui.analysis.gpu.memory_tracks import memory_event_rows  # noqa: PLC0415

        if len(memory_event_rows(self.store)) <= INLINE_MEMORY_EVENTS:
            self._memory_rows_ready("")  # a few ms: built here, no second frame of "computing…"
        else:
            self._build_memory_series()

    @work(thread=True, exclusive=True, group="memory-series", description="memory rows", exit_on_error=False)
    def _build_memory_series(self) -> None:
        from vtui.analysis.gpu.memory_tracks import memory_series  # noqa: PLC0415

        try:
            memory_series(self.store)  # memoised on the store: the rows read it from here on
        except Exception as exc:  # noqa: BLE001 — a message, never a traceback
            deliver(self.app, self._memory_rows_ready, f"memory rows: could not be built ({type(exc).__name__}: {exc})")
            return
        deliver(self.app, self._memory_rows_ready, "")

    def _memory_rows_ready(self, error: str) -> None:
        if error:
            self.say(error, error=True)
        self.act(lambda v: (setattr(v, "memory_failed", bool(error) or v.memory_failed), v.show_memory_rows()))

    def on_resize(self) -> None:
        self._fit_tracklist()

    # ---- the status line (the app shows it under the view) ---------------------------------------
    def status_text(self) -> str:
        v = self.view
        zero = v.origin_ns  # the relative axis (z) shifts every time shown here
        parts = [f"window {window_text(v.t0 - zero, v.t1 - zero)}",
                 f"zoom ×{max(v.store.span_ns, 1) / max(v.span, 1):,.1f}", f"{len(v.rows)} rows"]
        if v.range:
            parts.append(f"range {format_duration(v.range[0] - zero)} – {format_duration(v.range[1] - zero)}"
                         f" ({format_duration(v.range[1] - v.range[0])})")
        if self.search.pattern is not None:
            parts.append(f"searching /{self.search.pattern}/… (esc stops)")
        elif v.found is not None:
            at = f"{v.match + 1}/" if v.match >= 0 else ""
            parts.append(f"/{v.found.pattern}/ {at}{v.found.count:,} matches, {format_duration(v.found.total_ns)}")
        if v.origin is not None:
            parts.append(f"times from {v.origin[1]} (z)")
        if v.mark_a >= 0:
            parts.append("A marked (m for B)")
        if v.filter_text:
            parts.append(f"filter /{v.filter_text}/")
        warnings = len(v.store.warnings)
        if warnings:
            parts.append(f"{counted(warnings, 'load warning')} (W)")
        return " · ".join(parts)

    # ---- the track list --------------------------------------------------------------------------
    def _fit_tracklist(self) -> None:
        for tracks in self.query(TrackList):
            wanted = self.tracklist_wanted
            tracks.display = self.app.size.width >= NARROW if wanted is None else wanted
            self.timeline.labelled = not tracks.display  # no list beside: the timeline names its rows

    def action_toggle_tracklist(self) -> None:
        for tracks in self.query(TrackList):
            self.tracklist_wanted = not tracks.display
            self._fit_tracklist()
            if not tracks.display and tracks.has_focus:
                self.timeline.focus()

    def action_collapse(self) -> None:
        v = self.view
        if v.selected < 0:
            self.say("Select a slice on the track to fold or unfold", timeout=2)
            return
        track = int(v.store.slices.track[v.selected])
        if v.store.tracks[track].lanes <= v.lane_cap + 1:
            self.say("This track has no rows to fold", timeout=2)
            return

        def fold(v: ViewState) -> None:
            v.toggle_expanded(track)
            if v.row_of_selection() < 0:  # folded away: the selection moves to the last shown row, same time
                at = int(v.store.slices.start_ns[v.selected])
                lo, hi = v.store.index.lane_window(track, v.lane_cap - 1, at, at + 1)
                v.selected = lo if hi > lo else -1

        self.act(fold)

    def action_filter(self) -> None:
        self.app.push_screen(PromptScreen("Filter tracks by process/thread name (substring or regex; empty clears)",
                                          "stream|python", self.view.filter_text), self._filter_done)

    def _filter_done(self, text: str | None) -> None:
        if text is not None:
            self.act(lambda v: v.set_filter(text.strip()))

    # ---- the bottom panes --------------------------------------------------------------------------
    def action_tab(self, pane: str) -> None:
        """1/2/3: show a bottom pane and give it the keys (the table's b/o/O need its focus)."""
        # Off the pane being hidden first: its widgets' late hide events would otherwise pass
        # the focus around and drop it after the new pane took it.
        self.timeline.focus(scroll_visible=False)
        self.query_one("#bottom", TabbedContent).active = pane
        # After the switch shows the pane: focus on a still-hidden widget would be moved off it.
        self.call_after_refresh(self.query_one(_PANE_FOCUS[pane]).focus)

    def on_aggregation_pane_row_chosen(self, message: AggregationPane.RowChosen) -> None:
        rows = self.query_one(AggregationPane).agg.slices_of(message.row)

        def show(v: ViewState) -> None:
            v.set_highlight(rows)
            if message.jump and len(rows):
                longest = int(rows[-1])  # a group's rows are sorted by clipped duration
                v.unhide_track_of(longest)
                v.select(longest)
                v.frame_selection()

        self.act(show)

    def action_mark(self) -> None:
        if self.view.selected < 0:
            self.say("Select an event to mark", timeout=2)
            return
        kept: list = []
        self.act(lambda v: kept.append(v.mark()))
        if kept[0] is not None:
            self.query_one("#bottom", TabbedContent).active = "measure"

    def action_clear_measurements(self) -> None:
        self.act(lambda v: v.clear_measurements())

    # ---- export ------------------------------------------------------------------------------------
    def action_export_range(self) -> None:
        rng = self.view.analysis_range()
        t0, t1 = rng.t0, rng.t1
        name = f"{self.path.name.split('.')[0]}-{format_duration(t0).replace(' ', '')}-{format_duration(t1).replace(' ', '')}.json"
        default = str(self.path.parent / name)  # next to the trace, not wherever vtui was started
        self.app.push_screen(PromptScreen(f"Export {format_duration(t0)} – {format_duration(t1)} on the visible tracks "
                                          "to (a new .json; end with ! to overwrite)", default, default),
                             self._export_done)

    def _export_done(self, text: str | None) -> None:
        if not text:
            return
        out, force = (text[:-1], True) if text.endswith("!") else (text, False)
        rng = self.view.analysis_range()
        self._export_worker(out.strip(), rng.t0, rng.t1, self.view.visible_track_ids(), force)

    # Not ``deliver``: an export's outcome is always said, as its file is written whatever started later.
    @work(thread=True, exclusive=True, group="export", description="export range", exit_on_error=False)
    def _export_worker(self, out: str, t0: int, t1: int, tracks, force: bool) -> None:
        from vtui.export.trace import export_range  # noqa: PLC0415

        try:
            plan = export_range(self.store, out, t0, t1, tracks, overwrite=force)
        except (UsageError, TraceLoadError, OSError) as exc:
            self.app.call_from_thread(self.say, f"Export failed: {_app_words(str(exc))}", True)
            return
        self.app.call_from_thread(self.say, f"Wrote {plan.events:,} events to {out}")

    def action_export_table(self) -> None:
        self.query_one("#bottom", TabbedContent).active = "aggregation"
        self.app.push_screen(PromptScreen("Export the aggregation table to (.csv, .json or .md; end with ! to overwrite)",
                                          "slices.csv", "slices.csv"), self._export_table_done)

    def _export_table_done(self, text: str | None) -> None:
        if not text:
            return
        from vtui.atomic import atomic_write, check_output_path  # noqa: PLC0415

        out, force = (text[:-1].strip(), True) if text.endswith("!") else (text.strip(), False)
        fmt = {"csv": "csv", "json": "json", "md": "md"}.get(out.rsplit(".", 1)[-1].lower())
        if fmt is None:
            self.say("Name the file .csv, .json or .md", error=True)
            return
        try:
            path = check_output_path(out, [s.path for s in self.store.sources], force)
            atomic_write(path, (self.query_one(AggregationPane).table().render(fmt) + "\n").encode())
        except (UsageError, OSError) as exc:
            self.say(f"Export failed: {_app_words(str(exc))}", error=True)
            return
        self.say(f"Wrote the table to {out}")

    # ---- screens over the view --------------------------------------------------------------------
    def action_results(self) -> None:
        if self.view.found is None:
            self.say("No search (press /)", timeout=2)
            return
        from vtui.ui.screens.results import ResultsScreen  # noqa: PLC0415

        def jump(row: int | None) -> None:
            if row is not None:
                self.act(lambda v: (v.unhide_track_of(row), v.reveal(row)))

        self.app.push_screen(ResultsScreen(self.store, self.view.found), jump)

    def action_query(self) -> None:
        """``:``: the SQL pane (vtui/ui/screens/query.py); enter on a row jumps to its slice or time."""
        from vtui.ui.screens.query import QueryScreen  # noqa: PLC0415

        def jump(target: tuple[str, int] | None) -> None:
            if target is not None:
                kind, value = target
                self.act(lambda v: (v.unhide_track_of(value), v.reveal(value)) if kind == "slice" else v.go_to(value))

        self.app.push_screen(QueryScreen(self.store), jump)

    def action_critical_path(self) -> None:
        """Highlight the selected step's critical path (vtui.analysis.why.critical), dim the rest."""
        from vtui.analysis.why.critical import step_path  # noqa: PLC0415

        path = step_path(self.store, self.view.selected)
        if path is None:
            self.say("Select a step, or a slice inside one, to see its critical path", timeout=3)
            return
        self.act(lambda v: v.set_highlight(path.path_rows()))
        fd = format_duration
        self.say(f"critical path: {path.bound}-bound · CPU {fd(path.cpu_ns)} · GPU {fd(path.gpu_ns + path.comm_ns)} · "
                 f"wait {fd(path.wait_ns)}", timeout=6)

    def action_call_tree(self) -> None:
        from vtui.ui.screens.tree import CallTreeScreen  # noqa: PLC0415

        def jump(row: int | None) -> None:  # ``t``: the node's longest slice
            if row is not None:
                self.jump_to(row)

        self.app.push_screen(CallTreeScreen(self.store, self.view.analysis_range(), self.view.visible_track_ids(),
                                            self.path.name), jump)

    def action_ranks(self) -> None:
        from vtui.ui.screens.ranks import RanksScreen  # noqa: PLC0415

        def jump(rows) -> None:  # a collective: its kernel on every rank, highlighted and framed
            if rows is None:
                return
            s = self.store.slices
            a, b = int(s.start_ns[rows].min()), int(s.end_ns[rows].max())
            pad = max((b - a) // 4, 1_000)
            self.act(lambda v: ([v.unhide_track_of(int(r)) for r in rows], v.set_highlight(rows),
                                v.select(int(rows[0])), v.set_window(a - pad, b + pad)))

        self.app.push_screen(RanksScreen(self.store), jump)

    def action_warnings(self) -> None:
        self.app.push_screen(WarningsScreen(self.store.warnings, self.store), self.follow_jump)


def _app_words(message: str) -> str:
    """The CLI's advice in the app's terms: here a name ending in ! overwrites."""
    return message.replace("pass --force to overwrite", "end the name with ! to overwrite")
