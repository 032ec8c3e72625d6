"""A few snapshots of the explorer at a fixed size (pytest-textual-snapshot)."""

from __future__ import annotations

from tests.helpers import QWEN, settle
from vtui.demo import demo_trace_path
from vtui.ui.app import VtuiApp


def test_snapshot_main_view(snap_compare):
    assert snap_compare(VtuiApp(demo_trace_path()), terminal_size=(140, 36), run_before=settle)


def test_snapshot_selection_and_details(snap_compare):
    assert snap_compare(VtuiApp(demo_trace_path()), terminal_size=(140, 36), run_before=settle,
                        press=["w", "w", "w", "down", "down", "down", "f"])


def test_snapshot_gpu_trace_filtered_with_flow(snap_compare):
    async def before(pilot) -> None:
        await settle(pilot)
        await pilot.press("t", *"stream|thread 25286", "enter")
        f = pilot.app.store.flows
        pilot.app.view.select(int(f.src_slice[100]))
        await pilot.press("f", "right_square_bracket")

    assert snap_compare(VtuiApp(QWEN), terminal_size=(140, 36), run_before=before)


def test_snapshot_range_aggregation_and_search(snap_compare):
    async def before(pilot) -> None:
        await settle(pilot)
        v = pilot.app.view
        v.set_range(v.store.span_ns // 4, v.store.span_ns // 2)
        await pilot.press("slash", *"aten::addmm", "enter")
        await settle(pilot)  # the search runs in a worker
        await pilot.press("2")
        await settle(pilot, pauses=2)  # its matches repaint the lanes: on a busy machine, a pause later

    assert snap_compare(VtuiApp(QWEN), terminal_size=(160, 44), run_before=before)
