"""Focus, help and keys as a newcomer meets them (Pilot)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from textual.widgets import DataTable, Input

from tests.helpers import QWEN, STACK, STEPLOOP, answer_prompt
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.timeline.lanes import FOCUS_STYLE, Timeline
from vtui.ui.timeline.tracklist import CURSOR, TrackList
from vtui.ui.timeline.view import LANE_CAP
from vtui.ui.widgets.aggregation import AggregationPane
from vtui.ui.widgets.details import DetailsPanel


async def test_number_keys_focus_the_pane_they_open(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        table = app.query_one("#agg-table", DataTable)
        assert app.focused is table
        pane = app.query_one(AggregationPane)
        before = (pane.by, pane.sort, pane.descending)
        await pilot.press("b", "o", "O")  # the table's own keys, shown in its header, now act
        assert (pane.by, pane.sort, pane.descending) != before
        assert pane.by == "cat" and pane.descending is not before[2]
        await pilot.press("1")
        await pilot.pause()
        assert app.focused is app.query_one(DetailsPanel)
        await pilot.press("3")
        await pilot.pause()
        assert app.focused is app.query_one("#measure-pane")


async def test_table_filter_shows_what_is_typed(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("slash", *"step")
        box = app.query_one("#agg-filter", Input)
        assert app.focused is box and box.value == "step"
        assert box.content_region.height >= 1  # a focused one-row Input must not be all border
        assert "step" in "".join(seg.text for seg in box.render_line(0))


async def test_focus_is_clearly_visible(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        timeline = app.query_one(Timeline)
        assert timeline.has_focus
        # The ruler's head shows it: in the track list beside the ruler (140 columns: the list is shown).
        tracks = app.query_one(TrackList)
        assert tracks.display and not timeline.labelled
        assert any(seg.style == CURSOR for seg in tracks.render_line(0))
        bottom = app.query_one("BottomPanes")
        calm = bottom.styles.border_top
        await pilot.press("2")
        await pilot.pause()
        await pilot.pause()
        assert not any(seg.style == CURSOR for seg in tracks.render_line(0))
        assert bottom.styles.border_top != calm
        await pilot.press("T")  # the list hidden: the timeline's own head shows the focus
        timeline.focus()
        await pilot.pause()
        assert timeline.labelled and any(seg.style == FOCUS_STYLE for seg in timeline.render_line(0))


async def test_help_fits_80x24_scrolls_and_shows_glyphs(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        box = app.screen.query_one("#help-scroll")
        assert box.region.right <= 80 and box.region.bottom <= 24
        text = str(app.screen.query_one("#help-text").render())
        lines = text.splitlines()
        assert not any(word in text for word in ("full stop", "square bracket", "question mark"))
        for key in (".", ",", "]", "[", "/", "?", "tab", "space", "p", "b", "o", "O", "ctrl+p"):
            assert any(line.split()[:1] == [key] or line.startswith(key + " ") for line in lines), key
        assert box.max_scroll_y > 0
        await pilot.press("pagedown")
        await pilot.pause()
        assert box.scroll_y > 0
        await pilot.press("escape")
        assert app.screen is app.screen_stack[0]


async def test_help_is_per_screen(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        text = str(app.screen.query_one("#help-text").render())
        assert "Insights" in text and "Step regex" in text
        assert "Zoom in" not in text  # the timeline's keys do not act there


async def test_palette_finds_actions_by_what_users_type(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for word, action in (("step", "Insights"), ("gpu", "Insights"), ("sync", "Insights"),
                             ("operator", "Aggregation"), ("export", "Export")):
            assert any(word in t.lower() and action in t for t in titles), word


async def test_ruler_and_status_readable_at_deep_zoom(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        v = app.view
        t = int(qwen_store.span_ns * 0.8)
        v.set_window(t, t + 2_000)
        app._update()
        await pilot.pause()
        ruler = "".join(seg.text for seg in app.query_one(Timeline).render_line(0))
        ticks = [part.split()[0] for part in ruler.split("┼")[1:-1]]  # the last may be cut at the edge
        assert len(ticks) >= 3 and len(set(ticks)) == len(ticks), ruler
        status = str(app.query_one("#status").render())
        window = status.split(" · ")[0]
        assert "+2 µs" in window and window.count(".") == 1 and len(window.split(".")[1].split()[0]) >= 4, status


@pytest.fixture(scope="module")
def stack_store():
    return load_trace(STACK)  # a Python thread 41 stack rows deep


async def test_track_list_hides_itself_on_narrow_terminals(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        tracks, timeline = app.query_one("#tracks"), app.query_one(Timeline)
        assert not tracks.display and timeline.size.width >= 78
        assert timeline.plot_width >= 60  # the label column shrinks too
        await pilot.press("T")
        await pilot.pause()
        assert tracks.display
        await pilot.press("T")
        await pilot.pause()
        assert not tracks.display
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.query_one("#tracks").display


async def test_deep_stack_track_folds_to_a_few_rows(stack_store):
    app = VtuiApp(STACK, store=stack_store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        v = app.view
        deep = max(stack_store.tracks, key=lambda t: t.lanes)
        assert deep.lanes > 30
        rows = [r for r in v.rows if r.track == deep.id and r.lane >= 0]
        assert len(rows) == LANE_CAP and rows[-1].more == deep.lanes - LANE_CAP
        gpu = [t for t in stack_store.tracks if t.kind == "gpu"]
        timeline = app.query_one(Timeline)
        # Every track now starts within the first screen of rows (the GPU stream is not buried).
        assert all(v.rows.index(next(r for r in v.rows if r.track == t.id)) < timeline.size.height for t in gpu)
        lister = app.query_one(TrackList)  # 160 columns: the track list names the rows
        text = "".join(seg.text for y in range(timeline.size.height) for seg in lister.render_line(y))
        assert f"+{deep.lanes - LANE_CAP} rows" in text
        s = stack_store.slices
        deepest = int(np.flatnonzero((s.track == deep.id) & (s.lane > LANE_CAP) & (s.parent >= 0))[0])
        v.select(deepest)  # selecting into the folded rows unfolds them
        assert v.row_of_selection() >= 0
        assert len([r for r in v.rows if r.track == deep.id and r.lane >= 0]) == deep.lanes
        await pilot.press("c")  # fold again: the selection moves up to a shown row
        assert len([r for r in v.rows if r.track == deep.id and r.lane >= 0]) == LANE_CAP
        assert v.selected >= 0 and v.row_of_selection() >= 0


async def test_window_stays_inside_the_trace(steploop_store):
    app = VtuiApp(STEPLOOP, store=steploop_store)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        v, total = app.view, steploop_store.span_ns
        await pilot.press("s", "s", "a", "a")
        assert (v.t0, v.t1) == (0, total)
        await pilot.press("w", "w", *["a"] * 8)
        assert v.t0 == 0
        await pilot.press(*["d"] * 20)
        assert v.t1 == total and v.t0 > 0
        await pilot.press("g", *"0ns", "enter")
        assert v.t0 == 0


async def test_jumps_bring_the_target_into_view(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        v = app.view
        s = qwen_store.slices
        gpu = {t.id for t in qwen_store.tracks if t.kind == "gpu"}
        kernels = [r for r in range(len(s)) if int(s.track[r]) in gpu]
        name = qwen_store.name(min(kernels, key=lambda r: int(s.end_ns[r] - s.start_ns[r])))
        await pilot.press("slash", *name.replace("(", ".").replace(")", ".")[:40], "enter")
        for _ in range(3):
            row = v.selected
            assert qwen_store.name(row) == name
            a, b = int(s.start_ns[row]), int(s.end_ns[row])
            assert v.t0 <= a and b <= v.t1  # on screen
            assert b - a >= v.span / v.cells  # at least a cell wide, not lost among its neighbours
            await pilot.press("n")
        f = qwen_store.flows
        v.set_window(0, 1_000)  # far from the flow's end: ] pans there
        v.select(int(f.src_slice[50]))
        await pilot.press("right_square_bracket")
        a, b = int(s.start_ns[v.selected]), int(s.end_ns[v.selected])
        assert v.selected == int(f.dst_slice[50]) and v.t0 <= a and b <= v.t1


async def _search(pilot, text: str) -> None:
    await pilot.press("slash")
    await answer_prompt(pilot, text)


async def test_search_smart_case_and_results_by_name(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        v = app.view
        names = [qwen_store.name(r) for r in range(len(qwen_store.slices))]
        await _search(pilot, "aten::mm")  # lower case: any case
        assert v.found.count == sum(1 for n in names if "aten::mm".lower() in n.lower())
        assert v.found.pattern == "aten::mm"
        await _search(pilot, "ATEN::MM")  # a capital: exact case
        assert v.found is not None and v.found.count == sum(1 for n in names if "ATEN::MM" in n)
        await _search(pilot, "aten::.*mm")
        expected: dict[str, list[int]] = {}
        for r, n in enumerate(names):
            if re.search("(?i)aten::.*mm", n):
                expected.setdefault(n, []).append(r)
        await pilot.press("L")
        await pilot.pause()
        screen = app.screen
        assert [(qwen_store.strings[i], c) for i, c, _, _ in screen.rows][:3] == sorted(
            ((n, len(rs)) for n, rs in expected.items()),
            key=lambda x: -sum(int(qwen_store.slices.end_ns[r] - qwen_store.slices.start_ns[r]) for r in expected[x[0]]))[:3]
        await pilot.press("down", "enter")  # the second name: jump to its longest match
        await pilot.pause()
        name = qwen_store.strings[screen.rows[1][0]]
        s = qwen_store.slices
        longest = max(expected[name], key=lambda r: int(s.end_ns[r] - s.start_ns[r]))
        assert app.screen is app.screen_stack[0] and v.selected == longest
        assert v.t0 <= s.start_ns[longest] and s.end_ns[longest] <= v.t1


async def test_runaway_regex_does_not_freeze_the_app(tmp_path):
    """(a+)+$ over a long name: the guarded engine (RE2) answers at once with no match; the
    search runs off the UI thread and esc still stops one that is running."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "ts": 0, "dur": 5, "name": "a" * 100_000 + "b", "pid": 1, "tid": 1},
        {"ph": "X", "ts": 6, "dur": 5, "name": "aaa", "pid": 1, "tid": 1}]}))
    app = VtuiApp(path)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("slash", *"(a+)+$", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.searching is None and app.view.found is not None
        assert app.view.found.count == 1  # "aaa" only: a plain-Python check says the same
        assert [n for n in ("a" * 100_000 + "b", "aaa") if n.endswith("a")] == ["aaa"]
        await pilot.press("slash", *"(?<=a)b", "enter")  # RE2 has no lookbehind: one line, no traceback
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert any("invalid regex '(?<=a)b'" in n.message and "\n" not in n.message for n in app._notifications)



async def test_backtracking_patterns_in_the_track_filter_tree_and_insights_answer_at_once(tmp_path):
    """t, F then / and i then r with (a+)+$ over names, threads and processes built to make Python's
    re backtrack for hours (2^40 steps): each answers at once with what a plain check says."""
    import faulthandler

    victim = "a" * 40 + "!"
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "ts": 0, "dur": 5, "name": victim, "pid": 1, "tid": 1},
        {"ph": "X", "ts": 6, "dur": 5, "name": "aaa", "pid": 1, "tid": 2},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": victim}}]}))
    faulthandler.dump_traceback_later(90, exit=True)  # a frozen UI thread would hang the run
    try:
        app = VtuiApp(path)
        async with app.run_test(size=(120, 30)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("t")
            await answer_prompt(pilot, "(a+)+$")
            # the filter text is "process thread kind": none ends in a run of a's
            assert app.view.visible_tracks() == []
            await pilot.press("t")
            await answer_prompt(pilot, "")
            await pilot.press("F")
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("slash")
            await answer_prompt(pilot, "(a+)+$")
            tree = app.screen
            marked = [tree.current.names[i] for i in np.flatnonzero(tree.view.marked)]
            assert marked == ["aaa"]  # plain Python: the names ending in "a"
            await pilot.press("escape")
            await pilot.pause()
            await pilot.press("i")
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("r")
            await answer_prompt(pilot, "(a+)+$")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert app.screen.step_regex == "(a+)+$"
    finally:
        faulthandler.cancel_dump_traceback_later()
