"""The Insights screen's serving part: figures by kind, the step-time chart coloured by kind, the
step plot coloured by kind, and the graph lines; what is drawn is checked, not only that it opens."""

from __future__ import annotations

import statistics

from textual.widgets import OptionList, Static

from tests.core.test_serving import LOOP, synthetic_loop, true_steps
from tests.helpers import settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui import colours
from vtui.ui.app import VtuiApp
from vtui.ui.screens.insights import InsightsScreen
from vtui.ui.screens.serving_view import KIND_STYLE, step_chart
from vtui.units import format_duration as fd


def _own(true):
    """Each step's own time: from its start, or the previous steps' end while their GPU work still ran."""
    return [e - max(a, max([x for _, _, x in true[:i]], default=a)) for i, (a, _, e) in enumerate(true)]


def _rgb(hex_colour: str) -> str:
    """A palette colour as the drawn Content spells it."""
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r},{g},{b})"


def _spans_by_style(text) -> dict[str, str]:
    out: dict[str, str] = {}
    for span in text.spans:
        out[str(span.style)] = out.get(str(span.style), "") + text.plain[span.start:span.end]
    return out


async def test_serving_section_chart_and_kind_colours(tmp_path):
    events, _ = synthetic_loop()
    path = write_trace(tmp_path, events)
    store = load_trace(path, cache=False)
    app = VtuiApp(path, store=store)
    from rich.console import Console

    console = Console()
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, InsightsScreen) and screen.insights is not None
        serving = str(screen.query_one("#ins-serving", Static).render())
        # steps end with their GPU work (the kernels run 800 µs behind the annotations), and the screen says so
        decode = [d for d, (n, _, m, _, _) in zip(_own(true_steps()), LOOP) if m and not n]
        assert f"TPOT {fd(statistics.median(decode))}" in serving
        assert "a step ends when its GPU work ends: the later of its annotation's end and the end of the device " \
               "work it launched" in serving
        assert f"TTFT {fd(round(LOOP[0][4] * 1000))}" in serving and "steady state: steps #" in serving
        chart = screen.query_one("#ins-serving-chart", Static).render()
        styles = _spans_by_style(chart)
        # one column per step: prefill, decode and mixed columns each in their kind's colour
        assert _rgb(KIND_STYLE["decode"]) in styles and _rgb(KIND_STYLE["mixed"]) in styles
        assert _rgb(KIND_STYLE["prefill"]) in styles and "decode" in chart.plain and "mixed" in chart.plain
        # what is drawn is step_chart's text; its bottom row has one column per step, in that step's kind colour
        drawn = step_chart(screen.insights.serving)
        assert drawn.plain == chart.plain
        lines = drawn.plain.split("\n")
        bottom = next(i for i in range(len(lines) - 1, -1, -1) if "┤" in lines[i])
        offset = sum(len(ln) + 1 for ln in lines[:bottom]) + lines[bottom].index("┤") + 1
        kinds = [("prefill" if n and not m else "mixed" if n else "decode") for n, _, m, _, _ in LOOP]
        for col, kind in enumerate(kinds):
            ch = drawn.plain[offset + col]
            assert ch != " " and str(drawn.get_style_at_offset(console, offset + col).color.name) == KIND_STYLE[kind]
        plot = screen.query_one("#ins-plot", OptionList)
        mixed = next(i for i, (n, _, m, _, _) in enumerate(LOOP) if n and m)
        row = plot.get_option_at_index(mixed).prompt
        assert " M " in row.plain and str(row.spans[-1].style) == KIND_STYLE["mixed"]
        spike = screen.insights.serving.kind("decode").spikes[0]
        assert str(plot.get_option_at_index(spike).prompt.spans[-1].style) == colours.ERROR
        graphs = str(screen.query_one("#ins-graphs", Static).render())
        assert "1 launches · 3 kernels" in graphs
