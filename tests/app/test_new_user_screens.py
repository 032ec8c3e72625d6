"""What a new user reads on the app's screens: the SQL pane's numbers, the hand-over list, the
aggregation at 80 columns, the memory rows' first paint, compare mode's counters, a capture trace
opened beside its replay."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import QWEN, X, answer_prompt, settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


async def test_aggregation_at_80_columns_drops_empty_and_minor_columns_before_cutting_names(qwen_store):
    """At 80×24 the slice table keeps names at least 24 cells (the README's rule): the roofline
    columns, blank for these rows, go before a name is cut."""
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = read_screen(app)
        y = [y for y in screen.find(" name ") if "count" in screen.text[y]][0]
        header = screen.text[y]
        assert "FLOPs" not in header and "% roof" not in header
        assert header.index("count") - len(" name") >= 24 - 5  # the name column, right-aligned count
        rows = [line for line in screen.text[y + 1:y + 5] if line.strip()]
        names = [line[1:].split("  ")[0] for line in rows]
        assert names and all(len(n) >= 24 or "…" not in n for n in names), names


async def test_sql_pane_keeps_the_numbers_beside_long_names_and_writes_the_row_out(qwen_store):
    """A GROUP BY name over kernels at 160 columns: every row shows its name (cut in the middle)
    and its count and total; the highlighted row is written in full under the table."""
    import pytest

    pytest.importorskip("duckdb")
    from tests.app.test_query_ui import run_sql

    s = qwen_store.slices
    kernel = [i for i in range(len(s)) if qwen_store.strings[s.cat_id[i]] == "kernel"]
    totals: dict[str, list[int]] = {}
    for i in kernel:
        acc = totals.setdefault(qwen_store.name(i), [0, 0])
        acc[0] += 1
        acc[1] += int(s.end_ns[i] - s.start_ns[i])
    want = sorted(totals.items(), key=lambda kv: (-kv[1][1], kv[0]))[:5]
    assert max(len(n) for n, _ in want) > 160  # names longer than the screen
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(160, 44)) as pilot:
        await settle(pilot)
        await run_sql(pilot, "SELECT name, COUNT(*) AS n, SUM(dur) AS total FROM kernel GROUP BY name "
                             "ORDER BY total DESC, name LIMIT 5")
        screen = read_screen(app)
        for name, (n, total) in want:
            head = name[:10]
            lines = [line for line in screen.text if head in line and f" {total} " in line + " "]
            assert lines, (name, total)
            assert f" {n} " in lines[0] and (name in lines[0] or ("…" in lines[0] and name[-10:] in lines[0]))
        full = " ".join(line.strip() for line in screen.text)
        assert f"name={want[0][0]}"[:300] in full.replace("│ ", "")  # the first row in full, under the table


async def test_compare_mode_ends_a_memory_row_where_its_trace_ends(tmp_path):
    """A (500 µs, with [memory] instants) beside B (2000 µs) on one time scale: A's memory row is
    drawn up to A's end, blank after it, as A's slices are."""
    from vtui.ui.compare import CompareApp

    mem = [(100, 1 << 20), (200, 2 << 20), (300, 3 << 20)]
    a_events = [X("work", 0, 500)] + [
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
         "args": {"Bytes": 1 << 20, "Total Allocated": total, "Device Type": 1, "Device Id": 0}} for ts, total in mem]
    a = write_trace(tmp_path, a_events, "a.json")
    b = write_trace(tmp_path, [X("work", 0, 2000)], "b.json")
    app = CompareApp(a, b, stores=(load_trace(a, cache=False), load_trace(b, cache=False)))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, pauses=2)
        screen = read_screen(app)
        y = screen.find("cuda:0 allocated")[0]
        ruler = screen.text[[r for r in screen.find("┼0ns") if r < y][-1]]
        x0 = ruler.index("┼0ns")
        plot = screen.text[y][x0:].rstrip("│ ")
        work = screen.text[[r for r in range(y) if "work" in screen.text[r]][-1]][x0:]
        drawn = [x for x, ch in enumerate(plot) if ch in "▁▂▃▄▅▆▇█"]
        slice_end = len(work.rstrip("│ ").rstrip())  # A's one slice covers A's whole span
        assert drawn and max(drawn) < slice_end + 1, (plot, work)


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
