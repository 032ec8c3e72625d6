"""The call tree screen: `F` opens it over the range and the visible tracks; arrows, zoom with
breadcrumbs, weight, invert, find, flame view, and the jump to the timeline."""

from __future__ import annotations

import numpy as np
from textual.widgets import Static

from tests.helpers import QWEN, X, settle, write_trace
from vtui.analysis.calltree.tree import build_tree
from vtui.load.trace import load_trace
from vtui.store.slicetime import time_range
from vtui.ui.app import VtuiApp
from vtui.ui.screens.flame import flame_layout, flame_segments
from vtui.ui.screens.tree import CallTreeScreen, CallTreeView


def _lines(view: CallTreeView) -> list[str]:
    return [view.render_line(y).text for y in range(view.size.height)]


async def _open_tree(pilot) -> CallTreeScreen:
    """`F` opens the call tree; it is built in a worker."""
    await pilot.press("F")
    await settle(pilot)
    assert isinstance(pilot.app.screen, CallTreeScreen)
    return pilot.app.screen


async def test_call_tree_screen_keys():
    store = load_trace(QWEN)
    app = VtuiApp(QWEN, store=store)
    async with app.run_test(size=(150, 40)) as pilot:
        await pilot.pause()
        v = app.view
        v.set_range(store.span_ns // 4, store.span_ns // 2)
        screen = await _open_tree(pilot)
        tree = screen.current
        expect = build_tree(store, time_range(store, store.span_ns // 4, store.span_ns // 2), v.visible_track_ids())
        assert (tree.t0, tree.t1, len(tree)) == (expect.t0, expect.t1, len(expect))
        assert np.array_equal(tree.total_ns, expect.total_ns)
        view = screen.query_one(CallTreeView)
        first = view.selected
        assert first == int(tree.sorted_children(-1)[0]) and tree.names[first] in _lines(view)[0]

        await pilot.press("down", "down")  # into the first root's subtree (opened at first)
        node = view.selected
        assert node != first and tree.depth[node] >= 1
        await pilot.press("enter")  # zoom: the node is the only root, breadcrumbs show it
        zoomed = screen.current
        assert len(screen.stack) == 2 and list(zoomed.names[r] for r in zoomed.roots()) == [tree.names[node]]
        assert zoomed.total_ns[0] == tree.total_ns[node]
        crumbs = str(screen.query_one("#ct-crumbs", Static).render())
        assert crumbs.startswith("all › ") and tree.names[node][:20] in crumbs
        await pilot.press("backspace")
        assert len(screen.stack) == 1 and screen.current is tree

        await pilot.press("w")
        assert screen.weight == "self" and "weight self" in str(screen.query_one("#ct-title", Static).render())
        await pilot.press("w")
        assert screen.weight == "gpu"  # the trace has GPU work
        await pilot.press("w")
        assert screen.weight == "total"

        await pilot.press("I")  # bottom-up
        inv = screen.current
        assert screen.inverted and inv.inverted and int(inv.total_ns[inv.roots()].sum()) == int(tree.self_ns.sum())
        await pilot.press("I")
        assert not screen.inverted and screen.current is tree

        await pilot.press("slash", *"cudaLaunchKernel", "enter")  # marks matches, selects the heaviest
        assert view.marked is not None and view.marked.sum() >= 1
        launch = view.selected
        assert tree.names[launch].startswith("cudaLaunchKernel")
        assert all("cudaLaunchKernel" in tree.names[n] for n in np.flatnonzero(view.marked))

        await pilot.press("f")  # flame graph: rows are depths
        assert view.flame and "flame graph" in str(screen.query_one("#ct-title", Static).render())
        top_row = _lines(view)[0]
        assert tree.names[int(tree.sorted_children(-1)[0])][:10] in top_row
        await pilot.press("up")  # the caller
        picked = view.selected
        assert picked == int(tree.parent[launch])

        await pilot.press("t")  # to the timeline: the node's longest slice, selected and in view
        assert not isinstance(app.screen, CallTreeScreen)
        row = tree.longest_slice(picked)
        assert v.selected == row and v.t0 <= store.slices.start_ns[row] < v.t1
        assert store.name(row).startswith(tree.names[picked].split("*")[0].rstrip("#_"))


async def test_escape_at_the_top_closes_and_empty_range_says_so(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 0, "dur": 10, "pid": 1, "tid": 1},'
                    '{"ph": "X", "name": "b", "ts": 100, "dur": 10, "pid": 1, "tid": 1}]}')
    store = load_trace(path, cache=False)
    app = VtuiApp(path, store=store)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.view.set_range(30_000, 60_000)  # between the two slices
        screen = await _open_tree(pilot)
        assert len(screen.current) == 0
        assert "no slices in this range" in _lines(screen.query_one(CallTreeView))[0]
        await pilot.press("w", "I", "f", "enter", "t", "down")  # nothing to act on: no crash
        await pilot.press("escape")
        assert not isinstance(app.screen, CallTreeScreen)


def test_flame_rows_fill_the_width_in_proportion():
    tree = build_tree(load_trace(QWEN))
    layout = flame_layout(tree, "total")
    rows = [flame_segments(tree, layout, d, 200) for d in range(60)]
    assert all(sum(len(s.text) for s in r) == 200 for r in rows)
    # widths follow the weights: the heaviest root's block spans its share of the row
    roots = tree.sorted_children(-1)
    share = tree.total_ns[roots[0]] / tree.total_ns[roots].sum()
    first = rows[0][0]
    assert abs(len(first.text) - round(share * 200)) <= 1


async def test_palette_offers_the_call_tree_and_names_stay_text(tmp_path):
    """The command palette lists it; names with markup and control characters render as text."""
    path = tmp_path / "odd.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "[bold red]x[/]", "ts": 0, "dur": 10, "pid": 1, "tid": 1},'
                    '{"ph": "X", "name": "esc\\u001b[31m;", "ts": 2, "dur": 5, "pid": 1, "tid": 1}]}')
    store = load_trace(path, cache=False)
    app = VtuiApp(path, store=store)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert any("Call tree" in t for t in titles)
        view = (await _open_tree(pilot)).query_one(CallTreeView)
        text = "\n".join(_lines(view))
        assert "[bold red]x[/]" in text and "esc\\x1b[31m;" in text and "\x1b" not in text
        await pilot.press("f")
        text = "\n".join(_lines(view))
        assert "[bold red]x[/]" in text and "\x1b" not in text


async def test_a_deep_chain_opens_in_both_views(tmp_path):
    n = 2000
    path = write_trace(tmp_path, [X(f"f{i % 5}", i, 2 * (n - i) + 1) for i in range(n)], "deep.json")
    store = load_trace(path, cache=False)
    app = VtuiApp(path, store=store)
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.pause()
        screen = await _open_tree(pilot)
        view = screen.query_one(CallTreeView)
        rows = view.rows()  # one chain: open down to the nodes under 2 % of the view
        assert len(screen.current) == n and n * 0.95 < len(rows) < n
        await pilot.press("end")
        last, depth = rows[-1]
        assert view.selected == last and f"{depth}› " in "\n".join(_lines(view))  # deep rows say their depth
        await pilot.press("f", "up")  # the icicle keeps the node: its caller
        assert view.selected == last - 1
        await pilot.press("enter")  # zoom: the rest of the chain from there
        assert len(screen.stack) == 2 and len(screen.current) == n - depth + 1
        await pilot.press("I")
        assert len(screen.current) > 0 and int(screen.current.depth.max()) < 256
