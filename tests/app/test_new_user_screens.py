"""What a new user reads on the app's screens: the SQL pane's numbers, the hand-over list, the
aggregation at 80 columns, the memory rows' first paint, compare mode's counters, a capture trace
opened beside its replay."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import QWEN, X, settle, write_trace
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
