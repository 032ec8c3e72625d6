"""Serving steps and graph replays on producers and versions the shared traces lack (see
tests/serving_cases.py): each figure is checked against what the generator meant and against plain
Python over the raw JSON (step times, TTFT, TPOT, graph kernels per step)."""

from __future__ import annotations

import re
import statistics

import pytest

from tests import serving_cases as sc
from tests.helpers import raw_events, raw_origin, raw_span_ns, union_length
from vtui.analysis.report.insights import compute_insights
from vtui.load.trace import load_trace

CASES = [sc.sglang_decode_only, sc.vllm_v1_profilerstep, sc.hf_profilerstep_loop, sc.vllm_rocm_tp2_new_cached,
         sc.hf_decode_only, sc.steps_two_threads, sc.vllm_piecewise_graphs, sc.sglang_frames_only,
         sc.trtllm_packed, sc.vllm_v1_five_steps]
ALL = sc.CASES


def _raw_steps(case: sc.Case, events: list[dict], first_start_ns: int) -> tuple[object, list[tuple[int, int]]]:
    """(pid, (start, end) ns of the step events) of the rank whose first step vtui took (parallel ranks)."""
    origin = raw_origin(events)
    pat = re.compile(case.step_name)
    by_pid: dict = {}
    for e in events:
        if e.get("ph") == "X" and pat.search(e["name"]) and (not case.step_pids or e["pid"] in case.step_pids):
            by_pid.setdefault(e["pid"], []).append(raw_span_ns(origin, e))
    spans = [(pid, sorted(v)) for pid, v in by_pid.items()]
    return next((s for s in spans if s[1][0][0] == first_start_ns), spans[0])


def _graph_kernels_by_step(events: list[dict], pid, steps: list[tuple[int, int]]) -> list[int]:
    """Kernels replayed (same correlation) by the graph launches made in each step, on its process."""
    origin = raw_origin(events)
    launches = {e["args"]["correlation"]: raw_span_ns(origin, e)[0] for e in events
                if e.get("ph") == "X" and e["name"] in ("cudaGraphLaunch", "hipGraphLaunch") and e["pid"] == pid}
    out = [0] * len(steps)
    for e in events:
        if e.get("cat") == "kernel" and e["args"]["correlation"] in launches:
            t = launches[e["args"]["correlation"]]
            for i, (a, b) in enumerate(steps):
                if a <= t < b:
                    out[i] += 1
    return out


def _launched_gpu_ns(events: list[dict], pid, steps: list[tuple[int, int]]) -> list[int]:
    """Per step: the union length of the device work whose launch call (same correlation) starts in
    the step on the step's process (the step's thread in these traces: one thread launches per step)."""
    origin = raw_origin(events)
    calls = {e["args"]["correlation"]: (e["tid"], raw_span_ns(origin, e)[0]) for e in events
             if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and e["pid"] == pid
             and "correlation" in e.get("args", {})}
    tids = {}
    for e in events:
        if e.get("ph") == "X" and e["pid"] == pid and re.search(r"^execute_|^step\[|^nn\.Module: ", e["name"]):
            tids[raw_span_ns(origin, e)] = e["tid"]
    out: list[list[tuple[int, int]]] = [[] for _ in steps]
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy") and e["args"].get("correlation") in calls:
            tid, t = calls[e["args"]["correlation"]]
            for i, span in enumerate(steps):
                if span[0] <= t < span[1] and tids.get(span, tid) == tid:
                    out[i].append(raw_span_ns(origin, e))
    return [union_length(iv) for iv in out]


