"""The aggregation's "% range" is the share of the range's wall time during which a slice of the
row runs (its slices' union, clipped to the range): a slice that fills the range is 100 % however
many tracks there are, and nested calls of one name are not counted twice. The CLI's `pct` and
the app's column say the same."""

from __future__ import annotations

import json

from tests.app.screen import read_screen
from tests.helpers import QWEN, X, settle, write_trace
from vtui.cli import main
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


def _union(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for a, b in sorted(intervals):
        if reach is None or a > reach:
            total += b - a
            reach = b
        elif b > reach:
            total += b - reach
            reach = b
    return total


def _stats(capsys, path, *args) -> dict:
    assert main(["stats", str(path), "--format", "json", "--top", "1000", *args]) == 0
    return json.loads(capsys.readouterr().out)


EVENTS = [X("fill", 0, 1000, tid=1), X("other", 0, 1000, tid=2),  # two tracks, each filled
          X("_call_impl", 100, 800, tid=1), X("_call_impl", 150, 700, tid=1), X("_call_impl", 200, 100, tid=1),
          X("half", 0, 500, tid=2), X("half", 250, 500, tid=1)]


def test_pct_is_the_share_of_the_ranges_wall_time(tmp_path, capsys):
    path = write_trace(tmp_path, EVENTS)
    d = _stats(capsys, path)
    pct = {r["name"]: r["pct"] for r in d["rows"]}
    assert pct["fill"] == 100.0 and pct["other"] == 100.0  # not 50 % with two tracks
    assert pct["_call_impl"] == 80.0  # 100–900 µs: nesting counted once, not 160 %
    assert pct["half"] == 75.0  # 0–750 µs over two tracks
    d = _stats(capsys, path, "--range", "500us:1000us")
    pct = {r["name"]: r["pct"] for r in d["rows"]}
    assert pct["fill"] == 100.0 and pct["_call_impl"] == 80.0 and pct["half"] == 50.0


def test_pct_on_a_real_trace_matches_a_plain_union(capsys):
    store = load_trace(QWEN)
    d = _stats(capsys, QWEN)
    t0, t1 = d["t0_ns"], d["t1_ns"]
    s = store.slices
    spans: dict[str, list[tuple[int, int]]] = {}
    for r in range(len(s)):
        a, b = max(int(s.start_ns[r]), t0), min(int(s.end_ns[r]), t1)
        if b > a or (a == b and t0 <= a < t1):
            spans.setdefault(store.name(r), []).append((a, b))
    for row in d["rows"][:40]:
        want = round(100.0 * _union(spans[row["name"]]) / (t1 - t0), 3)
        assert row["pct"] == want, row["name"]
        assert row["pct"] <= 100.0


async def test_the_app_column_is_the_same_share(tmp_path):
    path = write_trace(tmp_path, EVENTS)
    app = VtuiApp(path, store=load_trace(path, cache=False))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = read_screen(app)
        line = next(line for line in screen.text if line.lstrip().startswith("fill "))
        assert line.rstrip().endswith("100.00%")
        line = next(line for line in screen.text if line.lstrip().startswith("_call_impl "))
        assert line.rstrip().endswith("80.00%")
        header = next(line for line in screen.text if " name " in line and "count" in line)
        assert "% range" in header
