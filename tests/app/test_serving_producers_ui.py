"""The Insights screen (`i`) on the producers of tests/serving_cases.py: the serving and graph lines
drawn say the step counts by kind, TTFT, TPOT and graph replays that plain Python finds in the JSON."""

from __future__ import annotations

import re
import statistics

import pytest
from textual.widgets import Static

from tests import serving_cases as sc
from tests.core.test_serving_producers import CASES, _raw_steps
from tests.helpers import raw_events, settle
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.screens.insights import InsightsScreen
from vtui.units import format_duration as fd


@pytest.mark.parametrize("make", CASES, ids=lambda f: f.__name__)
async def test_insights_screen_serving_lines(make, tmp_path):
    case: sc.Case = make()
    path = case.write(tmp_path)
    events = raw_events(path)
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(170, 50)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, InsightsScreen) and screen.insights is not None
        serving = str(screen.query_one("#ins-serving", Static).render())
        found = screen.query("#ins-graphs")
        graphs = str(found.first(Static).render()) if found else ""
    kinds = [t.kind for t in case.steps]
    if set(kinds) == {"unknown"}:  # nothing tells the kind: no TTFT/TPOT is made up
        assert f"{len(kinds)} steps of unknown kind" in serving and not re.search(r"TPOT \d", serving)
        return
    counts = {k: kinds.count(k) for k in ("prefill", "decode", "mixed")}
    assert f"{counts['prefill']} prefill · {counts['decode']} decode · {counts['mixed']} mixed" in serving
    _, spans = _raw_steps(case, events, screen.insights.serving.steps[0].start_ns)
    durs = [b - a for a, b in spans]
    decode = [d for d, k in zip(durs, kinds) if k == "decode"]
    assert f"TPOT {fd(statistics.median(decode))}" in serving
    first = next((i for i, k in enumerate(kinds) if k != "decode"), None)
    if case.run_start and first is not None:
        assert f"TTFT {fd(spans[first][1] - spans[0][0])}" in serving
    else:
        assert "TTFT —" in serving
    kernels = sum(1 for e in events if e.get("cat") == "kernel" and any(
        e["args"]["correlation"] == g["args"]["correlation"] for g in events
        if g.get("ph") == "X" and re.fullmatch(r"(cuda|hip)GraphLaunch", g["name"])))
    if case.graph_launches:
        assert f"{case.graph_launches} launches · {kernels} kernels" in graphs
    else:
        assert graphs == ""  # no graph section without graph launches
