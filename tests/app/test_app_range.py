"""In the app: range, aggregation pane, search, measure and export driven by keys."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.helpers import QWEN, answer_prompt, raw_events, settle
from vtui.analysis.slices.aggregate import aggregate
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.widgets.aggregation import AggregationPane


async def test_range_keys_and_aggregation_follow_the_range(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        v = app.view
        await pilot.press("right")  # select the first slice
        s = qwen_store.slices
        first = v.selected
        await pilot.press("r")
        assert v.range == (int(s.start_ns[first]), int(s.end_ns[first]))
        await pilot.press("2")
        await pilot.pause()
        pane = app.query_one(AggregationPane)
        expected = aggregate(qwen_store, v.analysis_range(), v.visible_track_ids())
        assert pane.agg is not None and pane.agg.slices == expected.slices
        assert [r.key for r in pane.shown] == [r.key for r in expected.rows]
        assert "range" in str(app.query_one("#status").render())
        # shift+left / shift+right set the edges at the selected slice.
        await pilot.press("escape")  # from the pane: back to the timeline, the range kept
        assert v.range is not None
        await pilot.press("escape")  # on the timeline: cleared
        assert v.range is None
        await pilot.press("right")
        a = v.selected
        await pilot.press("shift+left")
        await pilot.press("full_stop", "full_stop", "full_stop")
        b = v.selected
        await pilot.press("shift+right")
        assert v.range == (int(s.start_ns[a]), max(int(s.end_ns[b]), int(s.start_ns[a])))
        # the table follows: grouping key b, sort key o
        await pilot.press("2")
        await pilot.pause()
        pane.query_one("#agg-table").focus()
        await pilot.press("b")
        assert pane.by == "cat" and pane.agg.by == "cat"
        await pilot.press("o")
        assert pane.sort == "self"
        selves = [r.self_ns for r in pane.shown]
        assert selves == sorted(selves, reverse=True)
        # enter on a row highlights its slices and jumps to the longest one
        await pilot.press("enter")
        await pilot.pause()
        assert v.highlight is not None and v.highlight.sum() == pane.shown[0].count
        assert v.highlight[v.selected]


async def test_search_highlights_and_steps_in_time_order(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        v = app.view
        await pilot.press("slash")
        await answer_prompt(pilot, "aten::addmm")
        n = sum(1 for e in raw_events(QWEN) if e.get("ph") == "X" and e["name"] == "aten::addmm")
        assert v.found is not None and v.found.count == n
        assert int(v.highlight.sum()) == n
        starts = []
        for _ in range(4):
            starts.append(int(qwen_store.slices.start_ns[v.selected]))
            assert qwen_store.name(v.selected) == "aten::addmm"
            await pilot.press("n")
        assert starts == sorted(starts) and len(set(starts)) == 4
        await pilot.press("N")
        assert int(qwen_store.slices.start_ns[v.selected]) == starts[-1]
        assert f"{n:,} matches" in str(app.query_one("#status").render())
        await pilot.press("slash")
        await answer_prompt(pilot, "(")  # a bad regex: a message, state unchanged
        assert v.found.count == n
        await pilot.press("escape")
        assert v.highlight is None and v.found is None


async def test_measure_two_marks(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        v = app.view
        await pilot.press("right")
        a = v.selected
        await pilot.press("m")
        assert v.mark_a == a
        await pilot.press("right", "right")
        b = v.selected
        await pilot.press("m")
        assert v.mark_a == -1 and len(v.measurements) == 1
        m = v.measurements[0]
        s = qwen_store.slices
        assert m.a == (int(s.start_ns[a]), int(s.end_ns[a])) and m.b == (int(s.start_ns[b]), int(s.end_ns[b]))
        assert m.gap == int(s.start_ns[b]) - int(s.end_ns[a])
        shown = str(app.query_one("#measure-pane").render())
        assert "start→start" in shown
        assert f"A {qwen_store.name(a)[:40]} " in shown and f"B {qwen_store.name(b)[:40]} " in shown
        await pilot.press("M")
        assert len(v.measurements) == 0


async def test_export_range_and_table_from_keys(qwen_store, tmp_path):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        v = app.view
        v.set_range(qwen_store.span_ns // 4, qwen_store.span_ns // 2)
        out = tmp_path / "range.json"
        await pilot.press("e")
        await pilot.pause()
        default = Path(app.screen.query_one("#prompt-input").value)
        assert default.parent == QWEN.parent  # the default export sits next to the trace
        await answer_prompt(pilot, str(out))
        await app.workers.wait_for_complete()
        exported = load_trace(out)
        expected = aggregate(qwen_store, v.analysis_range())
        assert len(exported.slices) == expected.slices
        before = out.read_bytes()
        v.set_range(qwen_store.span_ns // 2, qwen_store.span_ns)  # another range: an overwrite would change the file
        assert aggregate(qwen_store, v.analysis_range()).slices != expected.slices
        await pilot.press("e")
        await answer_prompt(pilot, str(out))  # exists: refused, file unchanged
        await app.workers.wait_for_complete()
        assert any("end the name with !" in n.message and "--force" not in n.message for n in app._notifications)
        assert out.read_bytes() == before
        expected = aggregate(qwen_store, v.analysis_range())
        table = tmp_path / "table.json"
        await pilot.press("x")
        await answer_prompt(pilot, str(table))
        rows = json.loads(table.read_text())
        assert [r["name"] for r in rows] == [r.key for r in aggregate(qwen_store, v.analysis_range(), v.visible_track_ids()).rows]
        assert np.isclose(sum(r["total_ns"] for r in rows), sum(r.total_ns for r in expected.rows))


async def test_timeline_keys_do_nothing_under_another_screen(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        v = app.view
        span = v.span
        await pilot.press("question_mark")  # help is open
        await pilot.press("w", "w")
        assert v.span == span
        await pilot.press("escape", "w")
        assert v.span < span


async def test_aggregation_follows_the_track_filter(qwen_store):
    """The table counts only the visible tracks: a filter (t) narrows it, clearing it restores it."""
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        v = app.view
        await pilot.press("2")
        await pilot.pause()
        pane = app.query_one(AggregationPane)
        everything = pane.agg.slices
        assert everything == aggregate(qwen_store, v.analysis_range(), v.visible_track_ids()).slices
        await pilot.press("t")
        await answer_prompt(pilot, "stream")
        visible = v.visible_track_ids()
        assert 0 < len(visible) < len(qwen_store.tracks)
        expected = aggregate(qwen_store, v.analysis_range(), visible)
        assert 0 < pane.agg.slices == expected.slices < everything
        await pilot.press("t")
        await answer_prompt(pilot, "")
        assert pane.agg.slices == everything


async def test_aggregation_of_only_the_search_matches(qwen_store):
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await answer_prompt(pilot, "aten::(addmm|mm)$")
        await pilot.press("2")
        await pilot.pause()
        pane = app.query_one(AggregationPane)
        assert len(pane.shown) > 2  # every name in the trace
        await pilot.press("M")
        await pilot.pause()
        raw = [e for e in raw_events(QWEN) if e.get("ph") == "X" and e["name"] in ("aten::addmm", "aten::mm")]
        got = {r.key: (r.count, r.total_ns) for r in pane.shown}
        expected = {}
        for e in raw:
            c, t = expected.get(e["name"], (0, 0))
            expected[e["name"]] = (c + 1, t + round(e["dur"] * 1000))
        assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in expected.items()}
        for k, (_, total) in expected.items():
            assert abs(got[k][1] - total) <= expected[k][0]  # rounding of each µs duration
        assert "matches of" in str(pane.query_one("#agg-head").render())
        await pilot.press("M")  # back to every slice
        await pilot.pause()
        assert len(pane.shown) > 2
