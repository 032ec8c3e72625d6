"""The vtui app: composes the track list, timeline, details panel and status line."""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static, TabbedContent, TabPane

from vtui.analysis.search import SearchResult
from vtui.errors import TraceLoadError, UsageError
from vtui.fmt import counted, format_duration
from vtui.load.background import load_in_background
from vtui.options import LoadOptions
from vtui.store.slicetime import time_range
from vtui.store.store import TraceStore
from vtui.ui.goto import HINT, parse_target
from vtui.ui.keys import MAIN_HELP, actions, bindings
from vtui.ui.safe import plain, visible
from vtui.ui.screens import HelpScreen, PromptScreen, WarningsScreen
from vtui.ui.searching import SearchJob
from vtui.ui.shell import AppShell, LoadJob
from vtui.ui.timefmt import window_text
from vtui.ui.view import SEARCH_LIMIT_S, ViewState
from vtui.ui.widgets.aggregation import AggregationPane
from vtui.ui.widgets.details import DetailsPanel
from vtui.ui.widgets.measurements import MeasurePane
from vtui.ui.widgets.timeline import Timeline
from vtui.ui.widgets.tracklist import TrackList

ZOOM_STEP = 0.6
NARROW = 110  # columns below which the track list hides itself (the timeline needs the room)
PAN_STEP = 0.2


class BottomPanes(Vertical):
    """Details, Aggregation and Measure as tabs under the timeline."""

    def __init__(self, view: ViewState) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        with TabbedContent(id="bottom"):
            yield TabPane("Details", DetailsPanel(id="details"), id="details")
            yield TabPane("Aggregation", AggregationPane(self.view, id="aggregation-pane"), id="aggregation")
            yield TabPane("Measure", MeasurePane(id="measure-pane"), id="measure")


