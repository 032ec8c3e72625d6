"""What a new user reads on the app's screens: the SQL pane's numbers, the hand-over list, the
aggregation at 80 columns, the memory rows' first paint, compare mode's counters, a capture trace
opened beside its replay."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import QWEN, settle
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
