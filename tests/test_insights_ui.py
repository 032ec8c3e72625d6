"""The Insights screen: key `i` opens it over the current window, `r` sets the step regex, escape returns."""

from __future__ import annotations

from textual.widgets import Input, OptionList, Static

from vtui.demo import demo_trace_path
from vtui.store.load import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.insights import InsightsScreen


async def _settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def test_insights_screen_opens_on_i_and_follows_the_window():
    store = load_trace(demo_trace_path())
    app = VtuiApp(demo_trace_path(), store=store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, InsightsScreen)
        ins = screen.insights
        assert ins is not None and (ins.t0, ins.t1) == (0, store.span_ns)
        assert ins.steps.present and ins.steps.count == 32  # the demo is the 32-step loop
        plot = screen.query_one("#ins-plot", OptionList)
        assert plot.option_count == 32 and "█" in str(plot.get_option_at_index(0).prompt)
        assert "no GPU activity in this trace" in str(screen.query_one("#ins-findings", Static).render())

        await pilot.press("r")  # a user regex: the phases become the steps
        assert isinstance(app.screen.query_one(Input), Input)
        await pilot.press(*"^execute_model$", "enter")
        await _settle(pilot)
        assert screen.insights.steps.source == "user" and screen.insights.steps.count == 32
        await pilot.press("0", "0", "0")  # recomputing while a result is on its way: one plot, no clash
        await _settle(pilot)
        assert len(screen.query("#ins-plot")) == 1 and screen.insights.steps.count == 32

        await pilot.press("down", "down", "down", "enter")  # step #3: back to the timeline, selected and framed
        assert not isinstance(app.screen, InsightsScreen)
        row = int(screen.insights.steps.rows[3])
        assert app.view.selected == row and app.view.t0 <= store.slices.start_ns[row] < app.view.t1
        await pilot.press("0", "i")
        await _settle(pilot)
        await pilot.press("escape")
        assert not isinstance(app.screen, InsightsScreen)
        await pilot.press("w", "w", "i")  # zoomed in: insights over the window only
        await _settle(pilot)
        v = app.view
        assert (app.screen.insights.t0, app.screen.insights.t1) == (max(v.t0, 0), min(v.t1, store.span_ns))
        assert app.screen.insights.steps.count < 32
