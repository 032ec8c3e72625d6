"""Compare mode does what its status line says: locked at the first steps, both windows keep the
same offsets from each trace's first step (also past the shorter trace's end); searches say
"searching…", stop on esc and report their errors as the main view does."""

from __future__ import annotations

import pytest

from tests.app.screen import read_screen
from tests.helpers import X, search_until_cancelled, settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.screens.compare import CompareApp

A_FIRST_US, B_FIRST_US = 100_000, 100_025  # first steps 25 µs apart, as in the report


def _trace(first_us: int, steps: int) -> list[dict]:
    events = [X("warmup", 0, first_us - 10)]
    events += [X("engine_step", first_us + i * 30_000, 25_000) for i in range(steps)]
    events.append(X("a" * 40 + "b", first_us, 10))  # a name a runaway regex chews on
    return events


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pair")
    a = write_trace(folder, _trace(A_FIRST_US, 30), "a.json")  # 1 s
    b = write_trace(folder, _trace(B_FIRST_US, 6), "b.json")  # 0.28 s: ends long before A
    return a, b, load_trace(a, cache=False), load_trace(b, cache=False)


async def test_the_step_lock_keeps_the_same_offsets_from_each_first_step(pair):
    a, b, sa, sb = pair
    app = CompareApp(a, b, stores=(sa, sb))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 2)
        pa, pb = app.panes()
        await pilot.press("l", "w", "w", "w", "d", "d", "d", "d", "d", "d")
        await settle(pilot)
        assert app.lock_mode == "steps"
        first_a = min(int(sa.slices.start_ns[r]) for r in range(len(sa.slices)) if sa.name(r) == "engine_step")
        first_b = min(int(sb.slices.start_ns[r]) for r in range(len(sb.slices)) if sb.name(r) == "engine_step")
        assert first_b - first_a == 25_000
        assert pa.view.t0 > sb.span_ns  # A's window now lies past B's end
        assert pb.view.t0 - first_b == pa.view.t0 - first_a and pb.view.span == pa.view.span
        screen = "\n".join(read_screen(app).text)
        assert "locked at the first steps" in screen and "B past its trace" in screen


async def test_compare_search_says_searching_stops_and_reports_errors(pair, monkeypatch):
    a, b, sa, sb = pair
    app = CompareApp(a, b, stores=(sa, sb))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, 2)
        await pilot.press("slash", *"(foo", "enter")
        await settle(pilot)
        messages = [n.message for n in app._notifications]
        assert any("(foo" in m and "(?i)" not in m for m in messages), messages  # the user's pattern, no (?i)
        started = search_until_cancelled(monkeypatch)
        await pilot.press("slash", *"slow", "enter")
        await pilot.pause()
        assert started.wait(30)
        await pilot.pause()
        assert "searching /slow/ in A" in "\n".join(read_screen(app).text)
        await pilot.press("escape")  # esc stops it at once
        await settle(pilot)
        assert not app.panes()[0].search.running and app.panes()[0].view.found is None
        assert "searching" not in "\n".join(read_screen(app).text)


async def test_compare_metrics_keep_delta_pct_and_better_at_80x24(pair):
    a, b, sa, sb = pair
    app = CompareApp(a, b, stores=(sa, sb))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, 2)
        await pilot.press("2")
        await settle(pilot, 2)
        text = read_screen(app).text
        header = next(line for line in text if line.lstrip().startswith("metric"))
        assert "Δ%" in header and "better" in header
        wall = next(line for line in text if line.lstrip().startswith("wall time"))
        # A 1.0 s, B 0.28 s: Δ% and the winner on the row, computed here from the event lists
        span_a, span_b = A_FIRST_US + 29 * 30_000 + 25_000, B_FIRST_US + 5 * 30_000 + 25_000  # µs, the last step's end
        assert f"{100 * (span_b - span_a) / span_a:.1f}%" in wall and wall.rstrip().endswith("B")
