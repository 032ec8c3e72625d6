"""A graph capture trace opened beside its replay (`vtui replay.json --capture cap.json`, or found
in a capture_traces/ folder beside it)."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


async def _insights_text(app, pilot) -> str:
    await pilot.press("i")
    await app.screen.workers.wait_for_complete()
    await settle(pilot, 2)
    return "\n".join(read_screen(app).text)


async def test_the_app_reads_a_capture_trace_beside_its_replay(tmp_path, capsys):
    """`vtui replay.json --capture cap.json`: Insights gives the replayed graph kernels their captured
    operators (as `vtui insights --capture` does); a capture_traces/ folder beside the trace is found
    without the argument; a missing capture is one line before the app opens."""
    import json

    from tests.cli.test_serving_cli import _capture_events
    from tests.core.test_serving import synthetic_loop
    from vtui.cli import main

    path = write_trace(tmp_path, synthetic_loop()[0])
    cap = write_trace(tmp_path, _capture_events(), "capture.json")
    for capture in (cap, None):
        if capture is None:  # TraceLens's layout: the capture in capture_traces/ beside the replay
            (tmp_path / "capture_traces").mkdir()
            (tmp_path / "capture_traces" / "graph_capture_rank_0.json").write_text(
                json.dumps({"traceEvents": _capture_events()}))
        app = VtuiApp(path, store=load_trace(path, cache=False), capture=capture)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            name = "capture.json" if capture else "graph_capture_rank_0.json"
            assert f"capture {name}" in read_screen(app).text[0]  # the title says a capture is read
            text = await _insights_text(app, pilot)
            assert "3 of 3 kernels matched to the capture" in text  # the finding
            app.screen.query_one("#ins-graphs").scroll_visible(top=True, animate=False)
            await settle(pilot, 2)
            text = "\n".join(read_screen(app).text)
            assert f"capture {name}: 1 capture(s) · 3 of 3 replayed kernels matched" in text
            assert "aten::mm" in text and "aten::softmax" in text
    assert main([str(path), "--capture", str(tmp_path / "missing.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vtui: error:") and "missing.json" in err and "\n" not in err
