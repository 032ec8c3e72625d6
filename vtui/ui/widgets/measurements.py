"""The measure pane: every kept measurement between two marked events."""

from __future__ import annotations

from rich.text import Text

from vtui.analysis.slices.measure import Measurement
from vtui.ui.colours import NOTE
from vtui.ui.timeline.view import ViewState
from vtui.ui.trace_text import visible
from vtui.ui.widgets.indented_wrap import HangingText
from vtui.units import format_duration

KEY_STYLE = NOTE
MAX_TRACKS = 6  # per measurement, the busiest tracks between the marks


class MeasurePane(HangingText, can_focus=True):
    def show(self, view: ViewState) -> None:
        text = Text()
        if view.mark_a >= 0:
            text.append(f"A = {visible(view.store.name(view.mark_a))} — select another event and press m for B\n", style="bold")
        if not view.measurements:
            text.append("No measurements. m marks the selected event as A, m again as B; M clears.", style="dim")
        for n, m in enumerate(view.measurements, 1):
            self._one(text, n, m, view.mark_names.get((m.a, m.b), ("?", "?")))
        self.update(text)

    @staticmethod
    def _one(text: Text, n: int, m: Measurement, names: tuple[str, str]) -> None:
        d = format_duration
        text.append(f"#{n} ", style="bold")
        text.append(f"A {visible(names[0])[:40]} {d(m.a[0])}–{d(m.a[1])}  B {visible(names[1])[:40]} "
                    f"{d(m.b[0])}–{d(m.b[1])}\n")
        text.append("   start→start ", style=KEY_STYLE)
        text.append(d(m.start_to_start))
        text.append("  end→start ", style=KEY_STYLE)
        text.append(d(m.gap) + (" (overlap)" if m.gap < 0 else ""))
        text.append("  end→end ", style=KEY_STYLE)
        text.append(d(m.end_to_end))
        text.append("  overlap ", style=KEY_STYLE)
        text.append(d(m.overlap))
        text.append("  union ", style=KEY_STYLE)
        text.append(d(m.union) + "\n")
        length = max(m.interval[1] - m.interval[0], 1)
        what = "in the gap" if m.gap > 0 else "across A∪B"
        for act in sorted(m.activity, key=lambda a: -a.busy_ns)[:MAX_TRACKS]:
            text.append(f"   {visible(act.label)[:48]:<48} ", style=KEY_STYLE)
            text.append(f"{act.events:>6,} events  busy {d(act.busy_ns)} ({100 * act.busy_ns / length:.0f}% {what})\n")
