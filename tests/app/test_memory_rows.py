"""The memory rows under the timeline: their places held ("computing…") while their series are
built off the UI thread, and in compare mode each ended where its trace ends."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import QWEN, X, settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


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
