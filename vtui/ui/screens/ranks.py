"""The ranks screen (key `K`): a row per rank with its per-step bars (the straggler marked), then
the collectives; enter on a collective shows it on every rank's timeline."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Footer, OptionList, Static

from vtui.analysis.ranks.analyse import Matched, RanksReport, analyse_ranks
from vtui.analysis.ranks.tables import rank_tables
from vtui.present.bars import step_bars
from vtui.store.store import TraceStore
from vtui.ui import colours
from vtui.ui.keys import bindings
from vtui.ui.screens.computed import ComputedScreen
from vtui.ui.trace_text import visible
from vtui.units import format_duration as fd

STEP_BAR = 6  # cells per step bar
MAX_STEPS = 12  # steps drawn per rank row


LABEL = 12  # "▶ rank 12345"


def _suffix(e, mark: bool) -> str:
    return f"│ exposed comm {fd(e.exposed_ns)} ({e.exposed_pct:.1f} %)" + ("  ◀ straggler" if mark else "")


def steps_shown(report: RanksReport, width: int | None = None) -> int:
    """How many step bars a rank row draws: at most MAX_STEPS, and within ``width`` columns with
    the row's label and exposed time (else the row wraps and the bars no longer line up); at least 1."""
    if width is None:
        return MAX_STEPS
    straggler = report.straggler.rank if report.straggler else None
    suffix = max((len(_suffix(e, straggler == r.rank)) for r, e in zip(report.ranks, report.exposed)), default=0)
    return max(1, min(MAX_STEPS, (width - LABEL - suffix) // (STEP_BAR + 1)))


def rank_rows(report: RanksReport, width: int | None = None) -> list[Text]:
    """One line per rank: per step, a bar of the time it waited in the step's collectives (scaled
    to the longest wait of any rank and step; the straggler's stay empty), then its exposed time.
    ``width``: the columns the rows must fit (fewer steps drawn on a narrow screen)."""
    straggler = report.straggler.rank if report.straggler else None
    steps = report.steps[:steps_shown(report, width)]
    longest = max((w for s in steps for w in s.waits_ns if w is not None), default=0)
    rows = []
    for p, (r, e) in enumerate(zip(report.ranks, report.exposed)):
        mark = straggler == r.rank
        row = Text(f"{'▶' if mark else ' '} rank {r.rank:<5}", style=colours.ERROR if mark else colours.TEXT)
        for s in steps:
            w = s.waits_ns[p]
            bar = step_bars(np.array([w or 0, longest]), STEP_BAR)[0] if longest else ""
            row.append("│", style=colours.TEXT)
            row.append(bar.ljust(STEP_BAR), style=colours.WARNING)
        row.append(_suffix(e, False), style=colours.TEXT)
        if mark:
            row.append("  ◀ straggler", style=colours.ERROR)
        rows.append(row)
    return rows


def bars_title(report: RanksReport, width: int | None = None) -> Text:
    steps = report.steps[:steps_shown(report, width)]
    longest = max((w for s in steps for w in s.waits_ns if w is not None), default=0)
    return Text(f"wait in collectives per step (a full bar: {fd(longest)}), {len(steps)} of {len(report.steps)} steps",
                style=colours.TEXT)


def summary(report: RanksReport) -> Text:
    s = report.straggler
    text = Text(f"{len(report.ranks)} ranks · {len(report.steps)} steps (aligned by {report.steps_aligned_by}) · "
                f"{len(report.collectives)} collectives · clocks: {report.alignment.method}", style=colours.HEADING)
    if s is not None:
        text.append(f"\nstraggler: rank {s.rank}, last at {s.collectives_last} collectives in {s.steps_last} steps; "
                    f"the others lose {fd(s.lost_ns)}", style=colours.ERROR)
    if report.missing_ranks:
        text.append(f"\nmissing ranks: {len(report.missing_ranks)}", style=colours.TEXT)
    note = next((c.busbw_note for c in report.collectives if c.busbw_note and c.algbw_gbps is not None), None)
    if note:
        text.append(f"\nbusbw –: {note}", style=colours.TEXT)
    for w in report.warnings:  # names from the trace (process groups): shown, never interpreted
        text.append("\n" + visible(f"warning: {w}"), style=colours.WARNING)
    return text


COMPACT_BELOW = 104  # columns: a narrower screen gets the short form of a collective's line (one line, not two)


def collective_line(c, compact: bool = False) -> Text:
    bw = "–" if c.busbw_gbps is None else f"{c.busbw_gbps:8.2f}"
    if compact:
        return Text(visible(f"{c.name:<12} {c.group or '?':>3} #{c.seq:<3} lat {fd(c.latency_ns):>9} "
                            f"skew {fd(c.skew_ns):>10} last {c.last_rank:<3} {bw} GB/s"))
    return Text(visible(f"{c.name:<15} {c.group or '?':>6} #{c.seq:<4} latency {fd(c.latency_ns):>10}  "
                        f"skew {fd(c.skew_ns):>10}  last rank {c.last_rank:<4} busbw {bw} GB/s"))


class RanksScreen(ComputedScreen[np.ndarray | None]):
    """Closes with the chosen collective's kernel on every rank (slice rows), or None."""

    KEY_SCOPE = "ranks"  # its section of the help
    BINDINGS = bindings("ranks")
    STATUS_WIDGET = "#ranks-summary"
    FAILED = "could not compare the ranks"
    COMPUTING = "Ranks: computing…"

    def __init__(self, store: TraceStore, align: str = "epoch") -> None:
        super().__init__()
        self.store, self.align = store, align
        self.report: RanksReport | None = None
        self.matched: Matched | None = None
        self._compact: bool | None = None  # the collectives' lines are in the short form (a narrow screen)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.COMPUTING, style=colours.HEADING), id="ranks-summary")
            yield Static("", id="ranks-rows")
            yield OptionList(id="ranks-collectives")
        yield Footer()

    def compute(self) -> tuple[RanksReport, Matched]:
        return analyse_ranks(rank_tables(self.store), self.align)

    def show(self, result: tuple[RanksReport, Matched]) -> None:
        self.report, self.matched = result
        self.query_one("#ranks-summary", Static).update(summary(self.report))
        self._draw_rows()
        self._fill_collectives(0)
        self.query_one("#ranks-collectives", OptionList).focus()

    def _fill_collectives(self, highlighted: int | None) -> None:
        if self.report is None:
            return
        compact = self.size.width < COMPACT_BELOW
        if compact == self._compact and highlighted is None:
            return  # the lines already have the form for this width
        self._compact = compact
        options = self.query_one("#ranks-collectives", OptionList)
        keep = options.highlighted if highlighted is None else highlighted
        options.clear_options()
        options.add_options([collective_line(c, compact) for c in self.report.collectives]
                            or [Text("no NCCL/RCCL collectives")])
        options.highlighted = keep if keep is not None else 0

    def _draw_rows(self) -> None:
        if self.report is None:
            return
        width = self.size.width - 1
        rows = Text("\n").join([bars_title(self.report, width), *rank_rows(self.report, width)])
        self.query_one("#ranks-rows", Static).update(rows)

    def on_resize(self) -> None:
        self._draw_rows()
        self._fill_collectives(None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if self.matched is None or not self.report or not self.report.collectives:
            return
        rows = self.matched.row[self.matched.coll == event.option_index]
        if len(rows):
            self.dismiss(rows)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_align(self) -> None:
        self.align = "collective" if self.align == "epoch" else "epoch"
        self.start()
