"""The SQL pane (`:`): a query typed, its rows drawn in the table, enter on a row jumps there."""

from __future__ import annotations

import pytest

from tests.helpers import QWEN, X, settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp

pytest.importorskip("duckdb")

from vtui.ui.screens.query import QueryScreen, jump_of  # noqa: E402


async def run_sql(pilot, sql: str) -> QueryScreen:
    await pilot.press("colon")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, QueryScreen)
    screen.query_one("#query-input").value = sql
    screen.query_one("#query-input").focus()
    await pilot.press("enter")
    await screen.workers.wait_for_complete()
    await settle(pilot)
    return screen


def drawn(screen: QueryScreen) -> list[list[str]]:
    from textual.widgets import DataTable

    table = screen.query_one(DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_query_rows_are_drawn_and_enter_jumps_to_the_slice(qwen_store):
    s = qwen_store.slices
    longest = int((s.end_ns - s.start_ns).argmax())
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        screen = await run_sql(pilot, "SELECT id, ts, dur, name FROM slice ORDER BY dur DESC, id LIMIT 3")
        rows = drawn(screen)
        assert rows[0] == [str(longest), str(int(s.start_ns[longest])), str(int(s.end_ns[longest] - s.start_ns[longest])),
                           qwen_store.name(longest)]
        assert len(rows) == 3 and "3 rows" in str(screen.query_one("#query-status").render())
        await pilot.press("enter")  # the table has the focus, on the first row
        await settle(pilot)
        assert not isinstance(app.screen, QueryScreen) and app.view.selected == longest


async def test_enter_on_a_time_row_goes_there_and_errors_are_one_line(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await pilot.press("w", "w", "w", "w", "w")  # zoomed in: a window that can be centred anywhere
        screen = await run_sql(pilot, "SELEC 1")
        status = str(screen.query_one("#query-status").render())
        assert status.startswith("error: ") and "syntax error" in status and "\n" not in status
        screen = await run_sql(pilot, "SELECT 40000000 AS ts")
        await pilot.press("enter")
        await settle(pilot)
        v = app.view
        assert not isinstance(app.screen, QueryScreen) and v.t0 <= 40_000_000 <= v.t1
        assert abs((v.t0 + v.t1) / 2 - 40_000_000) <= max(1, v.span * 0.01)


async def test_trace_text_in_cells_is_escaped(tmp_path):
    evil = "k\x1b]0;pwned\x07[bold]x[/]"
    store = load_trace(write_trace(tmp_path, [X(evil, 0, 10)]), cache=False)
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = await run_sql(pilot, "SELECT name FROM slice")
        assert drawn(screen) == [["k\\x1b]0;pwned\\x07[bold]x[/]"]]  # visible escapes, markup kept as text


def test_jump_of_prefers_a_slice_id_that_starts_at_ts(qwen_store):
    s = qwen_store.slices
    assert jump_of(qwen_store, ["id", "ts"], [5, int(s.start_ns[5])]) == ("slice", 5)
    assert jump_of(qwen_store, ["id", "ts"], [5, int(s.start_ns[5]) + 1]) == ("time", int(s.start_ns[5]) + 1)
    assert jump_of(qwen_store, ["slice_id", "delay"], [7, 3]) == ("slice", 7)
    assert jump_of(qwen_store, ["n"], [1]) is None


async def test_a_macro_made_in_the_pane_does_not_reach_the_next_query(tmp_path):
    store = load_trace(write_trace(tmp_path, [X("a", 0, 10), X("b", 20, 5), X("c", 30, 5)]), cache=False)
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await run_sql(pilot, "CREATE MACRO count_star() AS 42")
        await pilot.press("escape")
        await settle(pilot)
        screen = await run_sql(pilot, "SELECT count(*) AS n FROM slice")
        assert drawn(screen) == [["3"]]
