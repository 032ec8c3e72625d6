"""The states shown in screenshots/ (scripts/screenshots.py drives the same keys) as snapshot tests,
each at a narrow (80×24) and a wide (160×48) terminal: a change to what any of them draws shows up
as a snapshot diff (`pytest --snapshot-update` rewrites them after a change meant to be seen).

Every state is driven from a store loaded once per module, so the snapshots hold only what the
trace and the keys decide: no load times, no temp paths."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, QWEN, SHARED_TRACES, STACK, STEPLOOP, settle
from vtui.demo import demo_trace_path
from vtui.load.trace import load_trace
from vtui.ui.app import VtuiApp

NSYS = FIXTURES / "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
SIZES = {"narrow": (80, 24), "wide": (160, 48)}
Setup = Callable[[object], Awaitable[None]]


async def select_flow(pilot) -> None:
    """The GPU stream and the Python thread alone, a launch with a flow selected."""
    await pilot.press("t", *"stream|thread 25286", "enter")
    pilot.app.view.select(int(pilot.app.store.flows.src_slice[100]))


async def select_nsys_kernel(pilot) -> None:
    """The second kernel of the Nsight Systems export, launched from its cudaLaunchKernel."""
    store = pilot.app.store
    kernels = [r for r in store.flows.dst_slice.tolist() if store.strings[int(store.slices.cat_id[r])] == "kernel"]
    pilot.app.view.select(kernels[1])


async def range_and_search(pilot) -> None:
    """A range over the middle of the trace, a search, one measurement between two matches."""
    v = pilot.app.view
    v.set_range(v.store.span_ns // 4, v.store.span_ns // 2)
    await pilot.press("slash", *"aten::addmm", "enter")
    await settle(pilot)  # the search runs in a worker
    await pilot.press("n", "m", "n", "n", "m")


async def middle_half(pilot) -> None:
    """The middle half of the run as the range: the call tree over the decoder layers."""
    v = pilot.app.view
    v.set_range(v.store.span_ns // 4, 3 * v.store.span_ns // 4)


async def memory_at_a_kernel_launch(pilot) -> None:
    """The Python thread alone, its memory rows in view, the cursor on a slice 40% in."""
    await pilot.press("t", *"thread 25286", "enter")
    store, v = pilot.app.store, pilot.app.view
    shallow = [r for r in range(len(store.slices)) if store.slices.lane[r] < v.lane_cap]
    v.select(min(shallow, key=lambda r: abs(int(store.slices.start_ns[r]) - 0.4 * store.span_ns)))
    v.show_all()
    pilot.app._update()


async def quiet(pilot) -> None:
    """Every worker done (a computed screen starts its worker once mounted: twice over), and no
    toast: each lives a few seconds of wall-clock time, so a busy machine would keep it or not."""
    for _ in range(2):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    pilot.app.clear_notifications()
    await pilot.pause()


# find the decoder layers, zoom into them, clear the marks
LAYER = ["F", "slash", *"Qwen2DecoderLayer", "enter", "enter", "slash", "ctrl+u", "enter"]

# name in screenshots/ -> (trace, setup before the keys, keys)
STATES: dict[str, tuple[str, Setup | None, list[str]]] = {
    "main": ("demo", None, []),
    "zoomed-details": ("demo", None, ["w", "w", "w", "down", "down", "down", "f"]),
    "gpu-filtered-flow": ("qwen", select_flow, ["f", "right_square_bracket"]),
    "range-aggregation": ("qwen", range_and_search, ["2"]),
    "measure": ("qwen", range_and_search, ["3"]),
    "insights": ("steploop", None, ["i"]),
    "insights-gpu": ("qwen", None, ["i", "end"]),
    "call-tree": ("qwen", middle_half, [*LAYER, "down", "down", "down"]),
    "flame-graph": ("qwen", middle_half, [*LAYER, "f", "down", "down", "down"]),
    "nsys": ("nsys", select_nsys_kernel, ["f", "s", "s", "s", "s"]),
    "deep-stack": ("stack", None, ["w", "w", "down"]),  # screenshots/small-terminal.svg at 80×24
    "help": ("stack", None, ["question_mark"]),
    "memory-counters": ("qwen", memory_at_a_kernel_launch, []),
    "ranks": ("ranks", None, ["K"]),
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, tuple[Path, object]]:
    """Each trace the states use, loaded once: (path, store)."""
    from benchmarks.ranks_synth import rank_events, slow_rank, write_rank

    ranks = tmp_path_factory.mktemp("screens") / "tp4-ranks"
    ranks.mkdir()
    for r in range(4):  # rank 2 computes longer before every all-reduce: the straggler
        write_rank(ranks, f"llama_dp0_pp0_tp{r}_rank{r}.pt.trace.json", rank_events(r, 4, 6, slow_rank(2)), r, 4)
    paths = {"demo": demo_trace_path(), "qwen": QWEN, "steploop": STEPLOOP, "nsys": NSYS, "stack": STACK,
             "ranks": ranks}
    return {name: (path, load_trace(path, cache=False)) for name, path in paths.items()}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("state", STATES)
def test_screenshot_state(snap_compare, stores, state, size):
    trace, setup, keys = STATES[state]
    path, store = stores[trace]

    async def before(pilot) -> None:
        await settle(pilot)
        if setup is not None:
            await setup(pilot)
        await pilot.press(*keys)
        await quiet(pilot)

    assert snap_compare(VtuiApp(path, store=store), terminal_size=SIZES[size], run_before=before)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("keys", [["l", "w"], ["3"]], ids=["locked-zoomed", "ops"])
def test_screenshot_compare(snap_compare, size, keys):
    """screenshots/compare.svg and compare-ops.svg: the two generated runs of one model, with and
    without the KV cache."""
    generated = SHARED_TRACES / "generated"
    a, b = generated / "hf_llama_kvcache.json.gz", generated / "hf_llama_nocache.json.gz"
    if not (a.exists() and b.exists()):
        pytest.skip("../shared/traces/generated is not present")
    from vtui.ui.screens.compare import CompareApp

    async def before(pilot) -> None:
        await settle(pilot, 2)
        await pilot.press(*keys)
        await quiet(pilot)

    app = CompareApp(a, b, stores=(load_trace(a, cache=False), load_trace(b, cache=False)))
    assert snap_compare(app, terminal_size=SIZES[size], run_before=before)
