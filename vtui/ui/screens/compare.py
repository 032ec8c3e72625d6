"""Compare mode (`vtui A B`): the two timelines one above the other, and the diff tables in tabs.

Each trace keeps its own ``ViewState``; keys move the focused one, or both when the windows are
locked (`l`): then both show the same times counted from their first steps (when both traces have
steps; press `l` again to count from the trace starts, once more to unlock).
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static, TabbedContent, TabPane

from vtui.analysis.diff.engine import Run, RunsDiff, diff_runs
from vtui.analysis.report.compare import Comparison, compare
from vtui.analysis.slices.details import slice_details
from vtui.load.background import LoadControl, load_in_background
from vtui.options import LoadOptions
from vtui.present.bars import shared_sparklines
from vtui.present.compare_text import format_pct, format_value, metrics_table, ops_table, steps_table
from vtui.present.names import distinct_cuts
from vtui.present.tabular import Table
from vtui.store.store import TraceStore
from vtui.ui.keys import COMPARE_HELP, bindings
from vtui.ui.ruler_times import window_text
from vtui.ui.screens.compare_steps import StepByStep
from vtui.ui.screens.modals import HelpScreen
from vtui.ui.shell import AppShell, LoadJob, Progress
from vtui.ui.timeline.lanes import Timeline
from vtui.ui.timeline.pane import TimelinePane, ViewText
from vtui.ui.timeline.view import ViewState
from vtui.ui.trace_text import plain, visible
from vtui.units import format_duration as fd

TABS = ("tab-timelines", "tab-metrics", "tab-ops", "tab-steps", "tab-bystep")
STATUS_LABEL = {"span_ns": "span", "step_mean_ns": "step mean"}  # the metrics on the status line


class TracePane(TimelinePane):
    """One trace: a title line, its timeline and a line on the selected slice; the keys and the
    mouse act on this trace's view (compare mode keeps both in step when locked)."""

    BINDINGS = bindings("compare", on="view")

    def __init__(self, tag: str, path: Path, store: TraceStore, scale_ns: int = 0, **kwargs) -> None:
        super().__init__(store, f"{tag} · {path.name}", scale_ns, **kwargs)
        self.tag, self.path = tag, path
        self.search_tag, self.search_where = f"{tag}: ", f"of {tag} "

    def search_prompt(self) -> str:
        return f"Search {self.tag}'s slice names (regex, any case unless it has a capital); n/N step"

    def compose(self) -> ComposeResult:
        yield ViewText(self._title, ("window", "selection"), classes="pane-title")
        yield Timeline(self.view)
        yield ViewText(self._details, ("selection",), classes="pane-details")

    def _title(self) -> Text:
        v = self.view
        found = f" · /{v.found.pattern}/ {v.match + 1}/{v.found.count:,}" if v.found is not None else ""
        return plain(f"{self.tag} · {self.path.name} · {self.store.event_count:,} events · {fd(self.store.span_ns)} · "
                     f"window {window_text(v.t0, v.t1)}{found}")

    def _details(self) -> Text:
        """The selected slice in one line (its name, times and track)."""
        v = self.view
        if v.selected < 0:
            return Text("no slice selected: ← → ↑ ↓ select, f frames, i insights for this trace, ? keys", style="dim")
        d = slice_details(self.store, v.selected)
        return plain(f"{d.name} · {d.category or '—'} · start {fd(d.start_ns)} · dur {fd(d.dur_ns)} · "
                     f"self {fd(d.self_ns)} · {d.track_title}")

    def dragged(self, t0: float, t1: float) -> None:
        """In compare mode a drag zooms to the dragged times."""
        lo, hi = sorted((t0, t1))
        if hi > lo:
            self.act(lambda v: v.set_window(lo, hi))

    def insights_window(self) -> tuple[int, int]:
        return 0, int(self.store.span_ns)  # the whole trace: its findings next to the other's


