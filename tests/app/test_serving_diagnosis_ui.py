"""The Insights screen says what `vtui insights` says on the serving shapes of 2026 engines: steps that
end with their GPU work (and the definition, in words), a blocking copy as the headline with sync
points marked blocking or ordering; read off the rendered screen."""

from __future__ import annotations

import statistics

from textual.widgets import Static

from tests.core.test_serving_diagnosis import _true_steps, piecewise_events, sglang_decode_events
from tests.helpers import settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.screens.insights import InsightsScreen
from vtui.units import format_duration as fd


def _own(true):
    """Each step's own time: from its start, or the previous steps' end while their GPU work still ran."""
    return [e - max(a, max([x for _, _, x in true[:i]], default=a)) for i, (a, _, e) in enumerate(true)]


async def test_piecewise_steps_end_with_the_gpu_on_screen(tmp_path):
    events = piecewise_events()
    true = _true_steps(events)
    path = write_trace(tmp_path, events)
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(180, 50)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, InsightsScreen) and screen.insights is not None
        serving = str(screen.query_one("#ins-serving", Static).render())
        ttft, cpu = true[0][2] - true[0][0], true[0][1] - true[0][0]
        assert f"TTFT {fd(ttft)} (annotation alone {fd(cpu)})" in serving
        assert f"TPOT {fd(statistics.median(_own(true)[1:]))}" in serving
        assert ("a step ends when its GPU work ends: the later of its annotation's end and the end of the device "
                f"work it launched ({len(true)} of {len(true)} steps end after the annotation)") in serving
        steps = str(screen.query_one("#ins-steps", Static).render())
        assert f"{len(true)} of {len(true)} steps end after the annotation" in steps


async def test_blocking_copy_headline_and_sync_kinds_on_screen(tmp_path):
    path = write_trace(tmp_path, sglang_decode_events())
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(180, 50)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, InsightsScreen) and screen.insights is not None
        findings = str(screen.query_one("#ins-findings", Static).render())
        first = next(line for line in findings.splitlines() if line.strip().startswith("["))
        assert "step #0: 463 ms of its annotation's 465 ms" in first and "hipMemcpyWithStream" in first
        ops = str(screen.query_one("#ins-ops", Static).render())
        assert "hipMemcpyWithStream ×1 463 ms (blocks)" in ops and "hipStreamWaitEvent ×1 10 µs (orders)" in ops
