"""The Insights screen's roofline and critical-path sections, and the timeline's critical-path key."""

from __future__ import annotations

import numpy as np
from textual.widgets import Static

from tests.app.screen import read_screen
from tests.helpers import QWEN, settle
from vtui.analysis.gpu.roofline import analyse_roofline
from vtui.analysis.steps.detect import analyse_steps
from vtui.analysis.why.critical import analyse_critical
from vtui.load.trace import load_trace
from vtui.safe_text import safe_field
from vtui.ui.app import VtuiApp
from vtui.ui.screens.insights import InsightsScreen


async def test_insights_shows_the_roofline_worst_first_and_the_critical_path():
    store = load_trace(QWEN)
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(180, 50)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, InsightsScreen)
        text = str(screen.query_one("#ins-roofline", Static).render())
        assert "NVIDIA H100 SXM" in text and "989.5" in text and "datasheet" in text
        # Worst first: the op with the most GPU time above its roofline, worked out here from the
        # report's FLOPs, bytes and GPU time with the H100's peaks.
        ops = screen.insights.roofline.ops

        def lost(o):
            peak = {"c10::BFloat16": 989.5, "float": 67.0}[o.dtype]
            return o.gpu_ns - max(o.flops / (peak * 1e3), o.bytes / 3.35e3)

        worst = max(ops, key=lost)
        rows = [ln for ln in text.splitlines() if ln.startswith("  aten::")]
        assert rows[0].startswith(f"  {safe_field(worst.name, 28):<28} ")
        crit = str(screen.query_one("#ins-critical", Static).render())
        assert "gpu-bound overall" in crit and "#0   gpu" in crit


async def test_critical_path_key_highlights_the_selected_steps_path():
    store = load_trace(QWEN)
    steps = analyse_steps(store)
    want = analyse_critical(store, steps.rows).steps[0].path_rows()
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        await pilot.press("C")  # nothing selected: a message, no highlight
        await pilot.pause()
        assert app.view.highlight is None
        app.view.select(int(steps.rows[0]))
        await pilot.press("C")
        await pilot.pause()
        lit = np.flatnonzero(app.view.highlight)
        assert np.array_equal(lit, want) and len(lit) > 100
        kernels = store.slices.cat_id[lit]
        assert any(store.strings[c] == "kernel" for c in kernels.tolist())
        await pilot.press("escape")
        assert app.view.highlight is None


async def test_aggregation_table_shows_flops_and_roofline_columns_for_ops_with_shapes():
    """The slice table (key 2) of a trace with recorded shapes draws FLOPs, TFLOP/s and % of the
    roofline per name: checked against the roofline report's (name, shape) groups summed by name."""
    store = load_trace(QWEN)
    report = analyse_roofline(store)
    by_name: dict[str, list[float]] = {}
    for o in report.ops:
        acc = by_name.setdefault(o.name, [0, 0, 0.0])
        acc[0] += o.flops
        acc[1] += o.gpu_ns
        acc[2] += o.roofline_ns or 0.0
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await pilot.pause()
        app.query_one("#agg-table").focus()
        for name in ("aten::mm", "aten::copy_"):  # the GEMM under aten::linear is costed
            await pilot.press("slash", *name, "enter")
            await pilot.pause()
            screen = read_screen(app)
            header = screen.text[screen.find("TFLOP/s")[0]]
            assert "FLOPs" in header and "% roof" in header
            line = screen.text[[y for y in screen.find(name) if "FLOP" in screen.text[y] or "%" in screen.text[y]][-1]]
            cells = line.split()
            flops, gpu_ns, roof_ns = by_name[name]
            assert cells[-1] == f"{100 * roof_ns / gpu_ns:.1f}%"
            if flops:
                assert cells[-2] == f"{flops / gpu_ns / 1e3:.2f}"
                value, unit = cells[-4], cells[-3]
                scale = {"TFLOP": 1e12, "GFLOP": 1e9, "MFLOP": 1e6}[unit]
                assert value == f"{flops / scale:.2f}"
            else:
                assert cells[-2] == "—" and cells[-3] == "0"
            await pilot.press("slash", *["backspace"] * len(name), "enter")


