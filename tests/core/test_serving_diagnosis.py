"""Serving conclusions on the shapes 2026 engines write, each on a synthetic trace shaped from a real
one (vLLM PIECEWISE replay and its capture, SGLang's decode with a blocking copy, a diffusion
pipeline's text encoders, an Nsight export's helper threads), the true figure computed by plain
Python over the events written:

- a step ends when its GPU work ends (TTFT, TPOT, tokens/s, compare/diff);
- steps only where there is LLM evidence; nothing in ``capture_*`` regions or on helper threads;
- blocking vs ordering sync points, a dominating blocking call as the headline, no CUDA-graph
  advice over graph replays."""

from __future__ import annotations

import sqlite3
import statistics
from pathlib import Path

import pytest

from tests.helpers import X, cli_json, load_events, write_trace
from vtui.analysis.report.compare import compare
from vtui.analysis.report.insights import compute_insights, summary_metrics
from vtui.analysis.steps.detect import analyse_steps
from vtui.analysis.steps.serving import analyse_serving
from vtui.load.trace import load_trace

CPU = {"pid": 851, "tid": 851}
GPU = {"pid": 2, "tid": 0}
NO_LLM_WORDS = ("prefill", "TTFT", "KV cache", "time to first token", "decode")


def _ns(us: float) -> int:
    return round(us * 1000)


# ---- vLLM PIECEWISE replay: the CPU runs ~150 ms ahead of the GPU ---------------------------------
LAG_US = 150_000.0
STEP_US = 26_353.0  # the annotation (the CPU's part of the step)
KERNEL_US = 6_500.0  # 6 kernels per step (two graphs of 2, 2 eager): 39 ms of GPU work per step


def piecewise_events(scale_gpu: float = 1.0):
    """A prefill then decode steps; per step two hipGraphLaunch (one correlation for a graph's
    kernels, no flow) and two eager launches; the GPU queue starts LAG_US behind and grows."""
    events, corr, gpu_free = [], 1000, 0.0
    plan = [("execute_context_1(512)_generation_0(0)", 0)] + [("execute_context_0(0)_generation_8(8)", 8)] * 6
    for i, (name, _) in enumerate(plan):
        t = 10_000.0 + i * (STEP_US + 500.0)
        events.append(X(name, t, STEP_US, cat="user_annotation", **CPU))
        gpu_at = max(t + LAG_US, gpu_free)
        for j, call in enumerate(("hipGraphLaunch", "hipLaunchKernel", "hipGraphLaunch", "hipLaunchKernel")):
            corr += 1
            events.append(X(call, t + 1000.0 + j * 5000.0, 400.0, cat="cuda_runtime", correlation=corr, **CPU))
            for k in range(2 if call == "hipGraphLaunch" else 1):
                dur = KERNEL_US * scale_gpu * (1.5 if call == "hipLaunchKernel" else 0.75)
                events.append(X(f"k_{j}_{k}", gpu_at, dur, cat="kernel", correlation=corr, **GPU))
                gpu_at += dur + 2.0
        gpu_free = gpu_at
    return events


def _true_steps(events):
    """Plain Python: per step (start, annotation end, end of the last kernel launched inside it) in ns
    from the trace's first event."""
    origin = min(e["ts"] for e in events)
    steps = sorted((e for e in events if e["name"].startswith("execute_")), key=lambda e: e["ts"])
    out = []
    for s in steps:
        mine = {e["args"]["correlation"] for e in events if e["cat"] == "cuda_runtime"
                and s["ts"] <= e["ts"] < s["ts"] + s["dur"]}
        last = max(e["ts"] + e["dur"] for e in events if e["cat"] == "kernel" and e["args"]["correlation"] in mine)
        start, cpu_end = _ns(s["ts"] - origin), _ns(s["ts"] + s["dur"] - origin)
        out.append((start, cpu_end, max(cpu_end, _ns(last - origin))))
    return out


