"""The Insights screen: key `i` opens it over the current window, `r` sets the step regex, escape returns."""

from __future__ import annotations

from textual.widgets import Input, OptionList, Static

from tests.helpers import FIXTURES, STEPLOOP, raw_events, settle
from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range
from vtui.ui.app import VtuiApp
from vtui.ui.screens.insights import InsightsScreen
from vtui.ui.screens.modals import PromptScreen


async def _settle(pilot) -> None:
    await settle(pilot)  # the screen starts its worker once mounted: a second round waits for that one
    await settle(pilot)


async def test_insights_screen_opens_on_i_and_follows_the_window():
    store = load_trace(STEPLOOP)
    app = VtuiApp(STEPLOOP, store=store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, InsightsScreen)
        ins = screen.insights
        assert ins is not None and (ins.range.t0, ins.range.t1) == (0, store.span_ns)
        assert ins.steps.present and ins.steps.count == 32  # the step loop has 32 steps
        plot = screen.query_one("#ins-plot", OptionList)
        assert plot.option_count == 32 and "█" in str(plot.get_option_at_index(0).prompt)
        assert "no GPU activity in this trace" in str(screen.query_one("#ins-findings", Static).render())

        await pilot.press("r")  # a user regex: the phases become the steps
        prompt = app.screen
        assert isinstance(prompt, PromptScreen) and prompt.title_text.startswith("Regex for the step slices")
        assert prompt.focused is prompt.query_one("#prompt-input", Input)  # typing goes into the regex box
        await pilot.press(*"^execute_model$", "enter")
        await _settle(pilot)
        assert screen.insights.steps.source == "user" and screen.insights.steps.count == 32
        await pilot.press("0", "0", "0")  # recomputing while a result is on its way: one plot, no clash
        await _settle(pilot)
        assert len(screen.query("#ins-plot")) == 1 and screen.insights.steps.count == 32

        await pilot.press("down", "down", "down", "enter")  # step #3: back to the timeline, selected and framed
        assert not isinstance(app.screen, InsightsScreen)
        row = int(screen.insights.steps.rows[3])
        assert app.view.selected == row and app.view.t0 <= store.slices.start_ns[row] < app.view.t1
        await pilot.press("0", "i")
        await _settle(pilot)
        await pilot.press("escape")
        assert not isinstance(app.screen, InsightsScreen)
        await pilot.press("w", "w", "i")  # zoomed in: insights over the window only
        await _settle(pilot)
        v = app.view
        assert (app.screen.insights.range.t0, app.screen.insights.range.t1) == (max(v.t0, 0), min(v.t1, store.span_ns))
        assert app.screen.insights.steps.count < 32


async def test_gpu_idle_gaps_list_longest_first_and_jumps():
    path = FIXTURES / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    # Independent path: GPU work per pid from the raw JSON, merged, the gaps between.
    work: dict = {}
    for e in raw_events(path):
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset"):
            work.setdefault(e["pid"], []).append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))))
    gaps = []
    for spans in work.values():
        spans.sort()
        end = spans[0][1]
        for a, b in spans[1:]:
            if a > end:
                gaps.append(a - end)
            end = max(end, b)
    longest_us = max(gaps)
    store = load_trace(path)
    app = VtuiApp(path, store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        lengths = [g.length for g in screen.gaps]
        assert lengths == sorted(lengths, reverse=True)
        assert abs(lengths[0] / 1000 - longest_us) < 0.01
        assert all(g.cpu for g in screen.gaps)  # what the CPU was doing is said
        gap = screen.gaps[1]
        screen.query_one("#ins-gaps", OptionList).focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        v = app.view
        assert app.screen is app.screen_stack[0]
        assert v.t0 <= gap.start and gap.end <= v.t1 and v.span < store.span_ns / 10
        assert v.selected == gap.next_row


def test_kernel_outliers_are_instances_far_above_their_median(tmp_path):
    import json

    from vtui.analysis.gpu.jump_lists import kernel_outliers

    durs = [10, 11, 10, 12, 100, 9]  # µs; 100 is the outlier of "gemm"
    events = [{"ph": "X", "ts": 200 * i, "dur": d, "name": "gemm", "cat": "kernel", "pid": 0, "tid": 7}
              for i, d in enumerate(durs)]
    events += [{"ph": "X", "ts": 200 * i + 50, "dur": 40, "name": "copy", "cat": "kernel", "pid": 0, "tid": 7}
               for i in range(4)]
    path = tmp_path / "k.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(path)
    out = kernel_outliers(store, time_range(store))
    assert [(store.name(o.row), o.dur, o.median) for o in out] == [("gemm", 100_000, 11_000)]


async def test_an_idle_gap_says_what_held_the_work_after_its_launch(tmp_path):
    """SGLang's decode shape (tests/core/test_idle_causes.py): the next kernel was launched 39.6 µs
    into the gap, then held behind a hipStreamWaitEvent; the list and the findings say so."""
    from tests.core.test_idle_causes import _events, _truth

    events = _events()
    want = _truth(events)
    path = tmp_path / "sglang_like.json"
    path.write_text(__import__("json").dumps({"traceEvents": events}))
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(200, 48)) as pilot:
        await pilot.pause()
        await pilot.press("i")
        await app.workers.wait_for_complete()
        await pilot.pause()
        (gap,) = app.screen.gaps
        assert (gap.cpu_launch_ns, gap.queued_ns, gap.held_by) == (want["cpu"], want["after_launch"], "hipStreamWaitEvent")
        line = str(app.screen.query_one("#ins-gaps", OptionList).get_option_at_index(0).prompt)
        assert "CPU 39.6 µs, then behind hipStreamWaitEvent 493." in line
        text = " ".join(str(w.render()) for w in app.screen.query(Static))
        assert "held behind a stream wait (hipStreamWaitEvent" in text and "waiting for the CPU to launch" not in text
