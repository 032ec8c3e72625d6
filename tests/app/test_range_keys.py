"""A typed range (g: a time, 12ms:25.5ms, or a step number), undo of range changes (u), and esc
that leaves a pane without throwing away the range built there."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import X, answer_prompt, settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.timeline.lanes import Timeline

STEP_US, PERIOD_US = 20_000, 30_000  # engine_step i runs [i·30 ms, i·30 ms + 20 ms)


def _events() -> list[dict]:
    return [X("engine_step", i * PERIOD_US, STEP_US) for i in range(10)] + [X("aten::mm", 1000, 500)]


def _status(app) -> str:
    return next(line for line in read_screen(app).text if "window" in line and "zoom" in line)


async def test_typed_range_step_number_undo_and_esc(tmp_path):
    path = write_trace(tmp_path, _events())
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(140, 36)) as pilot:
        await settle(pilot)
        v = app.view
        await pilot.press("g")
        await answer_prompt(pilot, "12ms:25.5ms")
        await settle(pilot)
        assert v.range == (12_000_000, 25_500_000)
        assert "range 12 ms – 25.5 ms (13.5 ms)" in _status(app)
        assert v.t0 <= 12_000_000 and v.t1 >= 25_500_000 and v.span < 20_000_000  # framed
        await pilot.press("g")
        await answer_prompt(pilot, "#2")  # the third step, numbered from 0
        await settle(pilot)
        assert v.range == (2 * PERIOD_US * 1000, (2 * PERIOD_US + STEP_US) * 1000)
        await pilot.press("u")  # back to the typed range
        await settle(pilot)
        assert v.range == (12_000_000, 25_500_000)
        # esc in the aggregation table leaves the pane; it does not clear the range
        await pilot.press("2")
        await settle(pilot, 2)
        assert not app.query_one(Timeline).has_focus
        await pilot.press("escape")
        await settle(pilot)
        assert app.query_one(Timeline).has_focus and v.range == (12_000_000, 25_500_000)
        await pilot.press("escape")  # on the timeline: cleared, and said how to get it back
        await settle(pilot)
        assert v.range is None and "range" not in _status(app)
        assert any("u brings it back" in n.message for n in app._notifications)
        await pilot.press("u")
        await settle(pilot)
        assert v.range == (12_000_000, 25_500_000) and "range 12 ms – 25.5 ms" in _status(app)
        await pilot.press("g")
        await answer_prompt(pilot, "#99")
        await settle(pilot)
        assert any("#99 does not exist" in n.message and "10" in n.message for n in app._notifications)