def _own(true):
    """Each step's own time: from its start, or from the previous steps' end while their GPU work
    still ran (the queue the CPU built ahead is theirs), to its end."""
    out, before = [], None
    for start, _, end in true:
        out.append(end - max(start, before if before is not None else start))
        before = end if before is None else max(before, end)
    return out


def test_piecewise_replay_ttft_tpot_and_rate_end_with_the_gpu(tmp_path: Path, capsys):
    events = piecewise_events()
    true = _true_steps(events)
    assert all(end > cpu_end for _, cpu_end, end in true)  # the shape: every step's GPU work outlasts it
    store = load_events(tmp_path, events)
    st = analyse_steps(store)
    sv = analyse_serving(store, st)
    assert [(s.start_ns, s.start_ns + s.cpu_dur_ns, s.start_ns + s.queued_ns + s.dur_ns) for s in sv.steps] == true
    assert [s.dur_ns for s in sv.steps] == _own(true)
    assert all(s.gpu_outlasts for s in sv.steps)
    assert sv.ttft_ns == true[0][2] - true[0][0] and sv.ttft_cpu_ns == _ns(STEP_US)
    decode = _own(true)[1:]  # a token every step's own time: the GPU's 39 ms, not the 150+ ms queue
    assert sv.tpot_ns == statistics.median(decode) == _ns(6 * KERNEL_US + 6 * 2.0)
    assert sv.decode_tokens_per_s == pytest.approx(6 * 8 * 1e9 / (true[-1][2] - true[0][0]))
    assert sv.kind("decode").stats.median == statistics.median(decode)
    # the steps' own figures (the Steps section, compare mode, `vtui diff`) follow the same rule
    assert st.durations.tolist() == _own(true)
    assert st.cpu_durations.tolist() == [cpu_end - start for start, cpu_end, _ in true]
    m = summary_metrics(store)
    assert m["ttft_ns"] == m["serving_ttft_ns"] == true[0][2] - true[0][0] and m["tpot_ns"] == sv.tpot_ns
    assert m["step_median_ns"] == statistics.median(decode)
    slower = load_events(tmp_path, piecewise_events(scale_gpu=1.5), "slower.json")
    c = compare(store, slower)
    rows = {r.name: r for r in c.metrics}
    slow_true = _true_steps(piecewise_events(scale_gpu=1.5))
    assert rows["tpot_ns"].b == statistics.median(_own(slow_true)[1:])
    assert rows["tpot_ns"].better == "A"  # same CPU annotations: only the GPU's end tells them apart
    d = cli_json(capsys, "diff", write_trace(tmp_path, events, "a.json"), write_trace(tmp_path, piecewise_events(1.5), "b.json"),
                 "--json")
    by = {x["name"]: x for x in d["metrics"]}
    assert by["serving_ttft_ns"]["a"] == true[0][2] - true[0][0]
    assert by["serving_ttft_ns"]["b"] == slow_true[0][2] - slow_true[0][0]
    j = cli_json(capsys, "insights", write_trace(tmp_path, events, "c.json"), "--json")["serving"]
    assert j["ttft_ns"] == true[0][2] - true[0][0] and j["ttft_cpu_ns"] == _ns(STEP_US)
    assert [(s["dur_ns"], s["cpu_dur_ns"], s["gpu_outlasts"]) for s in j["steps"]] == \
        [(d, c - a, True) for (a, c, _e), d in zip(true, _own(true))]


# ---- steps only with LLM evidence ---------------------------------------------------------------
def _frame(name: str, ts: float, dur: float) -> dict:
    return X(name, ts, dur, cat="python_function", **CPU)


def _forward(events: list, frame: str, ts: float, dur: float, dims: list[int]) -> None:
    events.append(_frame(frame, ts, dur))
    events.append(X("aten::embedding", ts + 10, 50.0, **CPU, **{"Input Dims": [[32000, 4096], dims]}))
    events.append(X("aten::linear", ts + 100, dur - 200, **CPU))