@pytest.mark.parametrize("make", CASES, ids=lambda f: f.__name__)
def test_serving_figures_on_producer(make, tmp_path):
    case = make()
    path = case.write(tmp_path)
    ins = compute_insights(load_trace(path, cache=False))
    sv, truth = ins.serving, case.steps
    assert sv.present and len(sv.steps) == len(truth), (case.name, len(sv.steps))
    events = raw_events(path)
    pid, spans = _raw_steps(case, events, sv.steps[0].start_ns)
    assert [(s.start_ns, s.start_ns + s.dur_ns) for s in sv.steps] == spans
    for s, t in zip(sv.steps, truth):
        assert (s.kind, s.prefill_requests, s.decode_requests) == (t.kind, t.prefill_requests, t.decode_requests)
        if case.tokens_known:
            assert (s.prefill_tokens, s.decode_tokens) == (t.prefill_tokens, t.decode_tokens)
    kinds = [t.kind for t in truth]
    durs = [b - a for a, b in spans]
    first_prefill = next((i for i, k in enumerate(kinds) if k in ("prefill", "mixed")), None)
    want_ttft = spans[first_prefill][1] - spans[0][0] if case.run_start and first_prefill is not None else None
    assert sv.ttft_ns == want_ttft
    decode = [d for d, k in zip(durs, kinds) if k == "decode"]
    assert sv.tpot_ns == (statistics.median(decode) if decode else None)
    assert ins.graphs.launches == case.graph_launches
    assert [s.gpu_ns for s in sv.steps] == _launched_gpu_ns(events, pid, spans)
    per_step = _graph_kernels_by_step(events, pid, spans)
    assert per_step == [t.graph_kernels for t in truth]
    if ins.graphs.per_step:
        assert [g.kernels for g in ins.graphs.per_step] == per_step
        origin = raw_origin(events)
        calls = [raw_span_ns(origin, e)[0] for e in events if e.get("ph") == "X" and e["pid"] == pid
                 and e["name"] in ("cudaGraphLaunch", "hipGraphLaunch")]
        assert [g.launches for g in ins.graphs.per_step] == [sum(a <= c < b for c in calls) for a, b in spans]
    # `vtui insights --json` says the same
    from vtui.present.insights_json import insights_dict

    d = insights_dict(ins)["serving"]
    assert [x["kind"] for x in d["steps"]] == kinds and d["ttft_ns"] == want_ttft
    assert (d["prefill_steps"], d["decode_steps"], d["mixed_steps"]) == tuple(kinds.count(k) for k in ("prefill", "decode", "mixed"))
    assert [x["dur_ns"] for x in d["steps"]] == durs and [x["gpu_ns"] for x in d["steps"]] == [s.gpu_ns for s in sv.steps]
    g = insights_dict(ins)["graphs"]
    graph_corr = {e["args"]["correlation"] for e in events if e.get("ph") == "X"
                  and e["name"] in ("cudaGraphLaunch", "hipGraphLaunch")}
    assert g["launches"] == case.graph_launches
    assert g["kernels"] == sum(1 for e in events if e.get("cat") == "kernel" and e["args"]["correlation"] in graph_corr)
    # the step list says the kind of the first step, never "prefill / time to first token" for a decode
    if kinds[0] == "decode":
        from vtui.present.insights_text import steps_lines
        assert not any("prefill / time to first token" in ln for ln in steps_lines(ins))


def test_vllm_new_cached_form():
    """vLLM's execute_new_{n}_cached_{m}: requests only; the tokens stay unknown (0)."""
    from vtui.analysis.steps.step_names import parse_step_name

    for name, want in [("execute_new_8_cached_0", ("prefill", 8, 0)), ("execute_new_0_cached_31", ("decode", 0, 31)),
                       ("execute_new_2_cached_8", ("mixed", 2, 8)), ("execute_new_0_cached_0", ("unknown", 0, 0))]:
        p = parse_step_name(name)
        assert p is not None and (p.kind, p.prefill_requests, p.decode_requests) == want
        assert p.prefill_tokens == p.decode_tokens == 0
    assert parse_step_name("execute_new_" + "9" * 40 + "_cached_1") is None


@pytest.mark.parametrize("make", [sc.sglang_decode_only, sc.hf_decode_only], ids=lambda f: f.__name__)
def test_decode_first_step_is_no_ttft_anywhere(make, tmp_path, capsys):
    """A trace profiled after the prompt: neither the serving part nor the steps' own figures (JSON,
    the comparison metrics) call its first decode step a time to first token."""
    from tests.helpers import cli_json
    from vtui.analysis.report.insights import summary_metrics

    path = make().write(tmp_path)
    d = cli_json(capsys, "insights", "--no-cache", "--json", path)
    assert d["serving"]["ttft_ns"] is None and d["serving"]["decode_steps"] == len(make().steps)
    assert d["steps"]["ttft_ns"] is None and d["steps"]["first_ns"] > 0
    m = summary_metrics(load_trace(path, cache=False))
    assert m["ttft_ns"] is None and m["serving_ttft_ns"] is None and m["tpot_ns"] is not None


def test_step_annotations_saying_cached_are_no_cache_events(tmp_path):
    """vLLM's execute_new_{n}_cached_{m}: the requests already running, not a cache."""
    from vtui.analysis.slices.caches import analyse_caches

    case = sc.vllm_rocm_tp2_new_cached()
    path = case.write(tmp_path)
    caches = analyse_caches(load_trace(path, cache=False))
    names = {n for n, _ in caches.by_name}
    assert not any(n.startswith("execute_new_") for n in names)
    raw = [e for e in raw_events(path) if e.get("ph") == "X" and "cache" in e["name"].lower()
           and not e["name"].startswith("execute_new_")]
    assert caches.events == len(raw)


@pytest.mark.parametrize("name, kind", [
    ("/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/model_runner.py(985): forward_extend", "prefill"),
    ("/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py(970): forward_decode", "decode"),
    ("sglang/srt/model_executor/model_runner.py(1001): forward_idle", None),
    ("/sgl-workspace/sglang/python/sglang/srt/layers/attention/aiter_backend.py(2039): forward_extend", None),
    ("sglang/srt/model_executor/model_runner.py(985): forward_extend_helper", None),
])
def test_frame_kinds(name, kind):
    from vtui.analysis.steps.step_names import frame_kind

    assert frame_kind(name) == kind


