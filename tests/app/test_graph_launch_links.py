"""A kernel of a graph replay and its graph launch, linked by their correlation id whether Kineto
wrote one flow for the graph or none: the details and the flow keys, the load warnings, and the
pairing done off the UI thread."""

from __future__ import annotations

import threading

import pytest

from tests.app.screen import read_screen
from tests.helpers import X, load_events, settle
from vtui.ui.app import VtuiApp


def graph_replay(flows: bool) -> list[dict]:
    """A vLLM decode step replaying a HIP graph: one ``hipGraphLaunch`` whose three kernels carry
    its correlation id. Kineto writes one ac2g flow, to the first kernel (``flows``), or none."""
    ev = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "VLLM::EngineCore"}},
          {"ph": "M", "name": "process_name", "pid": 2, "tid": 7, "args": {"name": "GPU 0"}},
          {"ph": "M", "name": "thread_name", "pid": 2, "tid": 7, "args": {"name": "stream 7"}},
          X("execute_context_0(0)_generation_4(4)", 0, 1000, cat="user_annotation"),
          X("hipGraphLaunch", 100, 30, cat="cuda_runtime", correlation=77),
          X("hipStreamSynchronize", 200, 700, cat="cuda_runtime", correlation=78)]
    for k, name in enumerate(("rmsnorm_kernel", "gemm_kernel", "attention_kernel")):
        ev.append(X(name, 300 + 150 * k, 100, cat="kernel", pid=2, tid=7, correlation=77))
    if flows:
        ev += [{"ph": "s", "id": 77, "pid": 1, "tid": 1, "ts": 100, "cat": "ac2g", "name": "ac2g"},
               {"ph": "f", "id": 77, "pid": 2, "tid": 7, "ts": 300, "cat": "ac2g", "name": "ac2g", "bp": "e"}]
    return ev


@pytest.mark.parametrize("flows", [True, False])
async def test_a_graph_kernel_leads_back_to_its_graph_launch_by_correlation(tmp_path, flows):
    # A kernel of a HIP graph replay (its correlation id is the hipGraphLaunch's; Kineto writes one
    # flow for the whole graph, or none) said nothing of its launch, and [ said "No incoming flow
    # into this slice" with the hipGraphLaunch on screen.
    store = load_events(tmp_path, graph_replay(flows))
    app = VtuiApp(tmp_path / "t.json", store=store)
    rows = {store.name(r): r for r in range(len(store.slices))}
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        pane = app.query_one("MainPane")
        pane.act(lambda v: v.select(rows["attention_kernel"]))
        await settle(pilot, 2)
        text = "\n".join(read_screen(app).text)
        assert "launch ← hipGraphLaunch on" in text, text
        await pilot.press("left_square_bracket")
        await settle(pilot, 2)
        assert app.view.selected == rows["hipGraphLaunch"]
        text = "\n".join(read_screen(app).text)
        assert "No incoming flow" not in text, text
        # the launch lists the kernels it launched; ] goes to the first
        assert "launched → attention_kernel on GPU 0" in text, text
        await pilot.press("right_square_bracket")
        await settle(pilot, 2)
        assert app.view.selected == rows["rmsnorm_kernel"]
        pane.act(lambda v: v.select(rows["hipStreamSynchronize"]))  # a call that launched nothing: no link
        await settle(pilot, 2)
        assert "launched →" not in "\n".join(read_screen(app).text)


async def test_load_warnings_do_not_call_a_graph_replays_kernels_launched_before_the_trace(tmp_path):
    # Kineto writes one ac2g "s" at a hipGraphLaunch and an "f" with the same id at each kernel of
    # the graph; all but the first "f" found the flow closed, and W said "2 flow ends had no start
    # (launched before the trace?)" with the launch in the trace. A flow end whose id never
    # started still says so.
    events = graph_replay(flows=True)
    events += [{"ph": "f", "id": 77, "pid": 2, "tid": 7, "ts": t, "cat": "ac2g", "name": "ac2g", "bp": "e"}
               for t in (450, 600)]  # the graph's other two kernels
    events += [X("early_kernel", 950, 10, cat="kernel", pid=2, tid=7, correlation=5),
               {"ph": "f", "id": 5, "pid": 2, "tid": 7, "ts": 950, "cat": "ac2g", "name": "ac2g", "bp": "e"}]
    store = load_events(tmp_path, events)
    app = VtuiApp(tmp_path / "t.json", store=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("W")
        await settle(pilot, 2)
        text = "\n".join(read_screen(app).text)
        assert "1 flow ends had no start (launched before the trace?)" in text, text
        assert "2 flow ends reuse the id of a flow already ended" in text, text


async def test_pairing_launches_by_correlation_runs_off_the_ui_thread(tmp_path, monkeypatch):
    # Pairing decodes the args of every launch call and GPU op without a flow: 0.45 s of CPU for
    # 300k kernels, paid on the UI thread at the first click on a kernel.
    import vtui.analysis.base.launched as launched  # noqa: PLC0415

    threads = []
    real = launched._pair_all

    def recording(store):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(store)

    monkeypatch.setattr(launched, "_pair_all", recording)
    store = load_events(tmp_path, graph_replay(flows=False))
    app = VtuiApp(tmp_path / "t.json", store=store)
    rows = {store.name(r): r for r in range(len(store.slices))}
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.query_one("MainPane").act(lambda v: v.select(rows["gemm_kernel"]))
        await settle(pilot, 2)
        assert threads == [False], threads  # once, in a worker
        text = "\n".join(read_screen(app).text)
        assert "launch ← hipGraphLaunch on" in text, text  # shown when the worker is done
