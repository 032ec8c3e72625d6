"""Compare mode: two timelines (keys move the focused one, or both once `l` locks them), tables in tabs."""

from __future__ import annotations

import re

from textual.widgets import DataTable, Static, TabbedContent

from tests.helpers import QWEN, STEPLOOP, settle
from vtui.analysis.report.compare import METRICS
from vtui.cli import main
from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range
from vtui.ui.screens.compare import CompareApp
from vtui.ui.timeline.lanes import Timeline


def _first_step_start(store, pattern: str) -> int:
    """Start of the earliest slice whose name matches: plain Python over the store's rows."""
    return min(int(store.slices.start_ns[r]) for r in range(len(store.slices)) if re.fullmatch(pattern, store.name(r)))


async def test_compare_app_lock_and_tabs():
    a, b = load_trace(STEPLOOP), load_trace(QWEN)
    app = CompareApp(STEPLOOP, QWEN, stores=(a, b))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, pauses=2)
        assert app.load_error is None and app.comparison is not None
        pa, pb = app.panes()
        scale = max(a.span_ns, b.span_ns)  # one time scale for both traces
        assert (pa.view.t0, pa.view.t1) == (0, scale) and (pb.view.t0, pb.view.t1) == (0, scale)
        await pilot.press("w")  # unlocked: only A (focused) zooms
        assert pa.view.span < a.span_ns and (pb.view.t0, pb.view.t1) == (0, scale)
        # Lock at the first steps (both traces have steps): B's window is A's, shifted so that
        # the first steps line up; then both move together.
        step_a, step_b = app.comparison.a.first_step_ns, app.comparison.b.first_step_ns
        # B's step is ProfilerStep#6: its forward pass is Qwen2Model's (no LM head, no generate()),
        # a forward and no prefill, so not a step of its own
        assert step_a == _first_step_start(a, "engine_step") and step_b == _first_step_start(b, r"^ProfilerStep#\d+$")
        shift = step_b - step_a
        assert shift != 0  # the test really checks a shift
        await pilot.press("l")
        assert app.lock_mode == "steps"  # (A's window is wider than B: B cannot lie inside its trace)
        assert (pb.view.t0, pb.view.t1) == (pa.view.t0 + shift, pa.view.t1 + shift)
        await pilot.press("w", "d")  # moves keep the offsets exactly (past B's end too, drawn empty)
        assert (pb.view.t0, pb.view.t1) == (pa.view.t0 + shift, pa.view.t1 + shift)
        assert "first steps" in str(app.query_one("#status", Static).render())
        await pilot.press("l")  # lock at the trace starts: B takes A's window as it is
        assert app.lock_mode == "starts" and (pb.view.t0, pb.view.t1) == (pa.view.t0, pa.view.t1)
        await pilot.press("w", "d")
        assert (pb.view.t0, pb.view.t1) == (pa.view.t0, pa.view.t1)
        assert pa.view.span < a.span_ns * 0.6 ** 3 + 2
        await pilot.press("tab")  # focus B; still locked: moving B moves A
        assert pb in app.focused.ancestors_with_self
        await pilot.press("s")
        assert (pa.view.t0, pa.view.t1) == (pb.view.t0, pb.view.t1)
        before = (pa.view.t0, pa.view.t1)
        await pilot.press("l", "0")  # unlocked again: only B shows its whole trace
        assert not app.locked and (pb.view.t0, pb.view.t1) == (0, scale) and (pa.view.t0, pa.view.t1) == before
        assert len(app.query(Timeline)) == 2
        pa.query_one(Timeline).post_message(Timeline.RangeDragged(30e6, 10e6))  # a drag leftwards on A
        await pilot.pause()
        assert (pa.view.t0, pa.view.t1) == (10_000_000, 30_000_000) and (pb.view.t0, pb.view.t1) == (0, scale)

        await pilot.press("2")
        assert app.query_one(TabbedContent).active == "tab-metrics"
        metrics = app.query_one("#metrics-table", DataTable)
        assert metrics.row_count == len(METRICS) and app.focused is metrics
        gpu = next(i for i, m in enumerate(METRICS) if m.key == "gpu_busy_pct")
        assert str(metrics.get_row_at(gpu)[1]) == "—" and str(metrics.get_row_at(gpu)[2]).endswith("%")
        await pilot.press("3")
        ops = app.query_one("#ops-table", DataTable)
        assert ops.row_count == len(app.comparison.ops) > 0
        await pilot.press("4")
        assert app.query_one("#steps-table", DataTable).row_count == 32  # A's 32 steps beside B's one
        await pilot.press("1", "q")
    assert app.return_code == 0


async def test_compare_app_reports_a_bad_trace_in_the_app(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json at all")
    app = CompareApp(STEPLOOP, bad)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, pauses=2)
        assert app.load_error and "bad.json" in app.load_error
        assert "Could not compare" in str(app.query_one("#error", Static).render())
        await pilot.press("q")
    assert app.return_code == 1


