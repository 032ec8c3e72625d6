"""What a new user ran into, trying the app in tmux on traces it had not seen (issue 24): each test
reads the rendered screen and failed before its fix."""

from __future__ import annotations

import threading

import pytest

from tests.app.screen import read_screen, tick_time
from tests.helpers import FIXTURES, QWEN, STEPLOOP, X, load_events, settle
from vtui.load.trace import load_trace
from vtui.present.compare_text import format_pct, format_value
from vtui.ui.app import VtuiApp
from vtui.ui.screens.compare import CompareApp
from vtui.ui.screens.insights import InsightsScreen


async def test_compare_help_opens_while_the_traces_are_still_loading(monkeypatch):
    release = threading.Event()

    def slow_load(self, progress, control):
        release.wait(60)  # a bound for the test, not a sleep: the test releases it at once
        raise RuntimeError("released")

    monkeypatch.setattr(CompareApp, "_load", slow_load)
    app = CompareApp(STEPLOOP, STEPLOOP)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert "loading…" in read_screen(app).text[0]
            await pilot.press("question_mark")
            await pilot.pause()
            await pilot.pause()
            screen = "\n".join(read_screen(app).text)
            assert "vtui compare keys" in screen and "Lock times" in screen
            await pilot.press("escape")  # closes the help; q still quits
            await pilot.pause()
            assert "vtui compare keys" not in "\n".join(read_screen(app).text)
            release.set()
            await pilot.press("q")
    finally:
        release.set()


def _steps_with_a_hash_phase() -> list[dict]:
    """Three ProfilerSteps, each running a torch.compile graph (``## Call CompiledFxGraph … ##``,
    as vLLM traces name it) and an op."""
    events = []
    for k in range(3):
        t = 1000.0 * k
        events += [X(f"ProfilerStep#{k}", t, 900, cat="user_annotation"),
                   X("## Call CompiledFxGraph fabc123 ##", t + 10, 600, cat="user_annotation"),
                   X("aten::mm", t + 700, 150)]
    return events


async def test_insights_lists_phases_whose_names_start_with_a_hash(tmp_path):
    store = load_events(tmp_path, _steps_with_a_hash_phase())
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot)
        await settle(pilot)
        assert isinstance(app.screen, InsightsScreen) and app.screen.insights.steps.count == 3
        screen = read_screen(app)
        phases = screen.find("phases (direct children")
        assert phases, screen.text
        below = screen.text[phases[0] + 1: phases[0] + 4]
        assert any("## Call CompiledFxGraph fabc" in line for line in below), below
        assert any("aten::mm" in line for line in below), below


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


async def test_insights_in_the_app_name_its_key_for_the_steps_not_the_cli_option():
    # The nsys export has no steps: Insights said "pass --step REGEX" and "(try --step REGEX)",
    # options of the CLI that the app has no way to take; its key is r.
    path = FIXTURES / "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
    app = VtuiApp(path, store=load_trace(path))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot)
        await settle(pilot)
        text = "\n".join(read_screen(app).text)
        assert "no repeating step found" in text, text
        assert "--step" not in text and "press r for a step regex" in text, text
        assert "(press r for a step regex)" in text and "try press" not in text, text  # was "(try press r …)"


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


def _graph_replay(flows: bool) -> list[dict]:
    """A vLLM decode step replaying a HIP graph: one ``hipGraphLaunch`` whose three kernels carry
    its correlation id. Kineto writes one ac2g flow, to the first kernel (``flows``), or none."""
    ev = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "VLLM::EngineCore"}},
          {"ph": "M", "name": "process_name", "pid": 2, "tid": 7, "args": {"name": "GPU 0"}},
          {"ph": "M", "name": "thread_name", "pid": 2, "tid": 7, "args": {"name": "stream 7"}},
          X("execute_context_0(0)_generation_4(4)", 0, 1000, cat="user_annotation"),
          X("hipGraphLaunch", 100, 30, cat="cuda_runtime", correlation=77),
          X("hipStreamSynchronize", 200, 700, cat="cuda_runtime", correlation=78)]
    for k, name in enumerate(("rmsnorm_kernel", "gemm_kernel", "attention_kernel")):
        ev.append(X(name, 300 + 150 * k, 100, cat="kernel", pid=2, tid=7, correlation=77))
    if flows:
        ev += [{"ph": "s", "id": 77, "pid": 1, "tid": 1, "ts": 100, "cat": "ac2g", "name": "ac2g"},
               {"ph": "f", "id": 77, "pid": 2, "tid": 7, "ts": 300, "cat": "ac2g", "name": "ac2g", "bp": "e"}]
    return ev


