"""NO_COLOR: the timeline stays readable with no colour at all (no-color.org)."""

from __future__ import annotations

import numpy as np

from tests.helpers import QWEN
from vtui.ui.app import VtuiApp
from vtui.ui.timeline.lanes import Timeline
from vtui.ui.timeline.render import LIGHT, SHADE, lane_segments
from vtui.ui.timeline.tracklist import TrackList


def _colourless(segments) -> bool:
    return all(seg.style is None or (seg.style.color is None and seg.style.bgcolor is None) for seg in segments)


def _look(seg) -> tuple:
    """What tells a block from its neighbour without colour: attributes and the fill glyph."""
    st = seg.style
    return bool(st.reverse), bool(st.bold), bool(st.underline), SHADE in seg.text, LIGHT in seg.text


def _touching_blocks(segments):
    """Pairs of slice blocks with no gap between them (empty cells are unstyled spaces)."""
    def is_block(seg):
        return bool(seg.style) and (seg.style.reverse or seg.style.bold or seg.style.dim)
    return [(a, b) for a, b in zip(segments, segments[1:]) if is_block(a) and is_block(b)]


def test_mono_lanes_have_no_colour_and_neighbours_differ(qwen_store):
    store = qwen_store
    s = store.slices
    gpu = next(t for t in store.tracks if t.kind == "gpu")
    cpu = max(store.tracks, key=lambda t: t.lanes)
    pairs = 0
    for track, lane in [(gpu.id, 0), *((cpu.id, k) for k in range(cpu.lanes))]:
        rows = np.flatnonzero((s.track == track) & (s.lane == lane))
        for width, (t0, t1) in [(120, (0, int(store.span_ns))),
                                (120, (int(s.start_ns[rows[0]]), int(s.end_ns[rows[min(5, len(rows) - 1)]])))]:
            segs = lane_segments(store, track, lane, t0, t1, width, mono=True)
            assert _colourless(segs)
            assert sum(len(seg.text) for seg in segs) == width
            for a, b in _touching_blocks(segs):
                pairs += 1
                assert _look(a) != _look(b), (a, b)
            blocks = [seg for seg in segs if seg.style and (seg.style.reverse or seg.style.bold)]
            assert blocks and all(bool(seg.style.underline) == (track == gpu.id) for seg in blocks)  # GPU vs CPU
    assert pairs > 10  # touching neighbours were seen (kernels back to back, nested calls)
    # The selection: reverse + bold with ▶ ◀, unlike any other block.
    row = int(np.flatnonzero(s.track == gpu.id)[3])
    a, b = int(s.start_ns[row]), int(s.end_ns[row])
    segs = lane_segments(store, gpu.id, int(s.lane[row]), a - (b - a), b + (b - a), 60, selected=row, mono=True)
    chosen = [seg for seg in segs if "▶" in seg.text]
    assert len(chosen) == 1 and chosen[0].style.reverse and chosen[0].style.bold and chosen[0].text.endswith("◀")
    assert _colourless(segs)
    # Outside a highlight: dim, and still told apart.
    segs = lane_segments(store, gpu.id, 0, a - 20 * (b - a), b + 20 * (b - a), 80, highlight=np.zeros(len(s), bool),
                         mono=True)
    assert _colourless(segs) and all(seg.style.dim for seg in segs if seg.text.strip())
    assert all(_look(x) != _look(y) for x, y in _touching_blocks(segs))


async def test_app_under_no_color_draws_without_colour(monkeypatch, qwen_store):
    monkeypatch.setenv("NO_COLOR", "1")
    store = qwen_store
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert app.no_color
        await pilot.press("right")  # a selection, so its style is drawn too
        await pilot.pause()
        timeline, tracks = app.query_one(Timeline), app.query_one(TrackList)
        lines = [timeline.render_line(y) for y in range(timeline.size.height)]
        lines += [tracks.render_line(y) for y in range(tracks.size.height)]
        assert all(_colourless(list(strip)) for strip in lines)
        assert any("▶" in seg.text and seg.style.reverse for strip in lines for seg in strip)
        for strip in lines[: timeline.size.height]:
            for a, b in _touching_blocks(list(strip)[2:]):  # past the label column
                assert _look(a) != _look(b)


def test_only_a_non_empty_no_color_turns_colour_off(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "")
    assert not VtuiApp(QWEN).no_color
    monkeypatch.setenv("NO_COLOR", "0")  # any non-empty value, "0" too
    assert VtuiApp(QWEN).no_color
