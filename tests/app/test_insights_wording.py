"""What Insights says in the app, read on its screen: phases whatever their names, the app's key for
the steps (not the CLI's option), no inference words for training steps, whose steps over ranks,
what counts as a cache event, the CPU chain during a GPU gap, the counts' plurals and kernel names
that share a long head."""

from __future__ import annotations

import re

from tests.app.screen import read_screen
from tests.app.test_graph_launch_links import graph_replay
from tests.helpers import FIXTURES, X, load_events, settle, write_trace
from vtui.analysis.report.insights import compute_insights
from vtui.load.trace import load_trace
from vtui.present.insights_text import steps_lines
from vtui.store.slicetime import time_range
from vtui.ui.app import VtuiApp
from vtui.ui.screens.insights import InsightsScreen


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


async def test_insights_do_not_count_kv_cache_kernels_or_frames_as_cache_events(tmp_path):
    # vLLM and SGLang traces: "Caches: 24 cache events · no hit/miss information" listed
    # reshape_and_cache_flash_kernel (the KV-cache write, a GPU kernel) and Python frames whose
    # file sits under mem_cache/ — none a cache lookup.
    events = graph_replay(flows=False)
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


async def _insights_text(app, pilot) -> str:
    await pilot.press("i")
    await app.screen.workers.wait_for_complete()
    await settle(pilot, 2)
    return "\n".join(read_screen(app).text)


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


def test_one_step_is_one_step_not_one_steps(tmp_path):
    store = load_events(tmp_path, [X("engine_step", i * 100, 90) for i in range(4)])
    rows = sorted(int(store.slices.start_ns[r]) for r in range(len(store.slices)))
    ins = compute_insights(store, time_range(store, rows[1], rows[1] + 95_000))  # a range holding one step start
    text = "\n".join(steps_lines(ins))
    assert "· 1 step\n" in text and not re.search(r"(?<![\d.,])1 steps", text), text


def test_top_kernels_with_one_long_head_print_apart(tmp_path):
    from vtui.present.insights_text import gpu_lines

    head = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x32x256_MI16x16x1_SN_LDSB1_AFC1_AFEM1_"
    names = [head + "NTA0_WG32_8_1", head + "NTA4_WG32_8_1"]
    events = [X(n, 10 + 100 * i, 50 + i, cat="kernel", pid=0, tid=7) for i, n in enumerate(names)]
    store = load_events(tmp_path, events)
    text = gpu_lines(compute_insights(store))
    rows = [line for line in text if line.strip().startswith("Cijk")]
    assert len(rows) == 2
    shown = [r.strip().split("  ")[0] for r in rows]
    assert shown[0] != shown[1] and all(s.endswith("_WG32_8_1") for s in shown), shown