def diffusion_events(wrapper: str = "diffusers/pipelines/flux/pipeline_flux.py(700): __call__"):
    """A diffusion pipeline: a CLIP text encoder (77 tokens), a T5 encoder (512), then the
    diffusion transformer's denoising passes (diffusers, not transformers)."""
    events = [_frame(wrapper, 0.0, 100_000.0)]
    _forward(events, "transformers/models/clip/modeling_clip.py(1050): forward", 100.0, 9_500.0, [1, 77])
    _forward(events, "transformers/models/t5/modeling_t5.py(1900): forward", 10_000.0, 20_000.0, [1, 512])
    for i in range(6):
        events.append(_frame("diffusers/models/transformers/transformer_flux.py(400): forward", 31_000.0 + i * 11_000, 10_000.0))
    return events


def test_text_encoders_and_a_diffusion_transformer_are_forwards_not_steps(tmp_path: Path, capsys):
    events = diffusion_events()
    # the shape: two transformers forward frames, the second 512 tokens per sequence (no decode), no generate()
    fwd = [e for e in events if e["name"].startswith("transformers/models/")]
    dims = [e["args"]["Input Dims"][1] for e in events if e["name"] == "aten::embedding"]
    assert len(fwd) == 2 and dims == [[1, 77], [1, 512]] and not any("generate" in e["name"] for e in events)
    store = load_events(tmp_path, events)
    st = analyse_steps(store)
    sv = analyse_serving(store, st)
    assert st.pattern != "transformers forward" and not sv.present and sv.ttft_ns is None and sv.tpot_ns is None
    path = write_trace(tmp_path, events, "d.json")
    d = cli_json(capsys, "insights", path, "--json")
    assert d["serving"]["present"] is False and d["serving"]["ttft_ns"] is None
    text = " ".join(f["message"] + " " + f["hint"] for f in d["findings"])
    assert not any(w in text for w in NO_LLM_WORDS)
    assert "no repeating step found (2 model forward pass(es) without LLM evidence" in text  # said plainly
    # an LM head's passes are no decode either when the later ones feed many tokens per sequence
    lm: list[dict] = []
    for k, dims in enumerate([[1, 77], [1, 512], [1, 512]]):
        _forward(lm, "nn.Module: GPT2LMHeadModel_0", 100.0 + k * 10_000.0, 9_000.0, dims)
    lm_store = load_events(tmp_path, lm, "lm.json")
    assert not analyse_serving(lm_store, analyse_steps(lm_store)).present


def test_generate_with_one_token_per_sequence_is_serving(tmp_path: Path):
    """The control: generate() around a causal LM's passes, one token per sequence after the first."""
    events = [_frame("transformers/generation/utils.py(2200): generate", 0.0, 100_000.0)]
    for i, dims in enumerate([[2, 40]] + [[2, 1]] * 5):
        _forward(events, "transformers/models/llama/modeling_llama.py(1150): forward", 100.0 + i * 10_000.0, 9_000.0, dims)
    store = load_events(tmp_path, events)
    sv = analyse_serving(store, analyse_steps(store))
    assert sv.present and [s.kind for s in sv.steps] == ["prefill"] + ["decode"] * 5
    assert sv.ttft_ns == _ns(9_000.0) and sum(s.decode_tokens for s in sv.steps) == 10


# ---- vLLM graph capture: the forward inside capture_* is a dummy run ------------------------------
def capture_events(region: str | None = "capture_32_FULL"):
    events = []
    if region:
        events.append(X(region, 0.0, 58_000.0, cat="user_annotation", **CPU))
        events.append(X(region, 500.0, 57_000.0, cat="gpu_user_annotation", **GPU))
    events.append(_frame("nn.Module: GptOssForCausalLM_0", 2_000.0, 54_909.0))
    events.append(X("execute_context_1(8192)_generation_0(0)", 2_100.0, 54_000.0, cat="user_annotation", **CPU))
    for i in range(4):
        events.append(X("hipLaunchKernel", 3_000.0 + i * 100, 5.0, cat="cuda_runtime", correlation=i + 1, **CPU))
        events.append(X(f"k{i}", 3_050.0 + i * 100, 20.0, cat="kernel", correlation=i + 1, **GPU))
    return events


