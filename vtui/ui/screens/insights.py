"""The Insights screen (key `i`): findings, steps with a step-time plot, phases, operators, GPU,
memory, caches and Python overhead for the current window (or the whole trace)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, OptionList, Static

from vtui.analysis.gpu.jump_lists import OUTLIER_FACTOR, Gap, Outlier, gpu_idle_gaps, kernel_outliers
from vtui.analysis.report.insights import Insights, compute_insights
from vtui.analysis.why.findings import STEP_OPTION
from vtui.errors import UsageError
from vtui.present.bars import step_bars
from vtui.present.health_json import health_headline
from vtui.present.insights_text import gpu_lines, memory_lines, misc_lines, ops_lines, steps_lines
from vtui.present.serving_text import KIND_MARK
from vtui.present.why_text import critical_lines, roofline_lines
from vtui.regex_guard import compile_user
from vtui.store.slicetime import TimeRange, over, time_range
from vtui.store.store import TraceStore
from vtui.ui import colours
from vtui.ui.keys import bindings
from vtui.ui.screens.computed import ComputedScreen, Jump
from vtui.ui.screens.modals import PromptScreen
from vtui.ui.screens.serving_view import kind_style, serving_widgets
from vtui.ui.trace_text import plain, visible
from vtui.ui.widgets.indented_wrap import HangingText
from vtui.ui.widgets.scrollbars import whole_cell_scrollbars
from vtui.units import format_duration as fd

APP_STEP_OPTION = "press r for a step regex"
MAX_PLOT_ROWS = 200  # one bar per step up to here; longer runs are summarised


def step_plot_rows(ins: Insights, width: int = 48) -> list[Text]:
    """One bar per step: the first (prefill) in blue, spikes in red, the rest green. When the steps'
    kinds are known (serving annotations): coloured by kind, with the kind's spikes in red."""
    st = ins.steps
    if not st.present:
        return []
    durs = st.durations[:MAX_PLOT_ROWS]
    sv = ins.serving
    by_kind = sv.present and sv.kinds_known and len(sv.steps) == st.count
    if by_kind:
        spikes = {i for k in sv.kinds for i in k.spikes}
    else:
        spikes = set(st.trend.spikes if st.trend else [])
    rows = []
    for i, (d, bar) in enumerate(zip(durs.tolist(), step_bars(durs, width))):
        if by_kind:
            kind = sv.steps[i].kind
            style = colours.ERROR if i in spikes else kind_style(kind)
            row = Text(f"#{i:<4}{KIND_MARK[kind]} {fd(d):>11} ", style=colours.TEXT)
        else:
            style = colours.FIRST_STEP if i == 0 else (colours.ERROR if i in spikes else colours.SUCCESS)
            row = Text(f"#{i:<4}{fd(d):>11} ", style=colours.TEXT)
        row.append(bar, style=style)
        rows.append(row)
    return rows


def _section(title: str, lines: list[str]) -> Text:
    text = Text(title + "\n", style=colours.HEADING)
    text.append("\n".join(visible(line) for line in lines))  # lines quote names from the trace
    return text


def _cause(g: Gap) -> str:
    """Why the GPU was idle: CPU until the launch call, then what held the work."""
    if not g.queued_ns and not g.cpu_launch_ns:
        return g.held_by
    if not g.queued_ns:
        return f"waiting for the CPU {fd(g.cpu_launch_ns)}"
    held = "queued" if g.held_by == "queued" else f"behind {g.held_by}"
    return f"CPU {fd(g.cpu_launch_ns)}, then {held} {fd(g.queued_ns)}"


