"""Regenerate screenshots/*.svg by driving the app over real fixtures.

    python scripts/screenshots.py
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vtui.demo import demo_trace_path  # noqa: E402
from vtui.ui.app import VtuiApp  # noqa: E402

OUT = ROOT / "screenshots"
QWEN = ROOT / "fixtures" / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
NSYS = ROOT / "fixtures" / "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
STEPLOOP = ROOT / "fixtures" / "hf_llama_steploop.json.gz"  # 32 steps: the insights screenshot's step plot


async def shoot(path: Path, name: str, keys: list[str], setup=None, size: tuple[int, int] = (160, 44)) -> None:
    app = VtuiApp(path)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        if setup:
            await setup(pilot)
        await pilot.press(*keys)
        await app.workers.wait_for_complete()  # screens that compute in a worker (insights)
        await pilot.pause()
        app.save_screenshot(str(OUT / name))


async def select_flow(pilot) -> None:
    await pilot.press("t", *"stream|thread 25286", "enter")
    f = pilot.app.store.flows
    pilot.app.view.select(int(f.src_slice[100]))


async def select_nsys_kernel(pilot) -> None:
    """The second kernel of the Nsight Systems export, launched from its cudaLaunchKernel."""
    store = pilot.app.store
    kernels = [r for r in store.flows.dst_slice.tolist() if store.strings[int(store.slices.cat_id[r])] == "kernel"]
    pilot.app.view.select(kernels[1])


async def range_search_measure(pilot) -> None:
    """A range over the middle of the trace, a search, and one measurement between two matches."""
    v = pilot.app.view
    v.set_range(v.store.span_ns // 4, v.store.span_ns // 2)
    await pilot.press("slash", *"aten::addmm", "enter")
    await pilot.app.workers.wait_for_complete()  # the search runs in a worker
    await pilot.press("n", "m", "n", "n", "m")


async def shoot_compare(a: Path, b: Path, name: str, keys: list[str]) -> None:
    from vtui.ui.screens.compare import CompareApp

    app = CompareApp(a, b)
    async with app.run_test(size=(160, 44)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
        app.save_screenshot(str(OUT / name))


async def tree_range(pilot) -> None:
    """The call tree over the middle half of the run: down into the decoder layers."""
    v = pilot.app.view
    v.set_range(v.store.span_ns // 4, 3 * v.store.span_ns // 4)


DIFF_ARGS = ["--depth", "4", "--min-pct", "0.3"]


def shoot_tree_diff(a: Path, b: Path, name: str) -> None:
    """`vtui tree A --against B` as a terminal screenshot (Rich's SVG export of the text)."""
    import contextlib
    import io

    from rich.console import Console
    from rich.text import Text

    from vtui.cli import main as cli

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        cli(["tree", str(a), "--against", str(b), *DIFF_ARGS])
    console = Console(record=True, width=160, file=io.StringIO())
    console.print(Text(f"$ vtui tree {a.name} --against {b.name} {' '.join(DIFF_ARGS)}\n", style="bold"))
    for line in buf.getvalue().splitlines()[:60]:
        style = "#98c379" if " added " in line else "#ff6b6b" if " removed " in line else ""
        console.print(Text(line, style=style), overflow="crop", no_wrap=True)
    console.save_svg(str(OUT / name), title="vtui tree --against")


async def shoot_ranks(name: str) -> None:
    """A folder of 4 synthetic ranks (benchmarks/ranks_synth.py), rank 2 computing longer before
    every all-reduce: the ranks screen with the straggler marked."""
    import tempfile

    from benchmarks.ranks_synth import rank_events, slow_rank, write_rank

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tp4-ranks"
        folder.mkdir()
        for r in range(4):
            write_rank(folder, f"llama_dp0_pp0_tp{r}_rank{r}.pt.trace.json", rank_events(r, 4, 6, slow_rank(2)), r, 4)
        app = VtuiApp(folder)
        async with app.run_test(size=(160, 40)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("K")
            for _ in range(2):  # the screen starts its worker once mounted
                await app.workers.wait_for_complete()
                await pilot.pause()
            app.save_screenshot(str(OUT / name))


async def memory_at_a_kernel_launch(pilot) -> None:
    """The Python thread alone, its memory rows in view, the cursor on a slice 40% in (one of the
    rows shown while the deep thread stays folded)."""
    await pilot.press("t", *"thread 25286", "enter")
    store, v = pilot.app.store, pilot.app.view
    shallow = [r for r in range(len(store.slices)) if store.slices.lane[r] < v.lane_cap]
    v.select(min(shallow, key=lambda r: abs(int(store.slices.start_ns[r]) - 0.4 * store.span_ns)))
    v.show_all()
    pilot.app._update()


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    if sys.argv[1:] == ["ranks"]:  # only the ranks screen
        await shoot_ranks("ranks.svg")
        return
    if sys.argv[1:] == ["memory"]:  # only the memory counters
        await shoot(QWEN, "memory-counters.svg", [], setup=memory_at_a_kernel_launch)
        return
    if sys.argv[1:] == ["demo"]:  # only the bundled demo's screens
        await shoot(demo_trace_path(), "main.svg", [])
        await shoot(demo_trace_path(), "zoomed-details.svg", ["w", "w", "w", "down", "down", "down", "f"])
        return
    await shoot(QWEN, "memory-counters.svg", [], setup=memory_at_a_kernel_launch)
    await shoot_ranks("ranks.svg")
    await shoot(demo_trace_path(), "main.svg", [])
    await shoot(demo_trace_path(), "zoomed-details.svg", ["w", "w", "w", "down", "down", "down", "f"])
    await shoot(QWEN, "gpu-filtered-flow.svg", ["f", "right_square_bracket"], setup=select_flow)
    await shoot(QWEN, "range-aggregation.svg", ["2"], setup=range_search_measure)
    await shoot(QWEN, "measure.svg", ["3"], setup=range_search_measure)
    await shoot(STEPLOOP, "insights.svg", ["i"])
    await shoot(QWEN, "insights-gpu.svg", ["i", "end"])
    # find the decoder layers, zoom into them, clear the marks
    layer = ["F", "slash", *"Qwen2DecoderLayer", "enter", "enter", "slash", "ctrl+u", "enter"]
    await shoot(QWEN, "call-tree.svg", [*layer, "down", "down", "down"], setup=tree_range)
    await shoot(QWEN, "flame-graph.svg", [*layer, "f", "down", "down", "down"], setup=tree_range)
    await shoot(NSYS, "nsys.svg", ["f", "s", "s", "s", "s"], setup=select_nsys_kernel)
    stack = ROOT / "fixtures" / "hf_llama_stack.json.gz"  # a Python thread 41 rows deep
    await shoot(stack, "small-terminal.svg", ["w", "w", "down"], size=(80, 24))  # track list hidden, rows folded
    await shoot(stack, "help.svg", ["question_mark"], size=(80, 24))
    generated = ROOT.parent / "shared" / "traces" / "generated"
    if (generated / "hf_llama_kvcache.json.gz").exists():  # the two runs of the compare example
        await shoot_compare(generated / "hf_llama_kvcache.json.gz", generated / "hf_llama_nocache.json.gz",
                            "compare.svg", ["l", "w"])  # locked with the first steps lined up, zoomed in
        await shoot_compare(generated / "hf_llama_kvcache.json.gz", generated / "hf_llama_nocache.json.gz",
                            "compare-ops.svg", ["3"])
        shoot_tree_diff(generated / "hf_llama_kvcache.json.gz", generated / "hf_llama_nocache.json.gz",
                        "call-tree-diff.svg")
    print(f"wrote {sorted(p.name for p in OUT.glob('*.svg'))}")


if __name__ == "__main__":
    asyncio.run(main())
