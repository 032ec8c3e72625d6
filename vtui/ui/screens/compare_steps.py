"""Compare mode's step-by-step view: for one step kind, an aligned step of A above the matching
step of B on one clock (from each step's start), kernels matched by colour, the changed, added and
removed ones marked; below, what differs in this pair and the kind's per-operator difference.
``c`` picks the kind, ``n`` / ``N`` walk the pairs from the biggest difference down."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from vtui.analysis.diff.engine import RunsDiff
from vtui.analysis.diff.pairs import ADDED, CHANGED, MATCHED, REMOVED, Mark, PairView, pair_view
from vtui.ui.keys import bindings
from vtui.ui.trace_text import plain
from vtui.units import format_duration as fd

PALETTE = ("cyan", "magenta", "yellow", "blue", "bright_cyan", "bright_magenta", "bright_blue", "bright_yellow")
GLYPH = {MATCHED: "█", CHANGED: "▓", REMOVED: "×", ADDED: "+"}
MARK_STYLE = {REMOVED: "bold red", ADDED: "bold green"}
LIST_ROWS = 8  # pair differences and operators listed


def _signed(ns: float) -> str:
    return ("+" if ns > 0 else "−" if ns < 0 else "") + fd(abs(ns))


def lane(marks: list[Mark], span: int, width: int) -> Text:
    """One step's kernels as ``width`` cells on a clock of ``span`` ns (a later kernel over an earlier)."""
    cells: list[tuple[str, str] | None] = [None] * width
    for m in marks:
        lo = min(width - 1, m.start_ns * width // span)
        hi = max(lo + 1, min(width, -(-(m.start_ns + m.dur_ns) * width // span)))
        style = MARK_STYLE.get(m.status) or PALETTE[m.colour % len(PALETTE)]
        for c in range(lo, hi):
            cells[c] = (GLYPH[m.status], style)
    out = Text(no_wrap=True)
    for cell in cells:
        out.append(*(cell or ("·", "dim")))
    return out


class StepByStep(Static, can_focus=True):
    """The view; its keys act while it has the focus."""

    BINDINGS = bindings("bystep")

    def __init__(self, d: RunsDiff, **kwargs) -> None:
        super().__init__(**kwargs)
        self.d = d
        both = [k.kind for k in d.kinds if k.matched]
        self.kinds = both
        self.kind_index = next((i for i, k in enumerate(both) if k == "decode"), 0)
        self.rank = 0

    @property
    def kind(self) -> str | None:
        return self.kinds[self.kind_index] if self.kinds else None

    def current(self) -> PairView | None:
        return pair_view(self.d, self.kind, self.rank) if self.kind else None

    def action_kind(self) -> None:
        if self.kinds:
            self.kind_index = (self.kind_index + 1) % len(self.kinds)
            self.rank = 0
            self.refresh()

    def action_walk(self, step: int) -> None:
        view = self.current()
        if view is not None:
            self.rank = (self.rank + step) % view.pairs
            self.refresh()

    def render(self) -> Text:
        view = self.current()
        if view is None:
            return Text("no step kind with steps in both traces (no aligned steps to compare)", style="dim")
        width = max(20, (self.size.width or 100) - 4)
        span = view.span_ns
        out = Text(no_wrap=True)
        out.append(plain(f"{view.kind} · pair {view.rank + 1}/{view.pairs} by |Δ| (n/N; c: kind {self.kinds_text()})"
                         f" · A step {view.a_step} {fd(view.a_ns)} · B step {view.b_step} {fd(view.b_ns)}"
                         f" · Δ {_signed(view.b_ns - view.a_ns)}\n"))
        out.append(f"   0{fd(span).rjust(width - 1)}\n", style="dim")
        out.append("A  ")
        out.append_text(lane(view.a, span, width))
        out.append("\nB  ")
        out.append_text(lane(view.b, span, width))
        out.append("\n   █ matched (a kernel and its match share a colour)  ▓ changed  × removed (A only)  + added (B only)\n",
                   style="dim")
        if not view.aligned:
            out.append("this pair's kernels are too many to align: drawn unmatched\n", style="yellow")
        out.append_text(self._pair_lines(view))
        out.append_text(self._op_lines(view.kind))
        return out

    def kinds_text(self) -> str:
        return " ".join(f"[{k}]" if i == self.kind_index else k for i, k in enumerate(self.kinds))

    def _pair_lines(self, view: PairView) -> Text:
        out = Text(no_wrap=True)
        changed = sorted((m for m in view.a if m.status == CHANGED), key=lambda m: -abs(m.delta_ns))
        rows = [("▓", m.name, _signed(m.delta_ns), "") for m in changed]
        rows += [("×", m.name, _signed(-m.dur_ns), "bold red") for m in view.a if m.status == REMOVED]
        rows += [("+", m.name, _signed(m.dur_ns), "bold green") for m in view.b if m.status == ADDED]
        out.append(f"\nThis pair: {len(changed)} changed, {sum(m.status == REMOVED for m in view.a)} removed, "
                   f"{sum(m.status == ADDED for m in view.b)} added\n", style="bold")
        for glyph, name, delta, style in rows[:LIST_ROWS]:
            out.append(f"  {glyph} ", style=style or None)
            out.append_text(plain(f"{delta:>10}  {name[:90]}\n"))
        if len(rows) > LIST_ROWS:
            out.append(f"  … {len(rows) - LIST_ROWS} more\n", style="dim")
        return out

    def _op_lines(self, kind: str) -> Text:
        ops = [o for o in self.d.kernels.by_op if o.kind == kind]
        out = Text(no_wrap=True)
        out.append(f"\nBy operator, {kind} steps (Δ per step: matched + added − removed)\n", style="bold")
        if not ops:
            out.append("  no operator's kernels differ\n", style="dim")
        for o in ops[:LIST_ROWS]:
            out.append_text(plain(f"  {_signed(o.per_step_ns):>10}  {o.op[:80]}\n"))
        return out