async def test_clicking_a_roofline_column_header_leaves_the_order_alone():
    """The roofline columns do not sort: a click on their header must not flip the current order
    (the drawn first row stays the same), while a click on 'count' sorts by count."""
    app = VtuiApp(QWEN, store=load_trace(QWEN))
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await pilot.pause()
        pane = app.query_one("AggregationPane")
        table = app.query_one("#agg-table")
        before = (pane.sort, pane.descending, _table_lines(app))
        labels = [str(c.label).strip() for c in table.columns.values()]
        for title in ("FLOPs", "TFLOP/s", "% roof"):
            index = labels.index(title)
            pane.on_data_table_header_selected(table.HeaderSelected(table, list(table.columns)[index], index,
                                                                    table.columns[list(table.columns)[index]].label))
            await pilot.pause()
            assert (pane.sort, pane.descending, _table_lines(app)) == before, title
        index = labels.index("count")
        pane.on_data_table_header_selected(table.HeaderSelected(table, list(table.columns)[index], index,
                                                                table.columns[list(table.columns)[index]].label))
        await pilot.pause()
        assert pane.sort == "count"


def _table_lines(app) -> list[str]:
    """The slice table as drawn: its header and the rows under it (not the rest of the screen,
    whose toasts and status come and go)."""
    text = read_screen(app).text
    top = next(y for y, line in enumerate(text) if "TFLOP/s" in line)
    return text[top : top + 10]
async def test_the_slice_tables_roofline_takes_insights_range_rule():
    """In a range that starts inside an aten::mm call, the slice table's roofline columns count
    the calls starting in the range, as Insights does (not the cut call), and its header says so."""
    from vtui.present.why_text import format_flops
    from vtui.store.slicetime import time_range

    store = load_trace(QWEN)
    s = store.slices
    mms = np.flatnonzero(np.isin(s.name_id, [i for i, n in enumerate(store.strings) if n == "aten::mm"]))
    mms = mms[np.argsort(s.start_ns[mms], kind="stable")]
    mid = len(mms) // 2
    t0, t1 = int(s.start_ns[mms[mid]]) + 1, int(s.start_ns[mms[mid + 2]]) + 1  # cuts one call at t0
    want = sum(o.flops for o in analyse_roofline(store, time_range(store, t0, t1)).ops if o.name == "aten::mm")
    assert want
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot)
        app.view.set_range(t0, t1)
        await pilot.press("2")
        await pilot.pause()
        app.query_one("#agg-table").focus()
        await pilot.press("slash", *"aten::mm", "enter")
        await pilot.pause()
        screen = read_screen(app)
        assert screen.find("roofline: calls starting in it")
        line = screen.text[[y for y in screen.find("aten::mm") if "FLOP" in screen.text[y]][-1]]
        assert f" {format_flops(want)} " in line, (line, format_flops(want))


async def test_the_slice_tables_roofline_is_not_worked_out_again_on_a_refresh(monkeypatch):
    """Back to a range the slice table has shown (u after a typed range): the roofline columns are
    the ones drawn before, from the memo (counted), while a new range is worked out."""
    from tests.helpers import answer_prompt
    from vtui.analysis.gpu import roofline

    calls: list[tuple[int, int] | None] = []
    real = roofline._group_roofline_now

    def counted(st, rows, keys, starts_in):
        calls.append(starts_in)
        return real(st, rows, keys, starts_in)

    monkeypatch.setattr(roofline, "_group_roofline_now", counted)
    store = load_trace(QWEN)
    span = int(store.span_ns)
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        app.query_one("#agg-table").focus()
        await pilot.press("slash", *"aten::", "enter")  # the rows with roofline figures
        await settle(pilot)
        whole = _drawn_table(app)
        assert whole[0].startswith("whole trace") and any("TFLOP" in ln for ln in whole[3:]) and calls == [(0, span)]
        await pilot.press("escape")  # back on the timeline, the table still shown
        await pilot.press("g")
        await answer_prompt(pilot, f"{span // 4}ns:{span // 2}ns")
        await settle(pilot)
        assert app.view.range == (span // 4, span // 2)
        assert calls == [(0, span), (span // 4, span // 2)] and _drawn_table(app) != whole
        await pilot.press("u")
        await settle(pilot)
        assert app.view.range is None
        assert _drawn_table(app) == whole and len(calls) == 2  # drawn again, not worked out again


def _drawn_table(app) -> list[str]:
    """The slice table's head line, filter, header and rows as drawn (up to the timeline's status line)."""
    text = read_screen(app).text
    top = next(y for y, line in enumerate(text) if "TFLOP/s" in line) - 2  # the head, the filter, the header
    end = next(y for y in range(top, len(text)) if " window " in text[y] and " zoom " in text[y])
    return text[top:end]
