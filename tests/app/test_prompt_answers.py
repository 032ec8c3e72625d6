"""What the app answers to a prompt's bad or odd input: a regex error in the user's own terms, a
time past the trace's end."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import X, answer_prompt, settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


async def test_a_bad_regex_is_reported_in_the_users_own_terms(tmp_path):
    path = write_trace(tmp_path, [X("engine_step", 0, 10), X("aten::mm", 2, 3)])
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await answer_prompt(pilot, "(foo")
        await settle(pilot)
        messages = [n.message for n in app._notifications]
        assert any(m.startswith("invalid regex '(foo'") and "missing )" in m for m in messages), messages
        assert not any("(?i)" in m for m in messages)
        assert "searching" not in "\n".join(read_screen(app).text)


async def test_go_to_a_time_past_the_end_says_so(tmp_path):
    """`g 900ms` on a 500 µs trace: the window goes to the end and a note says the time was past it."""
    path = write_trace(tmp_path, [X("work", 0, 500)])
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await answer_prompt(pilot, "900ms")
        await settle(pilot, 2)
        said = [n.message for n in app._notifications]  # (a toast is drawn on its own layer)
        assert "900 ms is past the trace's end (0 – 500 µs): showing its end" in said, said
        assert app.view.t0 <= app.view.store.span_ns <= app.view.t1