class InsightsScreen(ComputedScreen[Jump | None]):
    """Closes with where to go in the timeline: a step or an outlier (its slice row), a GPU idle gap
    (the op after it, and the gap's window); or None."""

    KEY_SCOPE = "insights"  # its section of the help
    BINDINGS = bindings("insights")
    TITLE_WIDGET = "#ins-title"
    FAILED = "could not compute insights"
    COMPUTING = "Computing insights…"

    def __init__(self, store: TraceStore, rng: TimeRange | None = None, title: str = "",
                 step_regex: str | None = None, capture: Path | None = None) -> None:
        """``capture``: vLLM's graph-capture trace of the same run (loaded here, in the worker)."""
        super().__init__()
        self.capture = capture
        self.gaps: list[Gap] = []
        self.outliers: list[Outlier] = []
        self.store = store
        rng = over(store, rng)
        self.range = rng if rng.span_ns > 0 else time_range(store)  # an empty range: the whole trace
        self.title_text = title
        self.step_regex = step_regex
        self.insights: Insights | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="ins-title")
        with VerticalScroll(id="ins-body"):
            yield Static(self.COMPUTING, id="ins-status")
        yield Footer()

    def title_line(self) -> str:
        scope = "whole trace" if self.range.whole else f"window {fd(self.range.t0)} – {fd(self.range.t1)}"
        step = f" · steps /{self.step_regex}/" if self.step_regex else ""
        capture = f" · capture {self.capture.name}" if self.capture is not None else ""
        return f"Insights · {self.title_text} · {scope} ({fd(self.range.span_ns)}){step}{capture}"

    def compute(self) -> tuple[Insights, list[Gap], list[Outlier]]:
        capture = None
        if self.capture is not None:
            from vtui.load.trace import load_trace  # noqa: PLC0415 — only with a capture

            capture = load_trace(self.capture)  # a bad file: its one line on this screen
        ins = compute_insights(self.store, self.range, self.step_regex, capture=capture,
                               capture_name=self.capture.name if self.capture is not None else "")
        return ins, gpu_idle_gaps(self.store, self.range), kernel_outliers(self.store, self.range)

    async def show_error(self, message: str) -> None:
        body = self.query_one("#ins-body")
        await body.remove_children()
        await body.mount(Static(plain(message, style=colours.ERROR)))

    async def show(self, result: tuple[Insights, list[Gap], list[Outlier]]) -> None:
        ins, gaps, outliers = result
        self.insights, self.gaps, self.outliers = ins, gaps, outliers
        body = self.query_one("#ins-body")
        await body.remove_children()
        findings = Text("Findings\n", style=colours.HEADING)
        for f in ins.findings:
            findings.append(f"[{f.severity}] ", style=colours.SEVERITY.get(f.severity, ""))
            findings.append(visible(f.message) + "\n")
            hint = f.hint.replace(STEP_OPTION, APP_STEP_OPTION)  # the app has a key, not the CLI's option
            findings.append(f"    → {visible(hint)}\n", style=colours.NOTE)
        widgets = [HangingText(findings, id="ins-findings"), HangingText(self._steps_text(ins), id="ins-steps")]
        headline = health_headline(ins.health)
        if headline:  # what cannot be trusted comes before any figure
            widgets.insert(0, Static(Text(visible(headline.replace("vtui info shows them", "W shows them")),
                                          style=colours.ERROR), id="ins-health"))
        if ins.steps.present:
            more = ins.steps.count - MAX_PLOT_ROWS
            note = f" (first {MAX_PLOT_ROWS} of {ins.steps.count})" if more > 0 else ""
            widgets.append(Static(Text(f"Step times{note} — enter jumps to a step in the timeline", style=colours.NOTE)))
            widgets.append(OptionList(*step_plot_rows(ins), id="ins-plot"))
        widgets += serving_widgets(ins)
        widgets += [HangingText(_section("Operators", ops_lines(ins)), id="ins-ops"),
                    HangingText(_section("GPU", gpu_lines(ins)), id="ins-gpu")]
        widgets += self._why(ins)
        widgets += self._lists()
        widgets += [
                    HangingText(_section("Memory", memory_lines(ins)), id="ins-memory"),
                    HangingText(_section("Caches and Python", misc_lines(ins)), id="ins-misc")]
        await body.mount(*widgets)
        whole_cell_scrollbars(body)  # (no ▁…▇ thumb ends at the right edge)
        if ins.steps.present:
            self.query_one("#ins-plot", OptionList).focus(scroll_visible=False)  # findings stay on top

    def _why(self, ins: Insights) -> list:
        """Roofline per op (worst % of roofline by GPU time first, with hints) and the critical path per step."""
        return [HangingText(_section("Roofline (GPU time above the roofline, most first)", roofline_lines(ins.roofline, 15)),
                       id="ins-roofline"),
                HangingText(_section("Critical path per step", critical_lines(ins.critical)), id="ins-critical")]

    def _lists(self) -> list:
        """GPU idle gaps and kernel outliers as lists to jump from (not only totals)."""
        out: list = []
        if self.gaps:
            out.append(Static(Text("GPU idle gaps, longest first (and what the launching thread was doing) — "
                                   "enter jumps", style=colours.HEADING)))
            out.append(OptionList(*(plain(f"{fd(g.length):>11} at {fd(g.start):>11} · {g.device} · then "
                                          f"{self.store.name(g.next_row)[:40]} · {_cause(g)} · CPU: {g.cpu}")
                                    for g in self.gaps),
                                  id="ins-gaps", classes="ins-list"))
        if self.outliers:
            out.append(Static(Text(f"Kernel outliers (≥{OUTLIER_FACTOR:g}× their median) — enter jumps",
                                   style=colours.HEADING)))
            out.append(OptionList(*(plain(f"{fd(o.dur):>11} vs median {fd(o.median):>11} · "
                                          f"{self.store.name(o.row)[:60]}") for o in self.outliers),
                                  id="ins-outliers", classes="ins-list"))
        return out

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        ins, k = self.insights, event.option_index
        if ins is None:
            return
        which = event.option_list.id
        if which == "ins-gaps":
            gap = self.gaps[k]
            self.dismiss(Jump(gap.next_row, (gap.start, gap.end)))
        elif which == "ins-outliers":
            self.dismiss(Jump(self.outliers[k].row))
        elif which == "ins-plot" and ins.steps.present:
            self.dismiss(Jump(int(ins.steps.rows[k])))

    def _steps_text(self, ins: Insights) -> Text:
        # The step times are the plot below (filtering the lines by their text dropped phases named "## …").
        return _section("Steps and phases", steps_lines(ins, times=False, step_option=APP_STEP_OPTION))

    # ---- actions ---------------------------------------------------------------------------
    def action_close(self) -> None:
        self.dismiss(None)

    def action_page(self, direction: int) -> None:
        """PgUp / PgDn scroll the findings, whichever list has the focus (as the help says)."""
        body = self.query_one("#ins-body", VerticalScroll)
        (body.scroll_page_down if direction > 0 else body.scroll_page_up)(animate=False)

    def action_section(self, direction: int) -> None:
        """] / [: the next (previous) section's heading to the top of the screen."""
        body = self.query_one("#ins-body", VerticalScroll)
        tops = sorted({w.virtual_region.y for w in body.children if isinstance(w, Static)})
        here = round(body.scroll_y)
        ahead = [y for y in tops if y > here] if direction > 0 else [y for y in tops if y < here]
        if ahead:
            body.scroll_to(y=ahead[0] if direction > 0 else ahead[-1], animate=False)

    async def action_whole(self) -> None:
        self.range = time_range(self.store)
        await self._restart()

    def action_step_regex(self) -> None:
        self.app.push_screen(PromptScreen("Regex for the step slices (empty: detect)", "engine_step|ProfilerStep",
                                          self.step_regex or ""), self._step_done)

    async def _step_done(self, text: str | None) -> None:
        if text is None:
            return
        try:
            if text.strip():
                compile_user(text.strip())
        except UsageError as exc:
            self.notify(visible(str(exc)), severity="error", markup=False)
            return
        self.step_regex = text.strip() or None
        await self._restart()

    async def _restart(self) -> None:
        self.refresh_title()
        body = self.query_one("#ins-body")
        await body.remove_children()
        await body.mount(Static(self.COMPUTING, id="ins-status"))
        self.start()
