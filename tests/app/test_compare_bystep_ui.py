"""Compare mode's step-by-step view (tab 5), read from the screen: one kind's aligned steps of A
and B on one clock, kernels matched, added ones marked, the walk from the biggest difference, and
the per-operator difference, all checked against the edit that made B and the raw JSON."""

from __future__ import annotations

import re

from tests.diff_cases import ADD, LAYERS, NORM, Edit, engine_loop, write
from tests.helpers import settle
from vtui.load.trace import load_trace
from vtui.ui.screens.compare import CompareApp
from vtui.ui.screens.compare_steps import StepByStep

EXTRA = "void at::native::extra_copy_kernel<float>(float*)"
SLOW_STEP = 5  # B's sixth step (a decode) runs its first kernel 30 µs longer


def _decode_durations(trace: dict) -> list[float]:
    return [e["dur"] for e in trace["traceEvents"] if e.get("name", "").startswith("execute_context_0(0)")]


async def test_step_by_step_view(tmp_path):
    ta = engine_loop(decodes=6)
    tb = engine_loop(decodes=6, edit=Edit(add_after={ADD: ("aten::add", EXTRA, 15.0)}, step_first_us={SLOW_STEP: 30.0}))
    pa, pb = write(tmp_path, "a", ta), write(tmp_path, "b", tb)
    # the raw JSON's order of the pairs by |Δ|: the slowed step first, then the others in time order
    deltas = [abs(b - a) for a, b in zip(_decode_durations(ta), _decode_durations(tb))]
    biggest = max(range(len(deltas)), key=lambda i: deltas[i])
    assert biggest + 2 == SLOW_STEP  # two prefills come first
    app = CompareApp(pa, pb, stores=(load_trace(pa, cache=False), load_trace(pb, cache=False)))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, pauses=2)
        await pilot.press("5")
        await pilot.pause()
        view = app.query_one(StepByStep)
        assert app.focused is view

        def screen() -> list[str]:
            return str(view.render()).splitlines()

        lines = screen()
        assert lines[0].startswith("decode · pair 1/6 by |Δ|") and f"A step {SLOW_STEP} " in lines[0]
        assert f"B step {SLOW_STEP} " in lines[0]
        lane_a = next(line for line in lines if line.startswith("A  "))
        lane_b = next(line for line in lines if line.startswith("B  "))
        assert "+" not in lane_a and "×" not in lane_a and "+" in lane_b and "×" not in lane_b
        assert "▓" in lane_a and "▓" in lane_b  # the slowed first kernel, changed on both sides
        assert lines[lines.index(next(x for x in lines if x.startswith("This pair:")))] == \
            f"This pair: 1 changed, 0 removed, {LAYERS} added"
        text = "\n".join(lines)
        assert re.search(r"▓\s+\+30 µs\s+" + re.escape(NORM[:40]), text)
        assert len(re.findall(r"\+\s+\+15 µs\s+" + re.escape(EXTRA), text)) == LAYERS
        # per operator over the kind's 6 pairs: aten::add's added kernels, aten::mul's one slow launch
        assert re.search(r"\+60 µs\s+aten::add", text) and re.search(r"\+5 µs\s+aten::mul", text)
        await pilot.press("n")
        assert screen()[0].startswith("decode · pair 2/6") and " A step 2 " in screen()[0]
        await pilot.press("N")
        assert screen()[0].startswith("decode · pair 1/6") and f" A step {SLOW_STEP} " in screen()[0]
        await pilot.press("c")
        first = screen()[0]
        assert first.startswith("prefill · pair 1/2") and "[prefill] decode" in first
        assert "no operator's kernels differ" in "\n".join(screen())
