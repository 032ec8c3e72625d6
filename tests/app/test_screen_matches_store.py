"""What the screen shows must match the store: the ruler spans the window, slices sit in the
columns their times map to, the last slice reaches the right edge at full zoom-out, names on
screen are distinct, the call tree shows names at 80×24. Read from the composed screen
(tests/app/screen.py), checked against the event list the test wrote itself."""

from __future__ import annotations

import pytest

from tests.app.screen import read_screen, ruler_ticks
from tests.helpers import X, settle, write_trace
from vtui.load.trace import load_trace
from vtui.present.bars import EIGHTHS
from vtui.ui.app import VtuiApp
from vtui.ui.timeline.tracklist import TrackList

STEPS, STEP_US, GAP_US = 12, 20_000, 100_000  # 12 steps over 1.34 s; each gap wider than two cells at 80×24
HEAD = "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, "
# Long names alike but for the middle or the very end: a cut from the right makes them print the same.
OPS = [HEAD + f"at::native::binary_internal::{k}Functor<float> >, std::array<char*, 3ul> >(int, {t}*)"
       for k in ("Mul", "Add") for t in ("float", "double")]


def _events() -> list[dict]:
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 1, "args": {"name": "engine"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "loopthread"}},
    ]
    for i in range(STEPS):
        ts = i * (STEP_US + GAP_US)
        events.append(X("engine_step", ts, STEP_US))
        for j, name in enumerate(OPS):
            events.append(X(name, ts + 1000 + j * 4500, 4000 - 1000 * (j % 2) - 100 * (i % 7)))
    return events


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    path = write_trace(tmp_path_factory.mktemp("screen"), _events())
    return path, load_trace(path, cache=False)


def _step_spans() -> list[tuple[int, int]]:
    """The steps in ns from the trace start, from the event list alone."""
    return [(i * (STEP_US + GAP_US) * 1000, (i * (STEP_US + GAP_US) + STEP_US) * 1000) for i in range(STEPS)]


def check_timeline(screen, span_ns: int) -> None:
    """The ruler and the step row on ``screen`` against the trace's own times."""
    ruler = next(y for y, line in enumerate(screen.text) if "┼" in line)
    ticks = ruler_ticks(screen.text[ruler])
    x0 = ticks[0][0]
    assert ticks[0][1] == 0  # full zoom-out: the window starts at the trace start
    width = screen.width - x0  # the plot must reach the right edge of the window
    for x, t in ticks:  # every tick where its time maps, within a cell
        assert abs(x - (x0 + t / span_ns * width)) <= 1, (x, t, x0, width)
    step = ticks[1][1] - ticks[0][1]
    assert ticks[-1][1] + 2 * step >= span_ns  # the ticks run to the end of the trace
    row = next(y for y in screen.find("loopthread") if y > ruler)
    bg = screen.bg[row]
    cell = span_ns / width
    spans = _step_spans()
    gap_colour = {bg[x0 + c] for c in range(width)
                  if all(not (a < (c + 1) * cell and b > c * cell) for a, b in spans)}
    assert len(gap_colour) == 1  # cells wholly in a gap: all the background colour
    line = screen.text[row]

    def painted(x: int) -> bool:  # a slice's colour, or its sub-cell edge (an eighth block in its ink)
        return bg[x] not in gap_colour or line[x] in EIGHTHS

    for a, b in spans:  # each step drawn in the columns its time maps to
        assert painted(x0 + int((a + b) / 2 / cell)), (a, b)
    assert painted(screen.width - 1)  # the last step ends the trace: it reaches the right edge
    # and nothing is drawn in a cell wholly inside a gap
    assert not any(line[x0 + c].strip() for c in range(width)
                   if all(not (a < (c + 1) * cell and b > c * cell) for a, b in spans))


SIZES = [(80, 24), (120, 40), (160, 48), (220, 50)]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_the_timeline_spans_the_window_with_and_without_the_track_list(steps, size):
    path, store = steps
    app = VtuiApp(path, store=store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, 2)
        for shown in (True, False):
            if app.query_one(TrackList).display != shown:
                await pilot.press("T")
                await settle(pilot, 2)
            assert app.query_one(TrackList).display == shown
            screen = read_screen(app)
            check_timeline(screen, int(store.span_ns))
            if shown:  # the names once, in the track list: not again in a label column beside it
                row = next(y for y in screen.find("loopthread"))
                assert screen.text[row].count("loopthread") == 1


def is_cut_of(shown: str, name: str) -> bool:
    """``shown`` is ``name`` with parts replaced by ``…``: its pieces appear in order, the first at the
    start and the last at the end."""
    pieces = shown.split("…")
    if not name.startswith(pieces[0]) or not name.endswith(pieces[-1]):
        return False
    at = len(pieces[0])
    for piece in pieces[1:-1]:
        at = name.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return at <= len(name) - len(pieces[-1]) or len(pieces) == 1


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_aggregation_names_are_distinct_and_use_the_width(steps, size):
    path, store = steps
    app = VtuiApp(path, store=store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot, 2)
        screen = read_screen(app)
        shown = [line[line.index("void"):].split("  ")[0] for line in screen.text if "void" in line]
        assert len(shown) == len(OPS)  # every row on screen (at 80×24 too)
        assert len(set(shown)) == len(OPS)  # never two rows alike
        for text in shown:  # each a cut of one real name
            assert sum(is_cut_of(text, name) for name in OPS) == 1, text
        if size[0] >= 160:  # the width there is: far more than the old 36 cells
            assert min(len(t) for t in shown) >= 80


async def test_call_tree_shows_names_at_80x24(steps):
    path, store = steps
    app = VtuiApp(path, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("F")
        await settle(pilot, 2)
        screen = read_screen(app)
        assert screen.find("engine_step")  # a short name whole
        shown = [line[line.index("void"):].rstrip() for line in screen.text if "void" in line]
        assert len(shown) == len(OPS) and len(set(shown)) == len(OPS)
        for text in shown:
            assert len(text) >= 24 and sum(is_cut_of(text, name) for name in OPS) == 1, text