@pytest.mark.parametrize("flows", [True, False])
async def test_a_graph_kernel_leads_back_to_its_graph_launch_by_correlation(tmp_path, flows):
    # A kernel of a HIP graph replay (its correlation id is the hipGraphLaunch's; Kineto writes one
    # flow for the whole graph, or none) said nothing of its launch, and [ said "No incoming flow
    # into this slice" with the hipGraphLaunch on screen.
    store = load_events(tmp_path, _graph_replay(flows))
    app = VtuiApp(tmp_path / "t.json", store=store)
    rows = {store.name(r): r for r in range(len(store.slices))}
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        pane = app.query_one("MainPane")
        pane.act(lambda v: v.select(rows["attention_kernel"]))
        await settle(pilot, 2)
        text = "\n".join(read_screen(app).text)
        assert "launch ← hipGraphLaunch on" in text, text
        await pilot.press("left_square_bracket")
        await settle(pilot, 2)
        assert app.view.selected == rows["hipGraphLaunch"]
        text = "\n".join(read_screen(app).text)
        assert "No incoming flow" not in text, text
        # the launch lists the kernels it launched; ] goes to the first
        assert "launched → attention_kernel on GPU 0" in text, text
        await pilot.press("right_square_bracket")
        await settle(pilot, 2)
        assert app.view.selected == rows["rmsnorm_kernel"]
        pane.act(lambda v: v.select(rows["hipStreamSynchronize"]))  # a call that launched nothing: no link
        await settle(pilot, 2)
        assert "launched →" not in "\n".join(read_screen(app).text)


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


async def test_load_warnings_do_not_call_a_graph_replays_kernels_launched_before_the_trace(tmp_path):
    # Kineto writes one ac2g "s" at a hipGraphLaunch and an "f" with the same id at each kernel of
    # the graph; all but the first "f" found the flow closed, and W said "2 flow ends had no start
    # (launched before the trace?)" with the launch in the trace. A flow end whose id never
    # started still says so.
    events = _graph_replay(flows=True)
    events += [{"ph": "f", "id": 77, "pid": 2, "tid": 7, "ts": t, "cat": "ac2g", "name": "ac2g", "bp": "e"}
               for t in (450, 600)]  # the graph's other two kernels
    events += [X("early_kernel", 950, 10, cat="kernel", pid=2, tid=7, correlation=5),
               {"ph": "f", "id": 5, "pid": 2, "tid": 7, "ts": 950, "cat": "ac2g", "name": "ac2g", "bp": "e"}]
    store = load_events(tmp_path, events)
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("W")
        await settle(pilot, 2)
        text = "\n".join(read_screen(app).text)
        assert "1 flow ends had no start (launched before the trace?)" in text, text
        assert "2 flow ends reuse the id of a flow already ended" in text, text


async def test_pairing_launches_by_correlation_runs_off_the_ui_thread(tmp_path, monkeypatch):
    # Pairing decodes the args of every launch call and GPU op without a flow: 0.45 s of CPU for
    # 300k kernels, paid on the UI thread at the first click on a kernel.
    import vtui.analysis.base.launched as launched  # noqa: PLC0415

    threads = []
    real = launched._pair_all

    def recording(store):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(store)

    monkeypatch.setattr(launched, "_pair_all", recording)
    store = load_events(tmp_path, _graph_replay(flows=False))
    app = VtuiApp(tmp_path / "t.json", store=store)
    rows = {store.name(r): r for r in range(len(store.slices))}
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.query_one("MainPane").act(lambda v: v.select(rows["gemm_kernel"]))
        await settle(pilot, 2)
        assert threads == [False], threads  # once, in a worker
        text = "\n".join(read_screen(app).text)
        assert "launch ← hipGraphLaunch on" in text, text  # shown when the worker is done


