"""The selected slice's flow (launch → kernel) is drawn: a connector in the column of the kernel's
start, ● on the launch's row and on the kernel's, │ on the rows between."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import X, settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


def _events() -> list[dict]:
    ev = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "cputhread"}},
          {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "middlethread"}},
          {"ph": "M", "name": "process_name", "pid": 2, "tid": 7, "args": {"name": "gpu"}},
          {"ph": "M", "name": "thread_name", "pid": 2, "tid": 7, "args": {"name": "stream 7"}},
          X("step", 0, 1000), X("cudaLaunchKernel", 100, 20, cat="cuda_runtime", correlation=1),
          X("other", 0, 1000, tid=2),
          X("gemm_kernel", 600, 200, cat="kernel", pid=2, tid=7, correlation=1),
          {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 100, "cat": "ac2g", "name": "ac2g"},
          {"ph": "f", "id": 1, "pid": 2, "tid": 7, "ts": 600, "cat": "ac2g", "name": "ac2g", "bp": "e"}]
    return ev


async def test_the_selected_launch_draws_its_flow_to_the_kernel(tmp_path):
    path = write_trace(tmp_path, _events())
    store = load_trace(path, cache=False)
    app = VtuiApp(path, store=store)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        launch = next(r for r in range(len(store.slices)) if store.name(r) == "cudaLaunchKernel")
        assert not any("●" in line for line in read_screen(app).text)  # nothing selected: no connector
        app.view.select(launch)
        app._update()
        await settle(pilot, 2)
        screen = read_screen(app)
        ruler = next(y for y, line in enumerate(screen.text) if "┼" in line)
        x0 = screen.text[ruler].index("┼")  # full zoom-out: the 0 tick starts the plot
        span_ns = 1_000_000  # the trace: 0 – 1000 µs (step and other are 1000 µs long)
        x = x0 + int(600_000 / span_ns * (screen.width - x0))  # the kernel starts 600 µs in
        column = {y: screen.text[y][x] for y in range(ruler + 1, len(screen.text) - 3)}
        ends = [y for y, ch in column.items() if ch == "●"]
        assert len(ends) == 2, column
        launch_row = next(y for y in screen.find("cputhread") if y > ruler) + 1  # lane 1, under "step"
        kernel_row = next(y for y in screen.find("stream 7") if y > ruler)
        assert sorted(ends) == sorted((launch_row, kernel_row))
        assert all(column[y] == "│" for y in range(min(ends) + 1, max(ends)))  # the rows between


async def test_a_counter_track_shows_its_value_at_the_selection(tmp_path):
    """A `C` counter drawn as a filled line, with its value where the selected slice starts."""
    from tests.app.screen import read_screen as screen_of

    values = [(0, 5.0), (300, 1234.5), (700, 42.0)]
    events = [X("work", 100, 100), X("later", 750, 100)]
    events += [{"ph": "C", "name": "gpu_mem_MB", "pid": 1, "tid": 1, "ts": ts, "args": {"MB": v}} for ts, v in values]
    path = write_trace(tmp_path, events)
    store = load_trace(path, cache=False)
    app = VtuiApp(path, store=store)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        text = "\n".join(screen_of(app).text)
        assert "▁" in text or "█" in text  # drawn as a filled line
        for name, expect in (("work", "5"), ("later", "42")):  # the last sample at or before the start
            row = next(r for r in range(len(store.slices)) if store.name(r) == name)
            app.view.select(row)
            app._update()
            await settle(pilot, 2)
            line = next(line for line in screen_of(app).text if "█" in line or "▁" in line)
            assert line.rstrip().endswith(f" {expect}"), line
