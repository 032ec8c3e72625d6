"""The screens at 80 columns and beside names longer than the screen: each line whole (a count, a
figure, a tick label, a title), a long line wrapped under its own indent, one screen line per row."""

from __future__ import annotations

import pytest

from tests.app.screen import read_screen, tick_time
from tests.helpers import FIXTURES, QWEN, STEPLOOP, X, load_events, settle
from vtui.load.trace import load_trace
from vtui.present.compare_text import format_pct, format_value
from vtui.ui.app import VtuiApp
from vtui.ui.screens.compare import CompareApp


async def test_track_list_keeps_the_slice_count_when_the_title_is_long(tmp_path):
    # vLLM's engine thread: "thread 851 (VLLM::EngineCor)" plus its slice count is wider than the
    # list; the count was cut to its first digit ("120k" drawn as "1").
    name = "thread 851 (VLLM::EngineCore-worker)"  # as Kineto names threads
    events = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 851, "args": {"name": name}}]
    events += [X(f"op{k}", 10.0 * k, 5, tid=851) for k in range(1234)]
    store = load_events(tmp_path, events)
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = read_screen(app)
        lines = [line.split("│")[0] for line in screen.text if "thread 851" in line.split("│")[0]]
        assert len(lines) == 1, screen.text
        label = lines[0].rstrip()
        assert label.endswith(" 1k"), label  # the count, whole (1,234 slices)
        assert "…" in label and label.lstrip(" ▾▸").startswith("thread 851"), label


@pytest.mark.parametrize("size", [(120, 40), (160, 48)])
async def test_compare_status_line_shows_both_figures_whole(steploop_store, size):
    # At 160 columns the line ended in "step mean (excl. the run's first): A 622.928 ms, B 630.639"
    # (no unit, or no figures at all): the long lock text and metric labels pushed them off.
    qwen = load_trace(QWEN)
    app = CompareApp(STEPLOOP, QWEN, stores=(steploop_store, qwen))
    async with app.run_test(size=size) as pilot:
        await settle(pilot, 2)
        by_name = {m.name: m for m in app.comparison.metrics}
        for keys in ([], ["l"]):  # unlocked, then locked
            await pilot.press(*keys)
            await pilot.pause()
            status = read_screen(app).text[-2]
            for name in ("span_ns", "step_mean_ns"):
                m = by_name[name]
                figures = f"A {format_value(m.a, m.unit)}, B {format_value(m.b, m.unit)} ({format_pct(m.pct)})"
                assert figures in status, status
            assert ("locked" if keys else "unlocked") in status, status


