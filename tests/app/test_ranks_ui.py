"""The ranks screen: `K` opens it over a folder of ranks, the straggler is marked, `c` switches the
clocks, enter on a collective shows its kernel on every rank's timeline."""

from __future__ import annotations

from textual.widgets import OptionList, Static

from benchmarks.ranks_synth import NCCL, rank_events, slow_rank, write_rank
from tests.helpers import settle
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp
from vtui.ui.screens.ranks import RanksScreen


async def _settle(pilot) -> None:
    await settle(pilot)
    await settle(pilot)


def _folder(tmp_path):
    for r in range(3):
        write_rank(tmp_path, f"t_rank{r}.json", rank_events(r, 3, 2, slow_rank(1)), r, 3)
    return tmp_path


async def test_ranks_screen_marks_the_straggler_and_jumps(tmp_path):
    folder = _folder(tmp_path)
    store = load_trace(folder, cache=False)
    app = VtuiApp(folder, store=store)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("K")
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, RanksScreen) and screen.report is not None
        title, *rows = str(screen.query_one("#ranks-rows", Static).render()).splitlines()
        assert len(rows) == 3 and "◀ straggler" in rows[1] and "straggler" not in rows[0] + rows[2]
        # waits per step: rank 0 waits 537 µs per step (the full bar), rank 2 463 µs, the straggler none
        assert "537 µs" in title
        assert rows[0].count("█") == 2 * 6 and rows[1].count("█") == 0 and rows[2].count("█") == 2 * 5
        assert "straggler: rank 1" in str(screen.query_one("#ranks-summary", Static).render())
        await pilot.press("c")  # clocks: the first collective's end (the synthetic clocks agree: same answers)
        await _settle(pilot)
        assert screen.report.alignment.method == "collective" and [r.offset_ns for r in screen.report.ranks] == [0, 0, 0]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RanksScreen)
        await pilot.press("K")
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, RanksScreen)
        options = screen.query_one("#ranks-collectives", OptionList)
        assert options.option_count == 2 and "last rank 1" in str(options.get_option_at_index(0).prompt)

        await pilot.press("down", "enter")  # the second all-reduce
        await pilot.pause()
        assert not isinstance(app.screen, RanksScreen)
        s = store.slices
        want = sorted(r for r in range(len(s)) if store.name(r) == NCCL and s.start_ns[r] > s.start_ns.min() + 5_000_000)
        assert app.view.highlight is not None and sorted(app.view.highlight.nonzero()[0].tolist()) == want
        assert app.view.t0 <= min(s.start_ns[want]) and max(s.end_ns[want]) <= app.view.t1
        assert app.view.t1 - app.view.t0 < 5_000_000  # framed on the collective, not the whole trace



async def test_a_failing_ranks_analysis_is_one_line_on_the_screen(tmp_path, monkeypatch):
    import vtui.ui.screens.ranks as ranks_view

    def broken(tables, align):
        raise ValueError("no \x1b[31mclock\x1b[0m")

    monkeypatch.setattr(ranks_view, "analyse_ranks", broken)
    folder = _folder(tmp_path)
    app = VtuiApp(folder, store=load_trace(folder, cache=False))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("K")
        await _settle(pilot)
        assert isinstance(app.screen, RanksScreen) and app.is_running  # not ended by the worker's error
        summary = str(app.screen.query_one("#ranks-summary", Static).render())
        assert summary.startswith("could not compare the ranks (ValueError: no ") and "\x1b" not in summary


async def test_the_screen_says_which_matches_it_rejected_and_why_busbw_is_missing(tmp_path):
    """Rank 1's second all-reduce moves fewer elements: no pair; no group size recorded: no busbw."""
    for r in range(2):
        ev = rank_events(r, 2, 3, slow_rank(1), group=None)
        comm = [e["args"] for e in ev if e.get("name") == "record_param_comms"]
        for args in comm:
            del args["Group size"], args["Process Group Ranks"]
        if r == 1:
            comm[1]["In msg nelems"] = comm[1]["Out msg nelems"] = 1000
        write_rank(tmp_path, f"t_rank{r}.json", ev, r, 128)
    app = VtuiApp(tmp_path, store=load_trace(tmp_path, cache=False))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("K")
        await _settle(pilot)
        summary = str(app.screen.query_one("#ranks-summary", Static).render())
        assert "warning: 1 of 3 matches rejected: sizes differ (?all_reduce #1: 4,000 vs 4,194,304 B)" in summary
        assert "busbw –: group size unknown" in summary
        options = app.screen.query_one("#ranks-collectives", OptionList)
        assert options.option_count == 2 and "busbw – GB/s" in str(options.get_option_at_index(0).prompt)
