"""Details of the selected slice: name, times, parent chain, args and flows."""

from __future__ import annotations

import json

from rich.text import Text
from textual import work
from textual.css.query import NoMatches

from vtui.analysis.base.launched import launch_of
from vtui.analysis.slices.details import needs_pairing, slice_details
from vtui.store.store import TraceStore
from vtui.ui.colours import NOTE
from vtui.ui.trace_text import visible
from vtui.ui.widgets.indented_wrap import HangingText
from vtui.ui.workers import deliver
from vtui.units import format_duration

KEY_STYLE = NOTE


class DetailsPanel(HangingText, can_focus=True):
    _shown: tuple[int, int] = (0, -1)  # (id of the store, row) shown last

    def show_slice(self, store: TraceStore, row: int) -> None:
        self._shown = (id(store), row)
        # Text objects, not markup: names and args are arbitrary user data.
        if row < 0:
            self.update(Text("No slice selected — arrows or a click select one; ? shows every key.", style="dim"))
            return
        d = slice_details(store, row, pair=False)  # pairing launches by correlation may take a while: a worker's
        if needs_pairing(store, row):
            self._pair(store, row)
        text = Text()
        text.append(visible(d.name), style="bold")
        text.append(visible(f" · {d.category or '—'} · {d.track_title}") + "\n")
        text.append(
            f"start {format_duration(d.start_ns)} (abs {d.abs_start_us:,.3f} µs) · dur {format_duration(d.dur_ns)}"
            f" · self {format_duration(d.self_ns)} · depth {d.depth}\n"
        )
        if d.parents:
            text.append("parents: ", style=KEY_STYLE)
            text.append(visible(" ‹ ".join(d.parents[:6])) + (" ‹ …" if len(d.parents) > 6 else "") + "\n")
        for link in d.flows[:4]:
            arrow, key = ("→", "]") if link.direction == "out" else ("←", "[")
            # a launch paired by its correlation id, no flow event: "launch ←" / "launched →"
            label = "flow" if link.via == "flow" else ("launched" if link.direction == "out" else "launch")
            text.append(f"{label} {arrow} ", style=KEY_STYLE)
            text.append(visible(f"{link.name} on {link.track_title}") + f" at {format_duration(link.ts_ns)} ({key})\n")
        if len(d.flows) + d.more_links > 4:
            text.append(f"… {len(d.flows) + d.more_links - 4:,} more\n", style="dim")
        for k, v in list(d.args.items())[:12]:
            value = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            text.append(visible(f"{k} "), style=KEY_STYLE)
            text.append(visible(value[:200]) + "\n")
        text.rstrip()
        self.update(text)

    @work(thread=True, exclusive=True, group="details-pair", exit_on_error=False)
    def _pair(self, store: TraceStore, row: int) -> None:
        """Pair the launches with their GPU work by correlation (once per store), then show the
        slice again with them."""
        launch_of(store)
        deliver(self.app, self._paired, store, row)

    def _paired(self, store: TraceStore, row: int) -> None:
        if self._shown != (id(store), row):  # another slice by now: its show had the pairing
            return
        try:  # the pane tells all that draw the selection: the details, the flow connectors
            self.query_ancestor("TimelinePane").act(lambda v: v.note_pairing())  # by name: the pane module imports the widgets
        except NoMatches:
            self.show_slice(store, row)