class VtuiApp(AppShell, App[int]):
    TITLE = "vtui"
    KEY_SCOPE = "timeline"  # its bindings and palette entries (vtui.ui.keys)
    BINDINGS = bindings("timeline")
    HELP_SCOPES = MAIN_HELP

    def __init__(self, path: Path | str, store: TraceStore | None = None, cache: bool = True,
                 options: LoadOptions | None = None) -> None:
        super().__init__()
        self.path = Path(path)
        self.cache = cache  # use the index cache (vtui --no-cache turns it off)
        self.load_options = options  # None: the environment's (LoadOptions.from_environ)
        self.store = store
        self.view: ViewState | None = None
        self._agg_key: tuple | None = None  # inputs of the aggregation table now shown
        self.search = SearchJob()  # the view's search: runs, reports, stops (vtui.ui.searching)
        self.search_limit_s = SEARCH_LIMIT_S
        self.tracklist_wanted: bool | None = None  # None: shown from NARROW columns up; T decides

    # ---- layout and loading ---------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield from self.loading_widgets(f"vtui · {self.path.name} · loading…", f"Loading {self.path}")

    def on_mount(self) -> None:
        self.use_user_keymap()
        self.exit_on_signals()
        if self.store is not None:
            self._show_store(self.store)
        else:
            self.start_load(LoadJob(
                lambda progress, control: load_in_background(self.path, progress, cache=self.cache, control=control,
                                                                options=self.load_options),
                "load trace", f"vtui · {self.path.name} · failed to load", "Could not open the trace:",
                lambda exc: f"{self.path}: could not load ({type(exc).__name__}: {exc})"))

    def loaded(self, result: TraceStore) -> None:
        self._show_store(result)

    def _show_store(self, store: TraceStore) -> None:
        self.store = store
        self.view = ViewState(store)
        self.query_one("#loading").remove()
        # The track list beside the timeline alone: the same height, so line i sits next to row i.
        timeline = Timeline(self.view, id="timeline")
        main = Vertical(Horizontal(TrackList(self.view, timeline, id="tracks"), timeline, id="rows"),
                        BottomPanes(self.view), id="main")
        self.mount(main, after=self.query_one("#title"))
        self.query_one("#title", Static).update(plain(
            f"vtui · {self.path.name} · {store.event_count:,} events · {len(store.tracks)} tracks · "
            f"{format_duration(store.span_ns)}" + (" · repaired" if store.repaired else "")
        ))
        self.call_after_refresh(self._after_show)

    def _after_show(self) -> None:
        self._fit_tracklist()
        self.query_one(Timeline).focus()
        self._update()

    def on_resize(self) -> None:
        self._fit_tracklist()

    def _fit_tracklist(self) -> None:
        for tracks in self.query(TrackList):
            wanted = self.tracklist_wanted
            tracks.display = self.size.width >= NARROW if wanted is None else wanted

    def action_toggle_tracklist(self) -> None:
        for tracks in self.query(TrackList):
            self.tracklist_wanted = not tracks.display
            self._fit_tracklist()
            if not tracks.display and tracks.has_focus:
                self.query_one(Timeline).focus()

    def action_collapse(self) -> None:
        v = self.view
        if v is None:
            return
        if v.selected < 0:
            self.notify("Select a slice on the track to fold or unfold", timeout=2)
            return
        track = int(v.store.slices.track[v.selected])
        if v.store.tracks[track].lanes <= v.lane_cap + 1:
            self.notify("This track has no rows to fold", timeout=2)
            return
        v.toggle_expanded(track)
        if v.row_of_selection() < 0:  # folded away: the selection moves to the last shown row, same time
            s = v.store.slices
            at = int(s.start_ns[v.selected])
            lo, hi = v.store.index.lane_window(track, v.lane_cap - 1, at, at + 1)
            v.selected = lo if hi > lo else -1
        self._update()

    # ---- state -> widgets -----------------------------------------------------------------
    def _update(self, rebuild_tracks: bool = False) -> None:
        if self.view is None:
            return
        self.query_one(Timeline).refresh_view()
        self.query_one(DetailsPanel).show_slice(self.view.store, self.view.selected)
        if rebuild_tracks:
            self.query_one(TrackList).rebuild()
        v = self.view
        self._refresh_panes()
        warnings = len(v.store.warnings)
        zero = v.origin_ns  # the relative axis (z) shifts every time shown here
        parts = [f"window {window_text(v.t0 - zero, v.t1 - zero)}",
                 f"zoom ×{max(v.store.span_ns, 1) / max(v.span, 1):,.1f}", f"{len(v.rows)} rows"]
        if v.range:
            parts.append(f"range {format_duration(v.range[0] - zero)} – {format_duration(v.range[1] - zero)}"
                         f" ({format_duration(v.range[1] - v.range[0])})")
        if self.searching is not None:
            parts.append(f"searching /{self.searching}/… (esc stops)")
        elif v.found is not None:
            at = f"{v.match + 1}/" if v.match >= 0 else ""
            parts.append(f"/{v.found.pattern}/ {at}{v.found.count:,} matches, {format_duration(v.found.total_ns)}")
        if v.origin is not None:
            parts.append(f"times from {v.origin[1]} (z)")
        if v.mark_a >= 0:
            parts.append("A marked (m for B)")
        if v.filter_text:
            parts.append(f"filter /{v.filter_text}/")
        if warnings:
            parts.append(f"{counted(warnings, 'load warning')} (W)")
        self.query_one("#status", Static).update(plain(" · ".join(parts)))

    def _refresh_panes(self) -> None:
        """The aggregation table follows the range and visible tracks (recomputed only when shown and changed)."""
        v = self.view
        tabs = self.query_one("#bottom", TabbedContent)
        if tabs.active == "aggregation":
            # Which tracks are visible follows from the filter and the hidden set alone: comparing
            # those is cheap, where listing the visible tracks runs the filter over every track.
            pane = self.query_one(AggregationPane)
            key = (v.range, v.filter_text, frozenset(v.hidden), id(v.found) if pane.matches_only else None)
            if key != self._agg_key:
                self._agg_key = key
                pane.refresh_table()
        elif tabs.active == "measure":
            self.query_one(MeasurePane).show(v)

    def _act(self, fn, *args, rebuild_tracks: bool = False) -> None:
        if self.view is None:
            return
        fn(*args)
        self._update(rebuild_tracks)

    # ---- actions ------------------------------------------------------------------------------
    def action_zoom_in(self) -> None:
        self._act(lambda: self.view.zoom(ZOOM_STEP))

    def action_zoom_out(self) -> None:
        self._act(lambda: self.view.zoom(1 / ZOOM_STEP))

    def action_pan_left(self) -> None:
        self._act(lambda: self.view.pan(-PAN_STEP))

    def action_pan_right(self) -> None:
        self._act(lambda: self.view.pan(PAN_STEP))

    def action_frame(self) -> None:
        self._act(lambda: self.view.frame_selection())

    def action_show_all(self) -> None:
        self._act(lambda: self.view.show_all())

    def action_lane_prev(self) -> None:
        self._act(lambda: self.view.step_on_lane(-1))

    def action_lane_next(self) -> None:
        self._act(lambda: self.view.step_on_lane(1))

    def action_track_next(self) -> None:
        self._act(lambda: self.view.step_on_track(1))

    def action_track_prev(self) -> None:
        self._act(lambda: self.view.step_on_track(-1))

    def action_up(self) -> None:
        self._act(lambda: self.view.to_parent() or self.view.to_next_track(-1))

    def action_down(self) -> None:
        self._act(lambda: self.view.to_child() or self.view.to_next_track(1))

    def action_flow_out(self) -> None:
        self._act(lambda: self.view.follow_flow(True) or self.notify("No outgoing flow from this slice", timeout=2))

    def action_flow_in(self) -> None:
        self._act(lambda: self.view.follow_flow(False) or self.notify("No incoming flow into this slice", timeout=2))

    def action_time_origin(self) -> None:
        self._act(lambda: self.view.toggle_origin() or self.notify("Select a slice or a range first", timeout=2))

    def action_rows_up(self) -> None:
        if self.view is not None:
            self.query_one(Timeline).scroll_rows(-10)

    def action_rows_down(self) -> None:
        if self.view is not None:
            self.query_one(Timeline).scroll_rows(10)

    def action_goto(self) -> None:
        if self.view is not None:
            self.push_screen(PromptScreen(f"Go to {HINT}; times from the trace start (u undoes a range change)",
                                          "12ms:25.5ms"), self._goto_done)

    def _goto_done(self, text: str | None) -> None:
        if not text or self.view is None:
            return
        try:
            target = parse_target(text, self.view.store)
        except ValueError as exc:
            self.notify(visible(str(exc)), severity="error", markup=False)
            return
        v = self.view
        if target.range is not None:
            a, b = target.range
            pad = max((b - a) * 0.05, 1)
            self._act(lambda: (v.set_range(a, b), v.set_window(a - pad, b + pad)))
        else:
            self._act(lambda: v.go_to(target.time))

    def action_undo_range(self) -> None:
        if self.view is not None and not self.view.undo_range():
            self.notify("No range change to undo", timeout=2)
        self._update()

    def action_filter(self) -> None:
        if self.view is not None:
            self.push_screen(PromptScreen("Filter tracks by process/thread name (substring or regex; empty clears)",
                                          "stream|python", self.view.filter_text), self._filter_done)

    def _filter_done(self, text: str | None) -> None:
        if text is None or self.view is None:
            return
        self.view.filter_text = text.strip()
        self.view.rebuild_rows()
        self._update(rebuild_tracks=True)

    # ---- range, search, measure, export -----------------------------------------------------
    def action_range_selection(self) -> None:
        self._act(lambda: self.view.range_from_selection() or self.notify("Select a slice first", timeout=2))

    def action_range_start(self) -> None:
        self._act(lambda: self.view.range_edge_at_selection(end=False))

    def action_range_end(self) -> None:
        self._act(lambda: self.view.range_edge_at_selection(end=True))

    def action_range_window(self) -> None:
        self._act(lambda: self.view.range_from_window())

    def action_clear(self) -> None:
        """esc: stop a search; from a pane or the track list, back to the timeline (never clearing
        what was built there); on the timeline, clear the mark, highlight, then range (u undoes)."""
        if self.stop_search() or self.view is None:
            return
        timeline = self.query_one(Timeline)
        if not timeline.has_focus:
            timeline.focus()
            return
        had_range = self.view.range is not None and self.view.mark_a < 0 and self.view.highlight is None \
            and self.view.found is None
        self._act(lambda: self.view.clear())
        if had_range:
            self.notify("Range cleared · u brings it back", timeout=3)

    def action_tab(self, pane: str) -> None:
        """1/2/3: show a bottom pane and give it the keys (the table's b/o/O need its focus)."""
        if self.view is not None:
            # Off the pane being hidden first: its widgets' late hide events would otherwise pass
            # the focus around and drop it after the new pane took it.
            self.query_one(Timeline).focus(scroll_visible=False)
            self.query_one("#bottom", TabbedContent).active = pane
            self._update()
            # After the switch shows the pane: focus on a still-hidden widget would be moved off it.
            self.call_after_refresh(self.query_one(_PANE_FOCUS[pane]).focus)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._update()

    def action_search(self) -> None:
        if self.view is not None:
            last = self.view.found.pattern if self.view.found else ""
            self.push_screen(PromptScreen("Search slice names (regex, any case unless it has a capital); "
                                          "args:REGEX searches args; n/N step, L lists by name",
                                          "aten::.*mm|args:256", last), self._search_done)

    def _search_done(self, text: str | None) -> None:
        if not text or self.view is None:
            return
        self.search.limit_s = self.search_limit_s
        self.search.start(self, self.view.store, text, self.view.visible_track_ids(), self._search_finished)
        self._update()

    @property
    def searching(self) -> str | None:
        """The pattern of a search still running."""
        return self.search.pattern

    def _search_finished(self, found: SearchResult | None, error: str | None) -> None:
        if self.view is None:
            return
        if found is None:
            self.notify(visible(error or "search failed"), severity="error", markup=False)
        else:
            self.view.set_found(found)
            if found.count:
                self.view.next_match(True)
            else:
                self.notify(visible(f"No slice matches {found.pattern!r}"), timeout=3, markup=False)
        self._update()

    def stop_search(self) -> bool:
        if not self.search.stop():
            return False
        self.notify("Search stopped", timeout=2)
        self._update()
        return True

    def action_results(self) -> None:
        if self.view is None or self.view.found is None:
            self.notify("No search (press /)", timeout=2)
            return
        from vtui.ui.results import ResultsScreen  # noqa: PLC0415

        def jump(row: int | None) -> None:
            if row is not None:
                self._act(lambda: (self.view.unhide_track_of(row), self.view.reveal(row)))

        self.push_screen(ResultsScreen(self.view.store, self.view.found), jump)

    def action_query(self) -> None:
        """``:``: the SQL pane (vtui/ui/query.py); enter on a row jumps to its slice or time."""
        if self.view is None:
            return
        from vtui.ui.query import QueryScreen  # noqa: PLC0415

        def jump(target: tuple[str, int] | None) -> None:
            if target is not None:
                kind, value = target
                self._act(lambda: (self.view.unhide_track_of(value), self.view.reveal(value)) if kind == "slice"
                          else self.view.go_to(value))

        self.push_screen(QueryScreen(self.view.store), jump)

    def action_match_next(self) -> None:
        self._act(lambda: self.view.next_match(True) or self.notify("No search (press /)", timeout=2))

    def action_match_prev(self) -> None:
        self._act(lambda: self.view.next_match(False) or self.notify("No search (press /)", timeout=2))

    def action_mark(self) -> None:
        if self.view is None:
            return
        if self.view.selected < 0:
            self.notify("Select an event to mark", timeout=2)
            return
        if self.view.mark() is not None:
            self.query_one("#bottom", TabbedContent).active = "measure"
        self._update()

    def action_clear_measurements(self) -> None:
        self._act(lambda: (self.view.measurements.clear(), self.view.mark_names.clear(), setattr(self.view, "mark_a", -1)))

    def on_aggregation_pane_row_chosen(self, message: AggregationPane.RowChosen) -> None:
        rows = self.query_one(AggregationPane).agg.slices_of(message.row)
        self.view.set_highlight(rows)
        if message.jump and len(rows):
            longest = int(rows[-1])  # a group's rows are sorted by clipped duration
            self.view.unhide_track_of(longest)
            self.view.select(longest)
            self.view.frame_selection()
        self._update()

    def on_timeline_range_dragged(self, message: Timeline.RangeDragged) -> None:
        self._act(lambda: self.view.set_range(message.t0, message.t1))

    def action_export_range(self) -> None:
        if self.view is None:
            return
        rng = self.view.analysis_range()
        t0, t1 = rng.t0, rng.t1
        name = f"{self.path.name.split('.')[0]}-{format_duration(t0).replace(' ', '')}-{format_duration(t1).replace(' ', '')}.json"
        default = str(self.path.parent / name)  # next to the trace, not wherever vtui was started
        self.push_screen(PromptScreen(f"Export {format_duration(t0)} – {format_duration(t1)} on the visible tracks to "
                                      "(a new .json; end with ! to overwrite)", default, default), self._export_done)

    def _export_done(self, text: str | None) -> None:
        if not text or self.view is None:
            return
        out, force = (text[:-1], True) if text.endswith("!") else (text, False)
        rng = self.view.analysis_range()
        self._export_worker(out.strip(), rng.t0, rng.t1, self.view.visible_track_ids(), force)

    @work(thread=True, exclusive=True, group="export", description="export range", exit_on_error=False)
    def _export_worker(self, out: str, t0: int, t1: int, tracks, force: bool) -> None:
        from vtui.export.trace import export_range  # noqa: PLC0415

        try:
            plan = export_range(self.view.store, out, t0, t1, tracks, overwrite=force)
        except (UsageError, TraceLoadError, OSError) as exc:
            self.call_from_thread(self.notify, visible(f"Export failed: {_app_words(str(exc))}"), severity="error",
                                  markup=False)
            return
        self.call_from_thread(self.notify, visible(f"Wrote {plan.events:,} events to {out}"), markup=False)

    def action_export_table(self) -> None:
        if self.view is None:
            return
        self.query_one("#bottom", TabbedContent).active = "aggregation"
        self._update()
        self.push_screen(PromptScreen("Export the aggregation table to (.csv, .json or .md; end with ! to overwrite)",
                                      "slices.csv", "slices.csv"), self._export_table_done)

    def _export_table_done(self, text: str | None) -> None:
        if not text or self.view is None:
            return
        from vtui.atomic import atomic_write, check_output_path  # noqa: PLC0415

        out, force = (text[:-1].strip(), True) if text.endswith("!") else (text.strip(), False)
        fmt = {"csv": "csv", "json": "json", "md": "md"}.get(out.rsplit(".", 1)[-1].lower())
        if fmt is None:
            self.notify("Name the file .csv, .json or .md", severity="error")
            return
        try:
            path = check_output_path(out, [s.path for s in self.view.store.sources], force)
            atomic_write(path, (self.query_one(AggregationPane).table().render(fmt) + "\n").encode())
        except (UsageError, OSError) as exc:
            self.notify(visible(f"Export failed: {_app_words(str(exc))}"), severity="error", markup=False)
            return
        self.notify(visible(f"Wrote the table to {out}"), markup=False)

    def action_insights(self) -> None:
        if self.view is not None:
            from vtui.ui.insights import InsightsScreen  # noqa: PLC0415

            def jump(row: int) -> None:  # a step chosen on the Insights screen: select and frame it
                self._act(lambda: (self.view.select(row), self.view.frame_selection()))

            def jump_window(a: int, b: int, row: int) -> None:  # a GPU idle gap: show it with some context
                pad = max((b - a) // 2, 1_000)
                self._act(lambda: (self.view.unhide_track_of(row), self.view.select(row),
                                   self.view.set_window(a - pad, b + pad)))

            window = self.view.range or (self.view.t0, self.view.t1)  # the range, else what is on screen
            self.push_screen(InsightsScreen(self.view.store, time_range(self.view.store, *window), self.path.name,
                                            on_step=jump, on_window=jump_window))

    def action_critical_path(self) -> None:
        """Highlight the selected step's critical path (vtui.analysis.critical), dim the rest."""
        if self.view is None:
            return
        from vtui.analysis.critical import step_path  # noqa: PLC0415

        path = step_path(self.view.store, self.view.selected)
        if path is None:
            self.notify("Select a step, or a slice inside one, to see its critical path", timeout=3)
            return
        self._act(lambda: self.view.set_highlight(path.path_rows()))
        fd = format_duration
        self.notify(visible(f"critical path: {path.bound}-bound · CPU {fd(path.cpu_ns)} · GPU "
                            f"{fd(path.gpu_ns + path.comm_ns)} · wait {fd(path.wait_ns)}"), markup=False, timeout=6)

    def action_call_tree(self) -> None:
        if self.view is not None:
            from vtui.ui.tree import CallTreeScreen  # noqa: PLC0415

            def jump(row: int) -> None:  # a node's longest slice, chosen on the call tree screen
                self._act(lambda: (self.view.unhide_track_of(row), self.view.select(row), self.view.frame_selection()))

            self.push_screen(CallTreeScreen(self.view.store, self.view.analysis_range(), self.view.visible_track_ids(),
                                            self.path.name, on_jump=jump))

    def action_ranks(self) -> None:
        if self.view is not None:
            from vtui.ui.ranks import RanksScreen  # noqa: PLC0415

            def jump(rows) -> None:  # a collective: its kernel on every rank, highlighted and framed
                s = self.view.store.slices
                a, b = int(s.start_ns[rows].min()), int(s.end_ns[rows].max())
                pad = max((b - a) // 4, 1_000)
                self._act(lambda: ([self.view.unhide_track_of(int(r)) for r in rows], self.view.set_highlight(rows),
                                   self.view.select(int(rows[0])), self.view.set_window(a - pad, b + pad)))

            self.push_screen(RanksScreen(self.view.store, on_jump=jump))

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_sections(self.screen)))

    def action_warnings(self) -> None:
        if self.store is not None:
            self.push_screen(WarningsScreen(self.store.warnings))

    def stop_work(self) -> None:
        self.search.stop()

    def key_rows(self) -> list[tuple[str, str]]:
        return [row for _, rows in self.help_sections(self.screen_stack[0]) for row in rows]

    # ---- messages from widgets ------------------------------------------------------------
    def on_timeline_clicked(self, message: Timeline.Clicked) -> None:
        self._act(lambda: self.view.select(message.slice_row))

    def on_timeline_wheel(self, message: Timeline.Wheel) -> None:
        if message.pan:
            self._act(lambda: self.view.pan(-PAN_STEP / 2 if message.zoom_in else PAN_STEP / 2))
        else:
            self._act(lambda: self.view.zoom(ZOOM_STEP if message.zoom_in else 1 / ZOOM_STEP, message.centre))

    def on_track_list_changed(self, message: TrackList.Changed) -> None:
        self._update()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Timeline keys act only on the main screen (not under Insights, help or a prompt)."""
        if action in ("quit", "help", "command_palette") or len(self.screen_stack) <= 1:
            return True
        return action not in _VIEW_ACTIONS


def _app_words(message: str) -> str:
    """The CLI's advice in the app's terms: here a name ending in ! overwrites."""
    return message.replace("pass --force to overwrite", "end the name with ! to overwrite")


# What 1/2/3 focus: the pane's own key target.
_PANE_FOCUS = {"details": "DetailsPanel", "aggregation": "#agg-table", "measure": "#measure-pane"}

# Actions of the app's own bindings (name without arguments): disabled under another screen.
_VIEW_ACTIONS = actions("timeline")
