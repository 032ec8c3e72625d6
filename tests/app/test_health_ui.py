"""Trace health in the app: the W screen lists it beside the load warnings, and Insights says
what is in doubt above any figure (read from the rendered screen)."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.core.test_health import _loop
from tests.helpers import QWEN, load_events, settle
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


def _early_kernel_trace() -> list[dict]:
    ev = _loop()
    ev[[i for i, e in enumerate(ev) if e.get("cat") == "kernel"][0]]["ts"] -= 3000  # 3 ms before its launch
    return ev


async def test_w_shows_trace_health_with_examples(tmp_path):
    store = load_events(tmp_path, _early_kernel_trace())
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("W")
        await settle(pilot, 3)
        text = "\n".join(read_screen(app).text)
        assert "health: ERRORS" in text and "clock.device_before_launch" in text, text
        assert "starts before its launch: gemm_kernel" in text, text


async def test_w_on_a_clean_trace_says_nothing_is_in_doubt(tmp_path, open_app):
    async with open_app(load_events(tmp_path, _loop()), (100, 30)) as (app, pilot):
        await pilot.press("W")
        await settle(pilot, 3)
        assert read_screen(app).find("health: nothing found that puts a figure in doubt")


async def test_insights_says_what_is_in_doubt_first():
    store = load_trace(QWEN)
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot, 2)
        await settle(pilot, 2)
        screen = read_screen(app)
        line = screen.find("trace health: 1 problem(s) (missing.launch)")
        assert line, "\n".join(screen.text)
        assert line[0] < min(screen.find("Findings") or [99]), "\n".join(screen.text)


async def test_enter_on_a_health_example_sends_the_timeline_there(tmp_path):
    store = load_events(tmp_path, _early_kernel_trace())
    early = next(r for r in range(len(store.slices)) if store.strings[int(store.slices.name_id[r])] == "gemm_kernel")
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("W")
        await settle(pilot, 3)
        assert type(app.screen).__name__ == "WarningsScreen"
        await pilot.press("enter")  # the first example is highlighted: the kernel that starts before its launch
        await settle(pilot, 2)
        assert type(app.screen).__name__ != "WarningsScreen"
        view = app.query_one("MainPane").view
        assert view.selected == early, (view.selected, early)
        assert view.t0 <= int(store.slices.start_ns[early]) <= view.t1
        assert read_screen(app).find("gemm_kernel"), "\n".join(read_screen(app).text)
