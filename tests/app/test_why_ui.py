"""The Insights screen's roofline and critical-path sections, and the timeline's critical-path key."""

from __future__ import annotations

import numpy as np
from textual.widgets import Static

from tests.helpers import QWEN, settle
from vtui.analysis.critical import analyse_critical
from vtui.analysis.steps import analyse_steps
from vtui.load.trace import load_trace
from vtui.safe_text import safe_field
from vtui.ui.app import VtuiApp
from vtui.ui.insights import InsightsScreen


async def test_insights_shows_the_roofline_worst_first_and_the_critical_path():
    store = load_trace(QWEN)
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(180, 50)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, InsightsScreen)
        text = str(screen.query_one("#ins-roofline", Static).render())
        assert "NVIDIA H100 SXM" in text and "989.5" in text and "datasheet" in text
        # Worst first: the op with the most GPU time above its roofline, worked out here from the
        # report's FLOPs, bytes and GPU time with the H100's peaks.
        ops = screen.insights.roofline.ops

        def lost(o):
            peak = {"c10::BFloat16": 989.5, "float": 67.0}[o.dtype]
            return o.gpu_ns - max(o.flops / (peak * 1e3), o.bytes / 3.35e3)

        worst = max(ops, key=lost)
        rows = [ln for ln in text.splitlines() if ln.startswith("  aten::")]
        assert rows[0].startswith(f"  {safe_field(worst.name, 28):<28} ")
        crit = str(screen.query_one("#ins-critical", Static).render())
        assert "gpu-bound overall" in crit and "#0   gpu" in crit


async def test_critical_path_key_highlights_the_selected_steps_path():
    store = load_trace(QWEN)
    steps = analyse_steps(store)
    want = analyse_critical(store, steps.rows).steps[0].path_rows()
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        await pilot.press("C")  # nothing selected: a message, no highlight
        await pilot.pause()
        assert app.view.highlight is None
        app.view.select(int(steps.rows[0]))
        await pilot.press("C")
        await pilot.pause()
        lit = np.flatnonzero(app.view.highlight)
        assert np.array_equal(lit, want) and len(lit) > 100
        kernels = store.slices.cat_id[lit]
        assert any(store.strings[c] == "kernel" for c in kernels.tolist())
        await pilot.press("escape")
        assert app.view.highlight is None