async def test_title_lines_at_80_columns_fill_the_line_not_one_word(tmp_path):
    # "Call tree · tracelens__graph_capture_rank_0.1773….pt.trace.json.gz · whole trace …" at 80
    # columns drew "Call tree ·" alone: the title wrapped at the file name onto a hidden second line.
    name = "vllm_engine_core_tracelens__graph_capture_rank_0.1773709742341309550.pt.trace.json"
    store = load_events(tmp_path, [X(f"op{k}", 10.0 * k, 5) for k in range(20)], name=name)
    app = VtuiApp(tmp_path / name, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        top = read_screen(app).text[0].rstrip()
        assert top.startswith(" vtui · vllm_engine_core") and len(top) >= 76, top
        await pilot.press("F")
        await settle(pilot)
        await settle(pilot)
        top = read_screen(app).text[0].rstrip()
        assert top.startswith(" Call tree · vllm_engine_core") and len(top) >= 76, top
        await pilot.press("escape", "i")
        await settle(pilot)
        await settle(pilot)
        top = read_screen(app).text[0].rstrip()
        assert top.startswith(" Insights · vllm_engine_core") and len(top) >= 76, top


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_ruler_never_draws_a_tick_label_cut_by_the_edge(size):
    # The nsys export at 160 columns ended its ruler in "┼2" (2 s cut to a bare 2); a 12 ms trace
    # in "┼12m" (read: minutes).
    path = FIXTURES / "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
    store = load_trace(path)
    app = VtuiApp(path, store=store)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for keys in ([], ["w"], ["w", "d", "d"]):
            await pilot.press(*keys)
            await pilot.pause()
            ruler = read_screen(app).text[1]
            plot = ruler[ruler.index("│") + 1:]
            labels = [part.split(" ")[0] for part in plot.split("┼")[1:]]
            assert labels, ruler
            for label in labels:
                if label:
                    tick_time(label)  # a whole label (ValueError if cut)


async def test_differential_call_tree_rows_stay_one_line_each(steploop_store):
    # At 160 columns the header's rule ("----  ----  …") and long call paths wrapped onto a second
    # screen line, so the rule printed twice and rows lost their columns.
    from vtui.ui.screens.tree_diff import TreeDiffScreen  # noqa: PLC0415

    qwen = load_trace(QWEN)
    app = CompareApp(STEPLOOP, QWEN, stores=(steploop_store, qwen))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, 2)
        await pilot.press("F")
        await settle(pilot)
        await settle(pilot)
        assert isinstance(app.screen, TreeDiffScreen) and app.screen.lines
        longest = max(len(line) for line in app.screen.lines)
        assert longest > 160  # the test needs a line wider than the screen
        text = read_screen(app).text
        head = next(y for y, line in enumerate(text) if "call path" in line)
        rules = [y for y, line in enumerate(text) if line.strip() and set(line[:150].strip()) <= {"-", " "}]
        assert rules == [head + 1], text[head:head + 4]
        for y, want in zip(range(head + 2, len(text) - 1), app.screen.lines[2:]):
            assert text[y].strip()[:10] == want.strip()[:10], (text[y], want)  # one screen line per row


@pytest.mark.parametrize("size", [(80, 24), (120, 30)])
async def test_ranks_screen_rows_fit_the_width(tmp_path, size):
    # A folder of 4 ranks with 12 steps at 80 columns: each rank's row (12 step bars of 7 cells,
    # its label, its exposed time) was 130 columns and wrapped, the bars of one rank over two lines.
    from benchmarks.ranks_synth import rank_events, slow_rank, write_rank  # noqa: PLC0415
    from vtui.ui.screens.ranks import RanksScreen  # noqa: PLC0415

    for r in range(4):
        write_rank(tmp_path, f"t_rank{r}.json", rank_events(r, 4, 12, slow_rank(2)), r, 4)
    app = VtuiApp(tmp_path, store=load_trace(tmp_path, cache=False))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.press("K")
        await settle(pilot, 2)
        await settle(pilot, 2)
        assert isinstance(app.screen, RanksScreen) and app.screen.report is not None
        text = read_screen(app).text
        title = next(y for y, line in enumerate(text) if line.startswith("wait in collectives per step"))
        rows = text[title + 1:title + 5]
        for k, line in enumerate(rows):  # one screen line per rank, its exposed time on it
            assert f"rank {k}" in line and "exposed comm" in line and line.rstrip().endswith(")" if k != 2 else "straggler"), rows
        bars = rows[0].split("│")[1:-1]
        shown = int(text[title].split("), ")[1].split(" of ")[0])
        assert len(bars) == shown >= 1, rows
        if size[0] >= 120:
            assert shown >= 9, text[title]


