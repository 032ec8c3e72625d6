"""PyTorch's ``[memory]`` instants drawn as counter tracks (memory allocated / reserved per device,
a filled line, the value at the cursor), checked cell by cell against plain Python over the raw JSON."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.app.screen import read_screen
from tests.helpers import X, settle, write_trace
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp

QWEN = Path(__file__).parents[2] / "fixtures" / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
SPARK = "▁▂▃▄▅▆▇█"


def _raw_events(path: Path) -> list[dict]:
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


def _raw_series(events: list[dict], device_type: int, device_id: int, total: str) -> list[tuple[float, int]]:
    """(ts µs, level) of one device's total, in time order, straight from the JSON."""
    out = [(e["ts"], e["args"][total]) for e in events if e.get("name") == "[memory]"
           and e["args"].get("Device Type") == device_type and e["args"].get("Device Id") == device_id]
    return sorted(out, key=lambda p: p[0])


def _expected_line(series: list[tuple[float, int]], origin_us: float, span_us: float, width: int) -> str:
    """The glyph per cell: the highest level inside the cell (the one in force at its left edge, or
    any sample within), scaled 0..max to ▁..█; blank before the first sample."""
    values = [v for _, v in series]
    lo, hi = min(0, min(values)), max(values)  # heights from 0 to the maximum
    out = []
    for c in range(width):
        left, right = origin_us + c * span_us / width, origin_us + (c + 1) * span_us / width
        held = [v for ts, v in series if ts <= left][-1:] + [v for ts, v in series if left <= ts < right]
        out.append(" " if not held else SPARK[round((max(held) - lo) / ((hi - lo) or 1) * 7)])
    return "".join(out)


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


@pytest.mark.parametrize("size", [(160, 48), (120, 40)])
async def test_memory_allocated_is_drawn_where_the_json_says(size):
    events = _raw_events(QWEN)
    timed = [e for e in events if e.get("ph") != "M" and "ts" in e]
    origin = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - origin
    series = _raw_series(events, 1, 0, "Total Allocated")
    store = load_trace(QWEN, cache=False)
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = read_screen(app)
        rows = screen.find("cuda:0 allocated")
        assert len(rows) == 1, "the memory row is drawn once, with its name"
        line = screen.text[rows[0]]
        ruler = screen.text[next(y for y, text in enumerate(screen.text) if "┼0ns" in text)]
        x0 = ruler.index("┼0ns")  # full zoom-out: the 0 tick starts the plot
        plot = line[x0:]
        assert plot == _expected_line(series, origin, span, len(plot))
        assert screen.find("cuda:0 reserved")

        # The value at the cursor: the level when the selected slice starts, at the row's right end.
        kernel = next(e for e in timed if e.get("cat") == "kernel" and e["ts"] > series[len(series) // 2][0])
        row = next(r for r in range(len(store.slices))
                   if store.name(r) == kernel["name"] and abs(store.ts_to_abs_us(int(store.slices.start_ns[r])) - kernel["ts"]) < 0.01)
        app.view.select(row)
        app._update()
        await settle(pilot, 2)
        screen = read_screen(app)
        line = screen.text[screen.find("cuda:0 allocated")[0]]
        level = [v for ts, v in series if ts <= kernel["ts"]][-1]
        assert line.rstrip().endswith(" " + _gib(level)), line


async def test_memory_without_totals_is_the_running_sum_of_bytes(tmp_path):
    """Old traces carry only Bytes: the level is their running sum (relative to the profile's start)."""
    mem = [(100, 1024), (200, 4096), (300, -1024), (400, 1 << 20)]
    events = [X("work", 0, 500), X("later", 350, 100)]
    events += [{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
                "args": {"Bytes": b, "Device Type": 1, "Device Id": 3}} for ts, b in mem]
    path = write_trace(tmp_path, events)
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = read_screen(app)
        assert screen.find("cuda:3 allocated")
        assert not screen.find("reserved")  # no totals: nothing reserved to draw
        store = app.view.store
        app.view.select(next(r for r in range(len(store.slices)) if store.name(r) == "later"))
        app._update()
        await settle(pilot, 2)
        line = read_screen(app).text[read_screen(app).find("cuda:3 allocated")[0]]
        assert line.rstrip().endswith(" 4.0 KiB"), line  # 1024 + 4096 - 1024 at 350 µs


async def test_memory_rows_come_right_after_the_first_frame(monkeypatch):
    """The first frame is drawn before the memory series are built (that pass reads every
    [memory] event's args); the rows follow without a key press."""
    from vtui.analysis.gpu import memory_tracks
    from vtui.ui.timeline.lanes import Timeline

    built: list[bool] = []
    first_paint: list[bool] = []
    build = memory_tracks._build
    monkeypatch.setattr(memory_tracks, "_build", lambda store: built.append(True) or build(store))
    render_line = Timeline.render_line

    def spy(self, y):
        if not first_paint:
            first_paint.append(bool(built))  # were the series built before the first line drawn?
        return render_line(self, y)

    monkeypatch.setattr(Timeline, "render_line", spy)
    store = load_trace(QWEN, cache=False)
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert first_paint == [False], "the timeline's first paint waited for the memory series"
        screen = read_screen(app)
        assert len(screen.find("cuda:0 allocated")) == 1, "the memory row is drawn once the first frame is out"
        assert any(r.series >= 0 for r in app.view.rows), "the view's rows hold the memory series"
