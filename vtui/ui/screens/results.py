"""Search results by name (key L): count and summed time per matching name; enter jumps."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static

from vtui.analysis.slices.search import SearchResult
from vtui.store.store import TraceStore
from vtui.ui.keys import bindings
from vtui.ui.trace_text import visible
from vtui.units import format_duration


def results_by_name(store: TraceStore, found: SearchResult) -> list[tuple[int, int, int, int]]:
    """(name id, count, total ns, longest row) per matching name, longest total first (numpy, no row loop)."""
    rows = found.rows
    if not len(rows):
        return []
    s = store.slices
    dur = s.end_ns[rows] - s.start_ns[rows]
    ids, inverse = np.unique(s.name_id[rows], return_inverse=True)
    counts = np.bincount(inverse)
    totals = np.bincount(inverse, weights=dur)
    order = np.lexsort((dur, inverse))  # per name, its longest match last
    last = np.flatnonzero(np.r_[inverse[order][1:] != inverse[order][:-1], True])
    longest = rows[order[last]]
    out = [(int(i), int(c), int(t), int(r)) for i, c, t, r in zip(ids, counts, totals, longest)]
    return sorted(out, key=lambda x: -x[2])


class ResultsScreen(ModalScreen[int | None]):
    """Returns the slice row to jump to (the chosen name's longest match), or None."""

    KEY_SCOPE = "results"  # its section of the help
    BINDINGS = bindings("results")

    def __init__(self, store: TraceStore, found: SearchResult) -> None:
        super().__init__()
        self.store, self.found = store, found
        self.rows = results_by_name(store, found)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(visible(f"/{self.found.pattern}/: {self.found.count:,} matches in {len(self.rows)} "
                                      f"name{'s' if len(self.rows) != 1 else ''}, "
                                      f"{format_duration(self.found.total_ns)} in all · enter jumps, esc closes"),
                              style="bold"))
            options = [Text(f"{c:>8,} {format_duration(t):>11}  ") + Text(visible(self.store.strings[i]))
                       for i, c, t, _ in self.rows]
            yield OptionList(*options, id="results-list")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.rows[event.option_index][3])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