async def test_ranks_screen_collectives_take_one_line_each_at_80_columns(tmp_path):
    # At 80 columns each collective ("all_reduce 0 #0 latency … busbw 41.94 GB/s", 100 columns)
    # wrapped onto a second line: half the list on screen, "rank 2 busbw" read as a new row.
    from textual.widgets import OptionList  # noqa: PLC0415

    from benchmarks.ranks_synth import rank_events, slow_rank, write_rank  # noqa: PLC0415
    from vtui.ui.screens.ranks import RanksScreen  # noqa: PLC0415

    for r in range(4):
        write_rank(tmp_path, f"t_rank{r}.json", rank_events(r, 4, 6, slow_rank(2)), r, 4)
    app = VtuiApp(tmp_path, store=load_trace(tmp_path, cache=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("K")
        await settle(pilot, 2)
        await settle(pilot, 2)
        assert isinstance(app.screen, RanksScreen) and app.screen.report is not None
        await pilot.press("down", "down")
        text = read_screen(app).text
        rows = [line for line in text if "all_reduce" in line]
        assert len(rows) >= 4, text
        assert all("GB/s" in line for line in rows), rows  # the whole collective on its line
        follow = [text[text.index(line) + 1] for line in rows[:-1]]
        assert all("all_reduce" in line for line in follow), follow  # no continuation lines between
        await pilot.resize_terminal(140, 30)
        await settle(pilot, 2)
        assert any("latency" in line for line in read_screen(app).text)  # the full form when it fits
        assert app.screen.query_one("#ranks-collectives", OptionList).highlighted == 2  # kept across


async def test_insights_at_80_columns_wrap_a_line_under_its_own_indent(qwen_store):
    # At 80 columns every long line of Insights went on at the left edge: a finding's hint, a
    # phase row's "then … /step" read as new entries, the table's columns lost.
    app = VtuiApp(QWEN, store=qwen_store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await settle(pilot, 2)
        await settle(pilot)
        text = read_screen(app).text
        start = next(y for y, line in enumerate(text) if line.strip() == "Findings")
        end = next((y for y, line in enumerate(text) if line.strip() == "Steps and phases"), len(text) - 1)
        body = [line for line in text[start + 1:end] if line.strip()]
        assert len(body) > 6, text  # the findings fill the screen: some lines wrapped
        for line in body:
            indent = len(line) - len(line.lstrip(" "))
            # a finding starts at column 1; its own continuation, its hint and the hint's go further in
            assert line.startswith(" [") or indent >= 3, body
        hints = [y for y, line in enumerate(body) if line.lstrip().startswith("→")]
        assert hints and all(body[y].startswith("     → ") for y in hints), body


def test_hang_wrap_keeps_every_character_and_the_width():
    from rich.text import Text  # noqa: PLC0415

    from vtui.ui.widgets.indented_wrap import hang_wrap  # noqa: PLC0415

    src = Text("short\n    a phase row with words " + "x" * 50 + " then 12 µs/step\n")
    src.stylize("bold", 10, 15)
    out = hang_wrap(src, 20)
    lines = out.plain.split("\n")
    assert all(len(line) <= 20 for line in lines), lines
    assert lines[0] == "short" and lines[1].startswith("    a phase") and lines[-1] == ""
    assert all(line.startswith("      ") for line in lines[2:-1]), lines  # under the row's indent + 2
    assert "".join(out.plain.split()) == "".join(src.plain.split())  # only spaces moved
    assert any(span.style == "bold" for span in out.spans)


async def test_details_at_80_columns_wrap_a_long_kernel_name_under_its_indent(tmp_path):
    # A templated kernel name in the details pane went on at the left edge, where the next line
    # (start, dur, args) starts: one could not tell the name from the fields below it.
    name = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::" + "x" * 60 + ">"
    events = [X("cudaLaunchKernel", 0, 10, cat="cuda_runtime", correlation=1),
              X(name, 20, 100, cat="kernel", pid=2, tid=7, correlation=1)]
    store = load_events(tmp_path, events)
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.query_one("MainPane").act(lambda v: v.select(1 if store.name(1) == name else 0))
        await settle(pilot, 2)
        text = read_screen(app).text
        top = next(y for y, line in enumerate(text) if line.startswith(" void at::native::elementwise_kernel"))
        rest = next(y for y, line in enumerate(text) if line.startswith(" start "))
        assert rest > top + 1, text[top:rest + 1]  # the name wrapped
        assert all(line.startswith("   ") for line in text[top + 1:rest]), text[top:rest + 1]


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
