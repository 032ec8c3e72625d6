"""What one lane draws, cell by cell, against a plain-Python reading of the drawing rule: a cell
shows the slice covering its left edge, else the first slice starting inside it; a bar that ends
inside a cell followed by an empty one ends with an eighth block; the selection always shows;
highlighting dims the rest."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import X, load_events
from vtui.ui.timeline.render import DIMMED, EIGHTHS, SELECTED, colour_of, lane_segments


@pytest.fixture
def lane_store(tmp_path):
    # The lane under test is on thread 2; thread 1 comes first, so the lane's rows do not start at 0.
    other = [X(f"other{i}", i * 7, 5, tid=1) for i in range(20)]
    events = [X("alpha", 0, 10, tid=2), X("beta", 10, 15, tid=2), X("gamma", 40, 1, tid=2),
              X("delta", 41, 0.5, tid=2), X("eps", 55, 23.3, tid=2), X("zeta", 90, 4, tid=2),
              X("eta", 94.2, 0.1, tid=2), X("theta", 120, 33, tid=2)]
    store = load_events(tmp_path, other + events)
    track = int(store.slices.track[next(r for r in range(len(store.slices)) if store.name(r) == "alpha")])
    assert int(np.flatnonzero(store.slices.track == track)[0]) > 0
    return store, track


def _cells(segments) -> list:
    """(character, style) per cell."""
    return [(ch, seg.style) for seg in segments for ch in seg.text]


def _reference(store, track: int, t0: int, t1: int, width: int) -> list[int]:
    """The slice row each cell shows (-1: none): the one covering the cell's left edge, else the
    first that starts inside the cell."""
    s = store.slices
    rows = sorted((r for r in range(len(s)) if s.track[r] == track), key=lambda r: int(s.start_ns[r]))
    dt = (t1 - t0) / width
    out = []
    for c in range(width):
        left, right = t0 + dt * c, t0 + dt * (c + 1)
        cover = [r for r in rows if s.start_ns[r] <= left < s.end_ns[r]]
        inside = [r for r in rows if left <= s.start_ns[r] < right]
        out.append((cover or inside or [-1])[0])
    return out


@pytest.mark.parametrize("width", [8, 16, 40, 160])
def test_each_cell_shows_the_reference_slice(lane_store, width):
    store, track = lane_store
    t0, t1 = 0, int(store.span_ns)
    cells = _cells(lane_segments(store, track, 0, t0, t1, width))
    assert len(cells) == width
    for c, row in enumerate(_reference(store, track, t0, t1, width)):
        ch, style = cells[c]
        if row < 0:
            assert ch == " ", c
        elif ch in EIGHTHS[1:]:  # a partly covered last cell: the bar's colour as ink, nothing after it
            assert style.color.name == colour_of(store.name(row)), c
        else:
            assert style.bgcolor.name == colour_of(store.name(row)), (c, store.name(row))


def test_eighth_block_ends_a_bar_that_stops_inside_a_cell(lane_store):
    store, track = lane_store
    width = 16
    t0, t1 = 0, int(store.span_ns)
    dt = (t1 - t0) / width
    cells = _cells(lane_segments(store, track, 0, t0, t1, width))
    s = store.slices
    row = next(r for r in range(len(s)) if store.name(r) == "eps")
    last = int((s.end_ns[row] - t0) // dt)  # the cell where eps ends; the next one is empty
    frac = (s.end_ns[row] - (t0 + dt * last)) / dt
    assert 0 < frac < 1
    assert cells[last][0] == EIGHTHS[max(1, int(frac * 8))]
    assert cells[last][1].color.name == colour_of("eps")
    assert cells[last - 1][1].bgcolor.name == colour_of("eps")


def test_selection_shows_and_highlight_dims_the_rest(lane_store):
    store, track = lane_store
    s = store.slices
    t0, t1, width = 0, int(store.span_ns), 40
    delta = next(r for r in range(len(s)) if store.name(r) == "delta")  # narrower than a cell, behind gamma
    plain = _cells(lane_segments(store, track, 0, t0, t1, width))
    chosen = _cells(lane_segments(store, track, 0, t0, t1, width, selected=delta))
    changed = [c for c in range(width) if plain[c] != chosen[c]]
    assert changed and all(chosen[c][1] == SELECTED for c in changed)
    assert all(style != SELECTED for _, style in plain)
    keep = np.zeros(len(s), dtype=bool)
    keep[next(r for r in range(len(s)) if store.name(r) == "eps")] = True
    lit = _cells(lane_segments(store, track, 0, t0, t1, width, highlight=keep))
    colours = {st.bgcolor.name for ch, st in lit if st.bgcolor is not None and ch not in EIGHTHS}
    assert DIMMED in colours and colour_of("eps") in colours
    others = {colour_of(n) for n in ("alpha", "beta", "gamma", "zeta", "theta")} - {colour_of("eps")}
    assert others and not colours & others
