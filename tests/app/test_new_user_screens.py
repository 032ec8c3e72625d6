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
    from vtui.ui.screens.compare import CompareApp

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


async def test_memory_rows_say_computing_until_their_series_are_built(monkeypatch):
    """The first frame holds the memory rows' places ("computing…") while their series are built
    off the UI thread; keys act meanwhile; then the rows are drawn in those places."""
    import threading

    from vtui.analysis.gpu import memory_tracks
    from vtui.ui.timeline import main_view

    monkeypatch.setattr(main_view, "INLINE_MEMORY_EVENTS", 0)  # as on a trace with millions of [memory] events
    gate = threading.Event()
    build = memory_tracks._build

    def held(store):
        gate.wait(10)  # released by the test once it has read the first screen (a guard, not a sleep)
        return build(store)

    monkeypatch.setattr(memory_tracks, "_build", held)
    store = load_trace(QWEN, cache=False)
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(3):
            await pilot.pause()
        screen = read_screen(app)
        placeholder = screen.find("memory: computing…")
        assert len(placeholder) == 1 and "mem computing…" in screen.text[placeholder[0]]
        assert "Zoom in" in screen.text[-1]  # the footer's keys, not only "? Help q Quit"
        await pilot.press("w")  # the app answers keys while the series build
        assert app.view.span < store.span_ns
        gate.set()
        await settle(pilot, 2)
        screen = read_screen(app)
        assert not screen.find("computing…") and len(screen.find("cuda:0 allocated")) == 1
        assert screen.find("cuda:0 allocated")[0] == placeholder[0]  # drawn where the place was held


def _handover_nodes(store, tree) -> list[tuple[int, int, int, int]]:
    """(python depth, self ns, total ns, node) of every hand-over, in plain Python over the tree:
    a node that is not a Python frame (most of its slices not python_function) under one that is."""
    votes: dict[int, list[int]] = {}
    for row, node in zip(tree.rows.tolist(), tree.row_node.tolist()):
        py = store.strings[int(store.slices.cat_id[row])] == "python_function"
        votes.setdefault(node, [0, 0])[py] += 1
    is_py = [votes.get(n, [1, 0])[1] * 2 > sum(votes.get(n, [1, 0])) for n in range(len(tree))]
    out = []
    for n in range(len(tree)):
        p = int(tree.parent[n])
        if is_py[n] or p < 0 or not is_py[p]:
            continue
        depth, up = 0, p
        while up >= 0:
            depth += is_py[up]
            up = int(tree.parent[up])
        out.append((depth, int(tree.self_ns[n]), int(tree.total_ns[n]), n))
    return out


async def test_handover_view_lists_every_handover_and_sorts_by_depth_self_total():
    from tests.app.test_handover_ui import _handover_screen
    from tests.helpers import STACK
    from vtui.analysis.calltree.tree import build_tree
    from vtui.fmt import format_duration as fd

    store = load_trace(STACK)
    app = VtuiApp(STACK, store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        want = _handover_nodes(store, build_tree(store, None, app.view.visible_track_ids()))
        assert len(want) > 20  # more than the CLI text lists (8): the table holds them all
        screen = await _handover_screen(pilot)
        table = screen.query_one("#ho-table")
        assert table.row_count == len(want)
        summary = "\n".join(read_screen(app).text)
        assert f"{len(want)} hand-overs by total ↓" in summary

        def first_row() -> list[str]:
            return [str(c) for c in table.get_row_at(0)]

        assert first_row()[0] == fd(max(w[2] for w in want))
        await pilot.press("d")
        await settle(pilot)
        assert first_row()[3] == str(max(w[0] for w in want))  # the deepest hand-over first
        assert any(str(max(w[0] for w in want)) in line for line in read_screen(app).text)
        await pilot.press("d")
        await settle(pilot)
        assert first_row()[3] == str(min(w[0] for w in want))  # again: reversed
        await pilot.press("s")
        await settle(pilot)
        assert first_row()[1] == fd(max(w[1] for w in want))


async def test_gpu_gap_cpu_chain_lists_outer_calls_first(tmp_path):
    """What the launching thread did during a GPU gap, outermost first, by time: a step annotation
    put on an extra lane (it crosses a sibling's end) is printed above the runtime call inside it."""
    events = [X("python_loop", 0, 1200),
              X("prep", 5, 295),
              X("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=1),
              X("step[DECODE bs=32]", 200, 900, cat="user_annotation"),  # starts inside prep, ends after it
              X("hipMemcpyWithStream", 400, 300, cat="cuda_runtime"),
              X("cudaLaunchKernel", 750, 5, cat="cuda_runtime", correlation=2),
              X("k1", 20, 80, cat="kernel", pid=0, tid=7, correlation=1),
              X("k2", 800, 50, cat="kernel", pid=0, tid=7, correlation=2)]
    path = write_trace(tmp_path, events)
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        text = await _insights_text(app, pilot)
        app.screen.query_one("#ins-gaps").scroll_visible(top=True, animate=False)
        await settle(pilot, 2)
        text = "\n".join(read_screen(app).text)
        assert "CPU: python_loop › step[DECODE bs=32] › hipMemcpyWithStream" in text, text