@pytest.mark.parametrize("name, step", [
    ("/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py(1175): run_batch", True),
    ("sglang/srt/managers/scheduler.py(2919): _run_batch_inner", False),
    ("vllm/v1/engine/core.py(404): step", True),
    ("/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py(441): step_with_batch_queue", True),
    ("vllm/v1/engine/core.py(1090): run_engine_core", False),
    ("mysglang/srt/managers/scheduler.py(1): run_batch", False),
])
def test_engine_step_frames(name, step):
    from vtui.analysis.steps.step_names import ENGINE_FRAME_REGEX

    assert bool(re.search(ENGINE_FRAME_REGEX, name)) == step


@pytest.mark.parametrize("make", [sc.vllm_rocm_tp2_new_cached, sc.sglang_frames_only, sc.sglang_decode_only],
                         ids=lambda f: f.__name__)
def test_text_says_when_the_trace_has_no_token_counts(make, tmp_path):
    """Requests or frames only: the report says the tokens are not written, not "0 prefill tokens"."""
    from vtui.present.serving_text import serving_lines

    case = make()
    text = "\n".join(serving_lines(compute_insights(load_trace(case.write(tmp_path), cache=False)).serving))
    if case.tokens_known:
        decode = sum(t.decode_tokens for t in case.steps)
        assert f"/ {decode:,} decode tokens" in text and "not in the trace" not in text
    else:
        assert "token counts not in the trace" in text and "0 prefill / 0 decode tokens" not in text
        assert "     0+0" not in text


def test_no_steady_window_without_batch_sizes(tmp_path):
    """SGLang frames say decode, not how many requests: no "steady batch ≈ 0" window."""
    sv = compute_insights(load_trace(sc.sglang_frames_only().write(tmp_path), cache=False)).serving
    assert sv.count("decode") == 10 and all(s.decode_requests == 0 for s in sv.steps)
    assert sv.steady is None


def test_steps_say_which_of_several_engine_processes(tmp_path):
    """Two TP workers in one trace: the steps are one worker's, and the report says whose."""
    from vtui.present.insights_text import steps_lines

    case = sc.vllm_rocm_tp2_new_cached()
    path = case.write(tmp_path)
    ins = compute_insights(load_trace(path, cache=False))
    events = raw_events(path)
    pid, _ = _raw_steps(case, events, ins.serving.steps[0].start_ns)
    name = next(e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name" and e["pid"] == pid)
    assert ins.steps.processes == 2
    assert f"on {name} pid {pid}, 1 of 2 processes with such steps" in steps_lines(ins)[0]
    one = compute_insights(load_trace(sc.vllm_v1_profilerstep().write(tmp_path), cache=False))
    assert one.steps.processes == 1 and "processes with such steps" not in steps_lines(one)[0]


def test_threads_whose_steps_overlap_are_not_joined(tmp_path):
    """Two threads of one process with steps at the same times (parallel copies, not one loop taking
    turns): the steps are one thread's. Taking turns, they are joined (see steps_two_threads)."""
    from tests.helpers import X, load_events
    from vtui.analysis.steps.detect import analyse_steps

    ev = []
    for i in range(6):
        t = 100.0 + i * 1000
        ev.append(X("execute_context_0(0)_generation_2(2)", t, 800, cat="user_annotation", pid=7, tid=1))
        ev.append(X("execute_context_0(0)_generation_2(2)", t + 50, 800, cat="user_annotation", pid=7, tid=2))
    st = analyse_steps(load_events(tmp_path, ev))
    assert st.count == 6
    ev2 = [dict(e, ts=e["ts"] + (500 if e["tid"] == 2 else 0), dur=400) for e in ev]  # now they take turns
    assert analyse_steps(load_events(tmp_path, ev2, "t2.json")).count == 12


def test_training_steps_stay_profiler_steps(tmp_path):
    """prof.step() per training iteration with one forward pass each: the step is the iteration
    (forward, backward, optimizer), not the forward pass, and nothing is called a prefill."""
    from tests.helpers import X, load_events
    from vtui.analysis.steps.detect import analyse_steps

    ev = []
    for i in range(5):
        t = 100.0 + i * 10000
        ev.append(X(f"ProfilerStep#{i}", t, 9000, cat="user_annotation"))
        ev.append(X("nn.Module: LlamaForCausalLM_0", t + 100, 3000, cat="python_function"))
        ev.append(X("autograd::engine::evaluate_function: MmBackward0", t + 3500, 4000))
        ev.append(X("Optimizer.step#AdamW.step", t + 8000, 800))
    store = load_events(tmp_path, ev)
    st = analyse_steps(store)
    assert st.pattern == "ProfilerStep#N" and st.count == 5
    assert compute_insights(store).serving.kinds_known is False
