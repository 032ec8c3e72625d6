"""The call tree's hand-over findings in the app: `H` in the call tree draws what
``analyse_handover`` finds over the tree's range (the CLI's ``vtui tree --handover``)."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import QWEN, STACK, settle
from vtui.analysis.calltree.handover import analyse_handover
from vtui.analysis.calltree.tree import build_tree
from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range
from vtui.ui.app import VtuiApp
from vtui.ui.screens.handover_view import HandOverScreen
from vtui.ui.screens.tree import CallTreeScreen
from vtui.units import format_duration as fd


async def _handover_screen(pilot) -> HandOverScreen:
    await pilot.press("F")
    await settle(pilot)
    assert isinstance(pilot.app.screen, CallTreeScreen)
    await pilot.press("H")
    await settle(pilot, 2)
    assert isinstance(pilot.app.screen, HandOverScreen)
    return pilot.app.screen


async def test_handover_findings_are_drawn_as_the_analysis_finds_them():
    store = load_trace(STACK)
    app = VtuiApp(STACK, store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        v = app.view
        v.set_range(store.span_ns // 4, store.span_ns // 2)
        await _handover_screen(pilot)
        report = analyse_handover(store, build_tree(store, time_range(store, store.span_ns // 4, store.span_ns // 2), v.visible_track_ids()))
        assert report.present and report.handovers
        text = read_screen(app).text
        assert f"range {fd(store.span_ns // 4)} – {fd(store.span_ns // 2)}" in text[0]  # what it covers
        summary = [line for line in text if "Python → C++ hand-over:" in line]
        assert len(summary) == 1 and f"({report.python_pct:.1f}% Python)" in summary[0]
        assert fd(report.python_self_ns) in summary[0] and fd(report.op_total_ns) in summary[0]
        for h in report.handovers[:3]:  # the heaviest hand-overs, each on its own row with its times, count, depth
            line = next((ln for ln in text if ln.strip().startswith(f"{fd(h.total_ns)}  ") and h.name[:15] in ln), None)
            assert line is not None, (h.name, text)
            assert line.split()[:6] == [*fd(h.total_ns).split(), *fd(h.self_ns).split(), f"{h.count:,}",
                                        str(h.python_depth)], line
        for f in report.findings:
            assert any(f"[{f.kind}]" in ln for ln in text), f.kind
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, CallTreeScreen)  # back to the call tree


async def test_a_trace_without_python_frames_says_how_to_get_them():
    app = VtuiApp(QWEN, store=load_trace(QWEN))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        report = analyse_handover(app.view.store, build_tree(app.view.store, None,
                                                             app.view.visible_track_ids()))
        await _handover_screen(pilot)
        text = "\n".join(read_screen(app).text)
        if report.present:
            assert f"({report.python_pct:.1f}% Python)" in text
        else:
            assert "no Python frames (record with with_stack=True)" in text
