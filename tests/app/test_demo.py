"""`vtui` with no argument: the bundled demo is a real GPU serving trace (a vLLM decode step
replayed through a CUDA/HIP graph, with its capture beside it), shown on the first screen and
explained by Insights; its source and licence travel with it."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.app.screen import read_screen
from tests.helpers import ROOT, SHARED_TRACES, raw_events, settle
from vtui.cli import main
from vtui.demo import demo_trace_path
from vtui.ui.app import VtuiApp

PUBLIC = SHARED_TRACES / "public"
REPLAY = PUBLIC / "tracelens__vllm_decode_full_graph_execution.json.gz"
CAPTURE = PUBLIC / "tracelens__graph_capture_rank_0.1773709742341309550.pt.trace.json.gz"
DATA = ROOT / "vtui" / "data"


def _replay_facts() -> tuple[str, int]:
    """(the step annotation's name, kernels the graph launch replays), from the raw JSON."""
    events = raw_events(demo_trace_path())
    step = next(e["name"] for e in events if e.get("cat") == "user_annotation")
    launch = next(e for e in events if e.get("name") in ("hipGraphLaunch", "cudaGraphLaunch"))
    corr = launch["args"]["correlation"]
    kernels = sum(1 for e in events if e.get("cat") == "kernel" and e.get("args", {}).get("correlation") == corr)
    return step, kernels


async def test_the_first_screen_shows_gpu_work_and_the_decode_step():
    step, _ = _replay_facts()
    assert step.startswith("execute_32_context_0") and "generation_32" in step
    app = VtuiApp(demo_trace_path())  # as `vtui` opens it: loaded in the background, capture found beside it
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, 2)
        screen = read_screen(app)
        assert "capture demo_vllm_decode_graph_capture.json.gz" in screen.text[0]
        gpu = [y for y in screen.find("GPU") if "│" in screen.text[y]]
        assert gpu, "a GPU stream row on the first screen"
        # The kernels are drawn as coloured cells: from the first kernel's start to the trace's end
        # nearly every cell of the GPU row is coloured, before it none (the empty lane's colour).
        x0 = screen.text[1].index("┼0ns")
        bg = screen.bg[gpu[0]][x0:]
        first = min(int(e["ts"] * 1000) for e in raw_events(demo_trace_path()) if e.get("cat") == "kernel")
        origin = min(int(e["ts"] * 1000) for e in raw_events(demo_trace_path()) if "ts" in e)
        cut = int(len(bg) * (first - origin) / app.store.span_ns)
        empty = bg[0]
        assert all(c == empty for c in bg[:cut - 1])
        assert sum(c != empty for c in bg[cut + 1:]) >= 0.9 * (len(bg) - cut - 1)
        assert screen.find(step[:12]), "the decode step's annotation is drawn"


async def test_insights_on_the_demo_name_the_graph_replay_and_its_captured_ops():
    _, kernels = _replay_facts()
    assert kernels > 400
    app = VtuiApp(demo_trace_path())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, 2)
        await pilot.press("i")
        await app.screen.workers.wait_for_complete()
        await settle(pilot, 2)
        text = "\n".join(read_screen(app).text)
        assert f"1 graph launches replay {kernels} kernels" in text
        assert f"{kernels} of {kernels} kernels matched to the capture" in text
        assert "0 prefill · 1 decode" in text  # the serving step, from vLLM's annotation


def test_the_demo_and_its_licence_ship_with_the_package():
    from vtui.demo import ATTRIBUTION

    licence = (DATA / "LICENSE-TraceLens.md").read_text()
    assert "MIT License" in licence and "Advanced Micro Devices" in licence and "AMD-AGI/TraceLens" in licence
    assert "171dd74721ca1ec45709e5805b68ae1f65e27811" in licence
    assert "TraceLens" in ATTRIBUTION and "MIT" in ATTRIBUTION
    readme = (ROOT / "README.md").read_text()
    assert "vtui/data/LICENSE-TraceLens.md" in readme
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"data/capture_traces/*"' in pyproject  # the capture is package data too


@pytest.mark.skipif(not REPLAY.exists(), reason="the shared traces (../shared/traces/public) are absent")
def test_the_demo_is_the_shared_replay_and_an_excerpt_of_its_capture():
    """Byte for byte the replay; the capture is what scripts/demo_capture_excerpt.py writes from the original."""
    import importlib.util

    assert demo_trace_path().read_bytes() == REPLAY.read_bytes()
    spec = importlib.util.spec_from_file_location("demo_capture_excerpt", ROOT / "scripts" / "demo_capture_excerpt.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with gzip.open(CAPTURE) as f:
        want = module.excerpt(json.load(f))
    with gzip.open(DATA / "capture_traces" / "demo_vllm_decode_graph_capture.json.gz") as f:
        assert json.load(f) == want


@pytest.mark.skipif(not CAPTURE.exists(), reason="the shared traces (../shared/traces/public) are absent")
def test_the_capture_excerpt_gives_insights_what_the_whole_capture_gives(capsys):
    def capture_of(capture) -> dict:
        assert main(["insights", str(demo_trace_path()), "--json", "--capture", str(capture)]) == 0
        out = json.loads(capsys.readouterr().out)["graphs"]["capture"]
        out.pop("file")
        return out

    assert capture_of(DATA / "capture_traces" / "demo_vllm_decode_graph_capture.json.gz") == capture_of(CAPTURE)
