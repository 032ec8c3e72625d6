"""The hand-over view: every hand-over (a Python frame calling into native code) listed, sorted by
depth, self or total time, checked against plain Python over the call tree."""

from __future__ import annotations

from tests.app.screen import read_screen
from tests.helpers import settle
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp


def _handover_nodes(store, tree) -> list[tuple[int, int, int, int]]:
    """(python depth, self ns, total ns, node) of every hand-over, in plain Python over the tree:
    a node that is not a Python frame (most of its slices not python_function) under one that is."""
    votes: dict[int, list[int]] = {}
    for row, node in zip(tree.rows.tolist(), tree.row_node.tolist()):
        py = store.strings[int(store.slices.cat_id[row])] == "python_function"
        votes.setdefault(node, [0, 0])[py] += 1
    is_py = [votes.get(n, [1, 0])[1] * 2 > sum(votes.get(n, [1, 0])) for n in range(len(tree))]
    out = []
    for n in range(len(tree)):
        p = int(tree.parent[n])
        if is_py[n] or p < 0 or not is_py[p]:
            continue
        depth, up = 0, p
        while up >= 0:
            depth += is_py[up]
            up = int(tree.parent[up])
        out.append((depth, int(tree.self_ns[n]), int(tree.total_ns[n]), n))
    return out


async def test_handover_view_lists_every_handover_and_sorts_by_depth_self_total():
    from tests.app.test_handover_ui import _handover_screen
    from tests.helpers import STACK
    from vtui.analysis.calltree.tree import build_tree
    from vtui.units import format_duration as fd

    store = load_trace(STACK)
    app = VtuiApp(STACK, store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        want = _handover_nodes(store, build_tree(store, None, app.view.visible_track_ids()))
        assert len(want) > 20  # more than the CLI text lists (8): the table holds them all
        screen = await _handover_screen(pilot)
        table = screen.query_one("#ho-table")
        assert table.row_count == len(want)
        summary = "\n".join(read_screen(app).text)
        assert f"{len(want)} hand-overs by total ↓" in summary

        def first_row() -> list[str]:
            return [str(c) for c in table.get_row_at(0)]

        assert first_row()[0] == fd(max(w[2] for w in want))
        await pilot.press("d")
        await settle(pilot)
        assert first_row()[3] == str(max(w[0] for w in want))  # the deepest hand-over first
        assert any(str(max(w[0] for w in want)) in line for line in read_screen(app).text)
        await pilot.press("d")
        await settle(pilot)
        assert first_row()[3] == str(min(w[0] for w in want))  # again: reversed
        await pilot.press("s")
        await settle(pilot)
        assert first_row()[1] == fd(max(w[1] for w in want))