def test_nothing_inside_a_capture_region_is_a_step(tmp_path: Path):
    events = capture_events()
    region = events[0]
    inside = [e for e in events if e["pid"] == CPU["pid"] and e is not region and e["cat"] != "cuda_runtime"]
    assert all(region["ts"] <= e["ts"] and e["ts"] + e["dur"] <= region["ts"] + region["dur"] for e in inside)
    store = load_events(tmp_path, events)
    st = analyse_steps(store)
    assert not st.present and not analyse_serving(store, st).present
    ins = compute_insights(store)
    assert not any(w in f.message + f.hint for f in ins.findings for w in NO_LLM_WORDS)
    # said plainly: the one forward (the annotation lies inside it) is in a capture region
    assert "1 forward pass(es) or step annotation(s) lie inside capture_* regions" in ins.findings[0].message
    # the control: the same forward outside a capture region is a prefill step
    free = load_events(tmp_path, capture_events(None), "free.json")
    sv = analyse_serving(free, analyse_steps(free))
    assert sv.present and [s.kind for s in sv.steps] == ["prefill"]


# ---- Nsight: OS-runtime poll on the CUDA event-handler thread ------------------------------------
def nsys_export(path: Path, poll_thread: str) -> Path:
    """The pipit export's threads (MPI Rank 0, CUPTI worker thread, cuda-EvtHandlr) with 17 OS-runtime
    ``poll`` calls on one of them: the first 6.1× the others, then rising."""
    main, helper, cupti = 1 << 24 | 1, 1 << 24 | 7, 1 << 24 | 6
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
        CREATE TABLE OSRT_API (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER, nameId INTEGER,
                               returnValue INTEGER, nestingLevel INTEGER, callchainId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER,
                               correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER);
    """)
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "MPI Rank 0"), (2, poll_thread), (3, "CUPTI worker thread"),
                                                            (4, "poll"), (5, "cudaMemcpy"), (6, "pthread_cond_wait")])
    con.executemany("INSERT INTO ThreadNames VALUES (?, 0, ?)", [(1, main), (2, helper), (3, cupti)])
    t, rows = 1_000_000, []
    for i in range(17):
        dur = 61_000_000 if i == 0 else 10_000_000 + i * 1_000_000
        rows.append((t, t + dur, 0, helper, 4, 1, 0, 0))
        t += dur + 100_000
    rows += [(5_000_000 + i * 20_000_000, 5_000_000 + i * 20_000_000 + 15_000_000, 0, cupti, 6, 0, 0, 0) for i in range(5)]
    con.executemany("INSERT INTO OSRT_API VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 5, 0, 0)",
                    [(2_000_000 + i * 50_000_000, 2_000_000 + i * 50_000_000 + 3_000_000, main, i + 1) for i in range(2)])
    con.commit()
    con.close()
    return path


def test_os_runtime_calls_on_helper_threads_are_never_steps(tmp_path: Path, capsys):
    path = nsys_export(tmp_path / "saxpy.sqlite", "cuda-EvtHandlr")
    con = sqlite3.connect(path)
    polls = con.execute("SELECT count(*) FROM OSRT_API o JOIN ThreadNames t ON t.globalTid = o.globalTid "
                        "JOIN StringIds s ON s.id = t.nameId WHERE s.value = 'cuda-EvtHandlr'").fetchone()[0]
    con.close()
    assert polls == 17  # the shape: a repeated call that covers its thread
    store = load_trace(path, cache=False)
    st = analyse_steps(store)
    assert not st.present and not analyse_serving(store, st).present
    d = cli_json(capsys, "insights", path, "--json", "--no-cache")
    text = " ".join(f["message"] + " " + f["hint"] for f in d["findings"])
    assert "no repeating step found" in text and not any(w in text for w in NO_LLM_WORDS)
    # each rule on its own (a Chrome trace): an OS call on any thread, any call on a helper thread, an OS
    # wait by name on any thread; the control, the same shape of work on an application thread, is
    # steps, and still no LLM words
    def polls_on(thread: str, cat: str, name: str = "poll") -> list[dict]:
        ev = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": thread}}]
        t = 1_000.0
        for i in range(17):
            dur = 61_000.0 if i == 0 else 10_000.0 + i * 1_000.0
            ev.append(X(name, t, dur, cat=cat, pid=1, tid=7))
            t += dur + 100.0
        return ev

    for thread, cat in (("cuda-EvtHandlr", "cpu_op"), ("CUPTI worker thread", "cpu_op"), ("worker", "osrt"),
                        ("worker", "cpu_op")):
        assert not analyse_steps(load_events(tmp_path, polls_on(thread, cat), f"{cat}.json")).present, thread
    other = load_events(tmp_path, polls_on("worker", "cpu_op", "process_batch"), "app.json")
    assert analyse_steps(other).count == 17
    found = compute_insights(other).findings
    assert {"slow_first", "staircase"} <= {f.kind for f in found}
    assert not any(w in f.message + f.hint for f in found for w in NO_LLM_WORDS)


# ---- SGLang decode: one step, nearly all of it a blocking copy; the GPU work is a graph replay -------
def sglang_decode_events():
    """A 465 ms decode step: a stream wait event (ordering), an eager kernel that waits behind it, one
    hipGraphLaunch replaying 40 kernels, then ``.item()``'s hipMemcpyWithStream blocking 463 ms."""
    ev = [X("step[DECODE bs=32]", 0.0, 465_000.0, cat="user_annotation", **CPU),
          X("hipStreamWaitEvent", 100.0, 10.0, cat="cuda_runtime", correlation=1, **CPU),
          X("hipLaunchKernel", 148.0, 6.0, cat="cuda_runtime", correlation=2, **CPU),
          X("resolve_future_token_ids", 462_000.0, 7.0, cat="kernel", correlation=2, **GPU),
          X("hipGraphLaunch", 400.0, 300.0, cat="cuda_runtime", correlation=3, **CPU)]
    ev += [X(f"graph_k{i}", 462_100.0 + i * 60.0, 55.0, cat="kernel", correlation=3, **GPU) for i in range(40)]
    ev += [X("aten::item", 1_500.0, 463_400.0, **CPU), X("aten::_local_scalar_dense", 1_510.0, 463_380.0, **CPU),
           X("hipMemcpyWithStream", 1_520.0, 463_000.0, cat="cuda_runtime", correlation=4, **CPU),
           X("Memcpy DtoH (Device -> Host)", 464_510.0, 8.0, cat="gpu_memcpy", correlation=4, **GPU)]
    return ev