async def test_insights_call_a_training_steps_first_step_no_prefill(tmp_path):
    # HTA's MI250 training trace (ProfilerStep#N) and a Chrome trace (guessed MessageLoop::RunTask
    # steps) both read "first step (prefill / time to first token)" and "steps/s (tokens/s per
    # sequence)": an inference engine's words for steps that are not one's.
    store = load_events(tmp_path, _steps_with_a_hash_phase())
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot)
        await settle(pilot)
        text = read_screen(app).text
        head = next(y for y, line in enumerate(text) if "Steps: ProfilerStep#N" in line)
        steps = "\n".join(text[head:head + 3])
        assert "first step (the run's first)" in steps and "steps/s" in steps, steps
        assert "prefill" not in steps and "time to first token" not in steps and "per sequence" not in steps, steps


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

    from vtui.ui.widgets.hanging import hang_wrap  # noqa: PLC0415

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


async def test_insights_over_a_folder_of_ranks_say_whose_steps_they_are(tmp_path):
    # Over 4 ranks, Insights showed one rank's steps (the track with most matches) without saying
    # which: "ProfilerStep#N (known pattern) · 12 steps", with 12 steps on every rank.
    from benchmarks.ranks_synth import rank_events, slow_rank, write_rank  # noqa: PLC0415

    for r in range(4):
        write_rank(tmp_path, f"t_rank{r}.json", rank_events(r, 4, 3, slow_rank(2)), r, 4)
    store = load_trace(tmp_path, cache=False)
    app = VtuiApp(tmp_path, store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot, 2)
        await settle(pilot)
        line = next(line for line in read_screen(app).text if line.lstrip().startswith("Steps: "))
        t = store.tracks[app.screen.insights.steps.track]
        assert line.rstrip().endswith(f" on {t.process_title} › {t.title}") and "rank" in t.process_title, line


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


async def test_insights_do_not_count_kv_cache_kernels_or_frames_as_cache_events(tmp_path):
    # vLLM and SGLang traces: "Caches: 24 cache events · no hit/miss information" listed
    # reshape_and_cache_flash_kernel (the KV-cache write, a GPU kernel) and Python frames whose
    # file sits under mem_cache/ — none a cache lookup.
    events = _graph_replay(flows=False)
    events += [X("void vllm::reshape_and_cache_flash_kernel<bf16>(...)", 860, 20, cat="kernel", pid=2, tid=7),
               X("sglang/srt/mem_cache/memory_pool.py(310): set_kv_buffer", 140, 20, cat="python_function"),
               X("KVCacheManager.evict", 170, 5, cat="cpu_op")]
    store = load_events(tmp_path, events)
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await settle(pilot, 2)
        await settle(pilot)
        for _ in range(12):  # the section is far down: ] moves a section at a time
            found = [line for line in read_screen(app).text if line.lstrip().startswith("Caches:")]
            if found:
                break
            await pilot.press("right_square_bracket")
            await pilot.pause()
        assert found, read_screen(app).text
        line = found[0]
        assert "Caches: 1 cache events" in line and "evictions 1" in line, line
        assert "reshape_and_cache" not in line and "mem_cache" not in line, line


async def test_compare_metrics_do_not_call_any_first_step_a_ttft(steploop_store):
    # Comparing two training ranks, Metrics read "time to first step (TTFT)": the first step's
    # length, a TTFT only for an inference engine's steps (Serving's own row says when it is one).
    qwen = load_trace(QWEN)
    app = CompareApp(STEPLOOP, QWEN, stores=(steploop_store, qwen))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, 2)
        await pilot.press("2")
        await settle(pilot)
        text = "\n".join(read_screen(app).text)
        assert "first step (TTFT when serving)" in text and "time to first step (TTFT)" not in text, text