def _data_table(table: Table, id: str, width: int = 0) -> DataTable:
    """The table; given the ``width`` there is, its first column (names, metric labels) gives way,
    cut in the middle and kept distinct, so the numbers to its right (Δ%, better) stay on screen."""
    dt: DataTable = DataTable(id=id, zebra_stripes=True, cursor_type="row")
    flags = table.numeric_flags()
    rows = [[visible(c) for c in row] for row in table.display]
    cells = [max([len(h)] + [len(r[i]) for r in rows]) + 2 for i, h in enumerate(table.headers)]
    first = cells[0] - 2
    if width > 0 and sum(cells) + 2 > width:
        first = max(12, width - 2 - sum(cells[1:]) - 2)
    names = distinct_cuts([r[0] for r in rows], first) if rows else []
    for i, (header, numeric) in enumerate(zip(table.headers, flags)):
        dt.add_column(Text(header, justify="right" if numeric else "left"), width=first if i == 0 else None)
    for name, row in zip(names, rows):
        dt.add_row(*(Text(name if i == 0 else c, justify="right" if n else "left", no_wrap=True)
                     for i, (c, n) in enumerate(zip(row, flags))))
    return dt


class CompareView(Vertical):
    """The tabs: both timelines, the metrics table, the operator diff and the step-aligned view.
    Its keys (lock, tabs, the tree diff) act while the focus is in it, never under another screen."""

    BINDINGS = bindings("compare", on="compare")

    def __init__(self, paths: tuple[Path, Path], a: TraceStore, b: TraceStore, c: Comparison, d: RunsDiff,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.paths, self.a, self.b, self.c, self.d = paths, a, b, c, d

    def compose(self) -> ComposeResult:
        c = self.c
        sa, sb = shared_sparklines(c.a_durations, c.b_durations)
        steps_note = (f"A {sa}\nB {sb}\nbars on one scale; phase columns: share of each step, A/B %" if c.steps
                      else "no repeating step found in either trace")
        with TabbedContent(id="tabs"):
            with TabPane("1 Timelines", id=TABS[0]):
                # One time scale for both: a trace half as long looks half as long.
                scale = max(int(self.a.span_ns), int(self.b.span_ns))
                yield TracePane("A", self.paths[0], self.a, scale, id="pane-a")
                yield TracePane("B", self.paths[1], self.b, scale, id="pane-b")
            with TabPane("2 Metrics", id=TABS[1]):
                yield _data_table(metrics_table(c), "metrics-table", self.app.size.width)
                yield Static(f"same = within {100 * c.tolerance:g}% of A (times: or within 1 µs); better = lower"
                             " times, memory, memcpy share and syncs, higher GPU busy and steps/s", classes="note")
            with TabPane("3 Operators", id=TABS[2]):
                yield _data_table(ops_table(c), "ops-table", self.app.size.width)
            with TabPane("4 Steps", id=TABS[3]):
                yield Static(steps_note, classes="note")
                yield _data_table(steps_table(c, None), "steps-table")
            with TabPane("5 Step by step", id=TABS[4]):
                yield StepByStep(self.d, id="bystep")


class CompareApp(AppShell, App[int]):
    TITLE = "vtui compare"
    KEY_SCOPE = "compare"  # its bindings and palette entries (vtui.ui.keys)
    BINDINGS = bindings("compare", on="app")  # quit; the rest is the panes' and the tabs'
    HELP_SCOPES = COMPARE_HELP

    def __init__(self, path_a: Path | str, path_b: Path | str,
                 stores: tuple[TraceStore, TraceStore] | None = None, cache: bool = True,
                 options: LoadOptions | None = None) -> None:
        super().__init__()
        self.paths = (Path(path_a), Path(path_b))
        self.stores = stores
        self.cache = cache  # read / write the index cache (``--no-cache`` turns it off)
        self.load_options = options  # None: the environment's (LoadOptions.from_environ)
        self.comparison: Comparison | None = None
        self.runs_diff: RunsDiff | None = None
        self.lock_mode: str | None = None  # None, "steps" (first steps line up) or "starts"
        self._syncing = False  # the lock is moving the other pane: its change is not the user's

    # ---- loading -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        a, b = self.paths
        yield from self.loading_widgets(f"vtui compare · A {a.name} · B {b.name} · loading…", f"Loading {a} and {b}")

    def on_mount(self) -> None:
        self.use_user_keymap()
        self.exit_on_signals()
        self.start_load(LoadJob(self._load, "load and compare", "vtui compare · failed", "Could not compare the traces:",
                                lambda exc: f"could not compare ({type(exc).__name__}: {exc})"))

    def _load(self, progress: Progress, control: LoadControl) -> tuple[TraceStore, TraceStore, Comparison, RunsDiff]:
        """Both stores (each half of the progress bar) and their comparisons (the tables' and the
        step-by-step one); runs in the load worker."""
        if self.stores is not None:
            a, b = self.stores
        else:
            a = load_in_background(self.paths[0], lambda f: progress(f / 2), cache=self.cache, control=control,
                                   options=self.load_options)
            b = load_in_background(self.paths[1], lambda f: progress(0.5 + f / 2), cache=self.cache, control=control,
                                   options=self.load_options)
        names = (self.paths[0].name, self.paths[1].name)
        return a, b, compare(a, b, labels=names), diff_runs([Run(a, names[0])], [Run(b, names[1])])

    def loaded(self, result: tuple[TraceStore, TraceStore, Comparison, RunsDiff]) -> None:
        self._show(*result)

    def _show(self, a: TraceStore, b: TraceStore, c: Comparison, d: RunsDiff) -> None:
        self.stores, self.comparison, self.runs_diff = (a, b), c, d
        self.query_one("#loading").remove()
        tabs = CompareView(self.paths, a, b, c, d, id="compare")
        self.mount(tabs, after=self.query_one("#title"))
        self.query_one("#title", Static).update(
            plain(f"vtui compare · A {self.paths[0].name} · B {self.paths[1].name} · 1–5 switch views · l locks times"))
        self.call_after_refresh(self._after_show)

    def _after_show(self) -> None:
        for pane in self.panes():  # the lock follows either window; the status line the windows and searches
            self.watch(pane, "window", self._follower(pane), init=False)
            self.watch(pane, "searching", self._update, init=False)
        self.query_one("#pane-a").query_one(Timeline).focus()
        self._update()

    # ---- state -> widgets ------------------------------------------------------------------
    def panes(self) -> list[TracePane]:
        return list(self.query(TracePane))

    def active_pane(self) -> TracePane | None:
        panes = self.panes()
        for pane in panes:
            if self.focused is not None and pane in self.focused.ancestors_with_self:
                return pane
        return panes[0] if panes else None

    @property
    def locked(self) -> bool:
        return self.lock_mode is not None

    def _anchor(self, pane: TracePane) -> int:
        """Where time 0 of the lock is in this pane's trace: its first step, or its start."""
        c = self.comparison
        if self.lock_mode != "steps" or c is None:
            return 0
        return (c.a if pane.tag == "A" else c.b).first_step_ns or 0

    def _steps_in_both(self) -> bool:
        c = self.comparison
        return c is not None and c.a.first_step_ns is not None and c.b.first_step_ns is not None

    def _fit_both(self, pane: TracePane):
        """On locking: slide ``pane``'s window (same width) the least that puts both windows inside
        their traces at the lock's offsets, where the traces allow it; moves after that keep the
        offsets exactly, even past the shorter trace's end."""
        def fit(v: ViewState) -> None:
            lo, hi = 0, int(pane.store.span_ns) - v.span
            for other in self.panes():
                if other is not pane:
                    shift = self._anchor(other) - self._anchor(pane)
                    lo, hi = max(lo, -shift), min(hi, int(other.store.span_ns) - v.span - shift)
            if lo <= hi:
                v.set_window(min(max(v.t0, lo), hi), min(max(v.t0, lo), hi) + v.span)
        return fit

    def move(self, pane: TracePane, change) -> None:
        """Apply ``change(view)`` to ``pane`` (the lock then moves the other)."""
        pane.act(change)

    def _follower(self, pane: TracePane):
        return lambda: self._pane_changed(pane)

    def _pane_changed(self, pane: TracePane) -> None:
        """A pane's view changed: when locked, give the other pane the same window (shifted so
        that the lock's anchors line up); then the status line."""
        if self.locked and not self._syncing:
            self._syncing = True
            try:
                for other in self.panes():
                    if other is not pane:  # the same offsets from the anchors, even where that
                        # reaches past the other trace's end (drawn empty)
                        shift = self._anchor(other) - self._anchor(pane)
                        t0, t1 = pane.view.t0 + shift, pane.view.t1 + shift
                        other.act(lambda v, t0=t0, t1=t1: v.set_window(t0, t1, inside=False))
            finally:
                self._syncing = False
        self._update()

    def _update(self) -> None:
        c = self.comparison
        if c is None:
            return
        lock = {None: "unlocked", "steps": "locked at the first steps", "starts": "locked at the starts"}[self.lock_mode]
        why = {None: ": keys move the focused timeline", "steps": ": same times from each trace's first step",
               "starts": ": same times from each trace's start"}[self.lock_mode]
        past = empty = ""
        if self.locked:  # say where a locked window reaches past a trace (drawn empty there)
            tags = [p.tag for p in self.panes() if p.view.t1 > p.store.span_ns or p.view.t0 < 0]
            if tags:
                past, empty = f" ({', '.join(tags)} past {'its' if len(tags) == 1 else 'their'} trace", ": empty there"
        searching = "".join(f"searching /{pane.search.pattern}/ in {pane.tag}… (esc stops) · "
                            for pane in self.panes() if pane.search.running)
        # Short labels: the figures are what the line is for (long ones pushed them off at 160 columns).
        figures = " · ".join(f"{STATUS_LABEL[m.name]} A {format_value(m.a, m.unit)}, B {format_value(m.b, m.unit)} "
                             f"({format_pct(m.pct)})" for m in c.metrics if m.name in STATUS_LABEL)
        status = self.query_one("#status", Static)
        close = ")" if past else ""
        line = f"{searching}{lock}{why}{past}{empty}{close} · {figures}"
        if len(line) > status.size.width - 2:  # the explanations go first (the help has them)
            line = f"{searching}{lock}{past}{close} · {figures}"
        status.update(plain(line))

    # ---- actions (the panes have the timeline's) ----------------------------------------------
    def key_node(self, on: str):
        return self.active_pane() if on == "view" else next(iter(self.query(CompareView)), None)

    def action_tree_diff(self) -> None:
        panes = self.panes()
        if not panes:
            return
        from vtui.ui.screens.tree_diff import TreeDiffScreen  # noqa: PLC0415

        a, b = self.paths
        self.push_screen(TreeDiffScreen(panes[0].store, panes[1].store, f"A {a.name} · B {b.name}"))

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_sections(self.screen), title="vtui compare keys"))

    def action_lock(self) -> None:
        """Cycle: locked at the first steps (if both traces have steps) → at the starts → unlocked."""
        order = ["steps", "starts", None] if self._steps_in_both() else ["starts", None]
        current = self.lock_mode if self.lock_mode in order else None
        self.lock_mode = order[0] if current is None else order[order.index(current) + 1]
        pane = self.active_pane()
        if pane is not None:
            self.move(pane, self._fit_both(pane))
            self._pane_changed(pane)  # the other pane takes this one's window, moved by the fit or not
        self.notify({"steps": "Windows locked: first steps line up", "starts": "Windows locked at the trace starts",
                     None: "Windows unlocked"}[self.lock_mode], timeout=2)

    def action_tab(self, index: int) -> None:
        for tabs in self.query("#tabs").results(TabbedContent):
            tabs.active = TABS[index]
            target = self.query_one(f"#{TABS[index]}").query("DataTable, Timeline, StepByStep")
            if target:
                target.first().focus()  # keys go to the shown view, not a hidden one

    def stop_work(self) -> None:
        for pane in self.panes():
            pane.search.stop()