ADVICE = ("capture the step in a CUDA graph", "fewer, larger kernels", "fusion", "reduce-overhead")


def test_a_blocking_copy_that_dominates_the_step_is_the_headline(tmp_path: Path, capsys):
    events = sglang_decode_events()
    step = events[0]
    blocking = [e for e in events if e["name"] == "hipMemcpyWithStream"]
    share = sum(e["dur"] for e in blocking) / step["dur"]  # plain Python: 463 of 465 ms
    graph = {e["args"]["correlation"] for e in events if e["name"] == "hipGraphLaunch"}
    kernels = [e for e in events if e["cat"] == "kernel"]
    graphed = sum(e["dur"] for e in kernels if e["args"]["correlation"] in graph) / sum(e["dur"] for e in kernels)
    assert share > 0.99 and graphed > 0.98  # the shape
    path = write_trace(tmp_path, events)
    d = cli_json(capsys, "insights", path, "--json")
    head = d["findings"][0]
    assert head["kind"] == "step_blocked" and head["severity"] == "high"
    call = blocking[0]  # plain Python: the device work running while the host was blocked
    busy = sum(max(0.0, min(e["ts"] + e["dur"], call["ts"] + call["dur"]) - max(e["ts"], call["ts"]))
               for e in events if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"))
    assert head["message"] == (f"step #0: 463 ms of its annotation's 465 ms ({100 * share:.0f}%) is the host blocked in "
                               f"hipMemcpyWithStream ×1 (from aten::_local_scalar_dense); the GPU was busy "
                               f"{busy / 1000:.3f} ms of that time")
    assert head["hint"].startswith("the GPU sat idle while the host waited")  # held behind the stream wait
    sync = {x["name"]: x for x in d["sync"]["by_name"]}
    assert sync["hipMemcpyWithStream"]["blocking"] is True and sync["hipStreamWaitEvent"]["blocking"] is False
    assert (d["sync"]["blocking_count"], d["sync"]["blocking_ns"]) == (1, _ns(463_000.0))
    # the GPU work is one graph replay already: no advice to use graphs or fuse kernels
    hints = " ".join(f["hint"] for f in d["findings"])
    assert not any(a in hints for a in ADVICE)
    busy = next(f for f in d["findings"] if f["kind"] == "gpu_busy")
    assert f"{100 * graphed:.0f}% of kernel time is already CUDA/HIP graph replays" in busy["hint"]
    # the control: the same trace with eager launches instead of the graph gets the graph advice
    eager = [dict(e, name="hipLaunchKernel") if e["name"] == "hipGraphLaunch" else e for e in events]
    hints = " ".join(f["hint"] for f in cli_json(capsys, "insights", write_trace(tmp_path, eager, "e.json"), "--json")["findings"])
    assert "capture the step in a CUDA graph" in hints


def test_blocking_and_ordering_sync_points(tmp_path: Path):
    """Blocking: synchronize, synchronous copies and memsets, a bare ``.item()`` copy; ordering: event
    record, stream wait event; an ``.item()`` holding a recorded sync call counts once (the call);
    asynchronous copies are no sync points."""
    ev = [X("aten::item", 0.0, 100.0), X("aten::_local_scalar_dense", 1.0, 98.0),
          X("cudaMemcpyAsync", 2.0, 10.0, cat="cuda_runtime"), X("cudaStreamSynchronize", 20.0, 70.0, cat="cuda_runtime"),
          X("aten::_local_scalar_dense", 200.0, 40.0),  # a bare .item() copy (no runtime calls recorded)
          X("cudaMemcpy", 300.0, 30.0, cat="cuda_runtime"), X("cudaMemset", 350.0, 5.0, cat="cuda_runtime"),
          X("hipMemcpyWithStream", 400.0, 20.0, cat="cuda_runtime"),
          X("cudaEventRecord", 500.0, 3.0, cat="cuda_runtime"), X("cudaStreamWaitEvent", 510.0, 4.0, cat="cuda_runtime"),
          X("cudaMemsetAsync", 520.0, 2.0, cat="cuda_runtime")]
    blocking = {"cudaStreamSynchronize": 70, "aten::_local_scalar_dense": 40, "cudaMemcpy": 30, "cudaMemset": 5,
                "hipMemcpyWithStream": 20}
    ordering = {"cudaEventRecord": 3, "cudaStreamWaitEvent": 4}
    sy = compute_insights(load_events(tmp_path, ev)).ops.sync
    assert {n: (c, t) for n, c, t in sy.by_name} == {n: (1, _ns(us)) for n, us in {**blocking, **ordering}.items()}
    assert sy.blocking == frozenset(blocking) and sy.blocking_count == len(blocking)
    assert sy.blocking_ns == _ns(sum(blocking.values())) and sy.count == len(blocking) + len(ordering)
