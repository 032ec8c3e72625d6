"""The Insights screen's serving part: the figures by kind, a step-time chart coloured by kind (own
Rich rendering: one column per step, eighth blocks), and the CUDA/HIP graph lines. Numbers come
from `vtui.analysis.steps.serving` / `graphs`; the lines from `vtui.present.serving_text`."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.widgets import Static

from vtui.analysis.report.insights import Insights
from vtui.analysis.steps.serving import ServingReport
from vtui.present.serving_text import graph_lines, serving_lines
from vtui.ui import colours
from vtui.ui.trace_text import visible
from vtui.ui.widgets.indented_wrap import HangingText
from vtui.units import format_duration as fd

KIND_STYLE = {"prefill": colours.FIRST_STEP, "decode": colours.SUCCESS, "mixed": colours.WARNING,
              "unknown": colours.MUTED}
BLOCKS = " ▁▂▃▄▅▆▇█"
CHART_HEIGHT = 8
CHART_WIDTH = 100  # columns at most: more steps share a column (its tallest step, and that step's kind)


def kind_style(kind: str) -> str:
    return KIND_STYLE.get(kind, colours.TEXT)


def chart_columns(sv: ServingReport, width: int = CHART_WIDTH) -> tuple[np.ndarray, list[str]]:
    """Per column: the step time it shows (the longest of its steps) and that step's kind."""
    durs = np.array([s.dur_ns for s in sv.steps], dtype=np.int64)
    kinds = [s.kind for s in sv.steps]
    if len(durs) <= width:
        return durs, kinds
    bounds = np.linspace(0, len(durs), width + 1).astype(np.int64)
    vals, ks = [], []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        k = a + int(np.argmax(durs[a:b]))
        vals.append(int(durs[k]))
        ks.append(kinds[k])
    return np.array(vals, dtype=np.int64), ks


def step_chart(sv: ServingReport, height: int = CHART_HEIGHT, width: int = CHART_WIDTH) -> Text:
    """Step time by kind as a bar chart of ``height`` rows (eighth blocks at the top of each bar)."""
    vals, kinds = chart_columns(sv, width)
    out = Text()
    if not len(vals):
        return out
    top = max(int(vals.max()), 1)
    eighths = np.rint(vals / top * height * 8).astype(np.int64)
    label_w = 11
    for row in range(height, 0, -1):
        label = fd(top) if row == height else (fd(0) if row == 1 else "")
        out.append(f"{label:>{label_w}} ┤", style=colours.NOTE)
        for v, kind in zip(eighths.tolist(), kinds):
            fill = min(max(v - (row - 1) * 8, 0), 8)
            out.append(BLOCKS[fill], style=kind_style(kind))
        out.append("\n")
    out.append(" " * label_w + " └" + "─" * len(vals) + "\n", style=colours.NOTE)
    out.append(" " * (label_w + 2))
    for kind in ("prefill", "decode", "mixed", "unknown"):
        if kind in kinds:
            out.append("█ ", style=kind_style(kind))
            out.append(f"{kind}  ", style=colours.TEXT)
    return out


def _lines(title: str, lines: list[str], kinds: ServingReport | None = None) -> Text:
    text = Text(title + "\n", style=colours.HEADING)
    for line in lines:
        style = colours.TEXT
        if kinds is not None:
            word = line.strip().split(" ", 1)[0]
            style = KIND_STYLE.get(word, colours.TEXT)
        text.append(visible(line) + "\n", style=style)  # lines quote names from the trace
    return text


def serving_widgets(ins: Insights) -> list[Static]:
    """The Serving section, its chart and the graphs section (empty list when there are no steps)."""
    sv = ins.serving
    out: list[Static] = []
    if sv.present:
        lines = [ln for ln in serving_lines(sv) if not ln.startswith("    ") or ln.startswith("    phases")]
        lines = [ln for ln in lines if not ln.startswith("  steps (") and not ln.startswith("  step time by kind")]
        out.append(HangingText(_lines("Serving (prefill / decode)", lines, sv), id="ins-serving"))
        if sv.kinds_known:
            out.append(Static(Text("Step time by kind", style=colours.HEADING), classes="ins-chart-title"))
            out.append(Static(step_chart(sv), id="ins-serving-chart"))
    if ins.graphs.present:
        out.append(HangingText(_lines("CUDA/HIP graphs", graph_lines(ins.graphs)), id="ins-graphs"))
    return out