def test_two_paths_with_a_missing_one_is_one_line(capsys):
    assert main([str(STEPLOOP), "missing-b.json"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vtui: error:") and "missing-b.json" in err and "\n" not in err


def test_three_paths_is_one_line(capsys):
    import pytest

    with pytest.raises(SystemExit) as exc:
        main(["a.json", "b.json", "c.json"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vtui: error:") and "\n" not in err


async def test_compare_app_without_the_cache_writes_no_entry(tmp_path):
    """`vtui A B --no-cache` loads both traces without reading or writing the index cache."""
    from vtui.store import cache as trace_cache

    app = CompareApp(STEPLOOP, QWEN, cache=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, pauses=2)
        assert app.load_error is None and app.comparison is not None
        await pilot.press("q")
    assert trace_cache.list_entries() == []
    app = CompareApp(STEPLOOP, QWEN)  # with the cache (the default): both get an entry
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, pauses=2)
        await pilot.press("q")
    assert len(trace_cache.list_entries()) == 2


async def test_relock_keeps_b_inside_its_trace_and_compare_has_help_and_details():
    a, b = load_trace(STEPLOOP), load_trace(QWEN)
    assert a.span_ns > 3 * b.span_ns  # A much longer than B
    app = CompareApp(STEPLOOP, QWEN, stores=(a, b))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, pauses=2)
        pa, pb = app.panes()
        late = int(a.span_ns * 0.6)
        app.move(pa, lambda v: v.set_window(late, late + 40_000_000))  # 40 ms of A far past B's end
        assert pa.view.t0 > b.span_ns
        await pilot.press("l", "l")  # locked at the starts
        assert app.lock_mode == "starts"
        assert 0 <= pb.view.t0 and pb.view.t1 <= b.span_ns and pb.view.span == pa.view.span
        assert (pb.view.t0, pb.view.t1) == (pa.view.t0, pa.view.t1)  # A slid back: the lock holds at once
        timeline = pb.query_one(Timeline)
        drawn = "".join(seg.text for y in range(1, 6) for seg in timeline.render_line(y)[timeline.label_width + 1:])
        assert drawn.strip()  # B's rows show slices, not blanks
        await pilot.press("right")  # arrows select in the focused trace; its details line names the slice
        await pilot.pause()
        assert pa.view.selected >= 0
        details = str(pa.query_one(".pane-details", Static).render())
        assert a.name(pa.view.selected) in details
        await pilot.press("question_mark")
        await pilot.pause()
        assert "Lock times" in str(app.screen.query_one("#help-text").render())
        await pilot.press("escape")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert any("Lock times" in t for t in titles) and any("insights" in t.lower() for t in titles)
        await pilot.press("i")  # Insights of the focused trace
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert type(app.screen).__name__ == "InsightsScreen" and app.screen.store is a


async def test_search_in_compare_mode_acts_on_the_focused_trace():
    a, b = load_trace(STEPLOOP), load_trace(QWEN)
    app = CompareApp(STEPLOOP, QWEN, stores=(a, b))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, pauses=2)
        pa, pb = app.panes()
        await pilot.press("slash")
        app.screen.query_one("#prompt-input").value = "ENGINE_STEP"  # a capital: exact case, no match
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert pa.view.found is not None and pa.view.found.count == 0
        await pilot.press("slash")
        app.screen.query_one("#prompt-input").value = "engine_step"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        steps = [r for r in range(len(a.slices)) if a.name(r) == "engine_step"]
        assert pa.view.found.count == len(steps) and pa.view.selected == steps[0]
        await pilot.press("n")
        assert pa.view.selected == steps[1] and pb.view.found is None and pb.view.selected < 0
        assert f"2/{len(steps)}" in str(pa.query_one(".pane-title", Static).render())


async def test_compare_app_opens_the_differential_call_tree():
    from vtui.analysis.calltree.tree import build_tree
    from vtui.ui.screens.tree_diff import TreeDiffScreen

    a = load_trace(QWEN)
    app = CompareApp(QWEN, QWEN, stores=(a, load_trace(QWEN)))
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot, pauses=2)
        await pilot.press("F")
        await settle(pilot, pauses=2)
        screen = app.screen
        assert isinstance(screen, TreeDiffScreen)
        # Same trace on both sides: every path is "both" with Δ +0 ns, nothing coloured.
        paths = len(build_tree(a))
        assert len(screen.lines) == paths + 2 and all("+0 ns" in line for line in screen.lines[2:])
        body = screen.query_one("#td-body", Static).render()
        assert "Qwen2DecoderLayer" in str(body)
        await pilot.press("escape")
        await settle(pilot, pauses=2)
        assert not isinstance(app.screen, TreeDiffScreen)


def test_differential_lines_are_red_where_b_took_longer_and_green_where_shorter():
    from vtui.analysis.calltree.diff import diff_trees
    from vtui.analysis.calltree.tree import build_tree
    from vtui.present.tree_text import diff_lines
    from vtui.ui.screens.tree_diff import FASTER, SLOWER, coloured

    store = load_trace(QWEN)
    half = int(store.span_ns) // 2
    longer = coloured(diff_lines(diff_trees(build_tree(store, time_range(store, 0, half)), build_tree(store))))
    shorter = coloured(diff_lines(diff_trees(build_tree(store), build_tree(store, time_range(store, 0, half)))))
    assert {str(s.style) for s in longer.spans} >= {SLOWER} and FASTER not in {str(s.style) for s in longer.spans}
    assert {str(s.style) for s in shorter.spans} >= {FASTER} and SLOWER not in {str(s.style) for s in shorter.spans}
