"""Serving figures (step kinds, tokens, launched GPU time, TTFT/TPOT/tokens/s, steady state) and
CUDA/HIP graphs, each checked against a plain-Python computation over the events written."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import X, load_events, raw_events, union_length
from vtui.analysis.base.launched import launched_gpu_ns, owners
from vtui.analysis.gpu.graphs import analyse_graphs
from vtui.analysis.report.insights import compute_insights
from vtui.analysis.steps.detect import analyse_steps
from vtui.analysis.steps.serving import analyse_serving, steady_window
from vtui.analysis.steps.step_names import parse_step_name
from vtui.analysis.why.findings import serving_findings, step_findings
from vtui.load.trace import load_trace

# ---- the synthetic step loop ---------------------------------------------------------------------
# (context requests, context tokens, generation requests, generation tokens, duration µs)
RAMP_UP = [(0, 0, b, b, 150.0 + 5 * b) for b in (2, 4, 8, 16)]
STEADY_A = [(0, 0, 32, 32, d) for d in (300.0, 310.0, 305.0, 298.0, 302.0)]
MIXED = [(1, 64, 31, 31, 900.0)]  # a mixed step among decode steps: not a decode spike
STEADY_B = [(0, 0, b, b, d) for b, d in zip((32, 31, 33, 32, 32, 30, 32, 33), (301.0, 299.0, 304.0, 300.0, 2000.0,
                                                                               297.0, 303.0, 300.0))]
RAMP_DOWN = [(0, 0, b, b, 160.0 + b) for b in (16, 8, 2)]
LOOP = [(4, 512, 0, 0, 5000.0)] + RAMP_UP + STEADY_A + MIXED + STEADY_B + RAMP_DOWN
GAP_US = 20.0
LAG_US = 800.0  # the GPU runs this far behind the CPU: a step's kernels run after it ends
GRAPH_STEP = 7  # this step replays a CUDA graph of 3 kernels (one correlation, no flow)


def _name(n, nt, m, mt, i):
    if i == 0:  # the B200 form: tokens_Σtokens²
        return f"execute_context_{n}({nt}_{nt * nt})_generation_{m}({mt})"
    if i % 3 == 0:  # the detailed form
        return f"execute_{nt + mt}_context_{n}(sq{nt}sk{nt}sqsq{nt * nt}sqsk{nt * nt})_generation_{m}(sq{mt}sk{mt * 40}sqsq{mt}sqsk{mt * 40})"
    return f"execute_context_{n}({nt})_generation_{m}({mt})"


def synthetic_loop(scale: float = 1.0):
    """Events of the loop, and per step the kernels (start, end) it launched, as the oracle knows them.
    ``scale``: every step but the prefill that much longer."""
    events, launched, t, corr = [], [], 1000.0, 100
    for i, (n, nt, m, mt, dur) in enumerate(LOOP):
        dur = dur * scale if i else dur
        events.append(X(_name(n, nt, m, mt, i), t, dur, cat="user_annotation"))
        events.append(X("schedule", t + 1, dur * 0.2))
        mine = []
        for j in range(2):  # two launches per step; the second kernel overlaps the first on stream 8
            ts = t + dur * 0.3 + j * 10
            corr += 1
            events.append(X("cudaLaunchKernel", ts, 5.0, cat="cuda_runtime", correlation=corr))
            k_ts, k_dur = t + LAG_US + j * 15, 40.0
            events.append(X(f"gemm_{j}", k_ts, k_dur, cat="kernel", pid=0, tid=7 + j, correlation=corr))
            if j == 0:  # one by an ac2g flow, one by correlation only
                events += [{"ph": "s", "id": corr, "pid": 1, "tid": 1, "ts": ts, "cat": "ac2g", "name": "ac2g"},
                           {"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": k_ts, "cat": "ac2g", "name": "ac2g", "bp": "e"}]
            mine.append((k_ts, k_ts + k_dur))
        if i == GRAPH_STEP:
            corr += 1
            events.append(X("cudaGraphLaunch", t + dur * 0.8, 8.0, cat="cuda_runtime", correlation=corr))
            for k in range(3):
                k_ts = t + LAG_US + 100 + k * 30
                events.append(X(f"graph_k{k}", k_ts, 25.0, cat="kernel", pid=0, tid=7, correlation=corr))
                mine.append((k_ts, k_ts + 25.0))
        launched.append(mine)
        t += dur + GAP_US
    return events, launched


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    events, launched = synthetic_loop()
    store = load_events(tmp_path_factory.mktemp("loop"), events)
    st = analyse_steps(store)
    return store, st, analyse_serving(store, st), launched


def _ns(us: float) -> int:
    return round(us * 1000)


def true_steps(scale: float = 1.0) -> list[tuple[int, int, int]]:
    """Plain Python over the plan: per step (start, annotation end, step end) in ns from the first
    step's start; a step ends at the later of its annotation's end and its last kernel's end."""
    _, launched = synthetic_loop(scale)
    out, t = [], 1000.0
    for i, (*_, dur) in enumerate(LOOP):
        d = dur * scale if i else dur
        cpu_end = _ns(t + d - 1000.0)
        out.append((_ns(t - 1000.0), cpu_end, max(cpu_end, max(_ns(b - 1000.0) for _, b in launched[i]))))
        t += d + GAP_US
    return out


def test_step_kinds_tokens_and_times(loop):
    store, st, sv, launched = loop
    assert st.count == len(LOOP) and sv.source == "annotations"
    starts, t = [], 1000.0
    for _, _, _, _, dur in LOOP:
        starts.append(t)
        t += dur + GAP_US
    origin = 1000.0 - 0.0  # the first event of the trace is the first step
    before = -1  # the previous steps' end: a step that begins while their GPU work runs has its own time from there
    for s, (n, nt, m, mt, dur), st_us, ker in zip(sv.steps, LOOP, starts, launched):
        kind = "mixed" if n and m else "prefill" if n else "decode"
        assert (s.kind, s.prefill_requests, s.prefill_tokens, s.decode_requests, s.decode_tokens) == (kind, n, nt, m, mt)
        assert s.start_ns == _ns(st_us - origin) and s.cpu_dur_ns == _ns(dur)
        # the step runs to the end of its GPU work when that is later (the kernels run 800 µs behind)
        gpu_end = max(_ns(b - origin) for _, b in ker)
        end = max(_ns(st_us + dur - origin), gpu_end)
        own = max(s.start_ns, before)
        assert s.dur_ns == end - own and s.queued_ns == own - s.start_ns
        before = max(before, end)
        assert s.gpu_outlasts == (gpu_end > _ns(st_us + dur - origin))
        # launched work: the union of its kernels' intervals, wherever they ran (after the step ended)
        assert s.gpu_ns == union_length([(_ns(a - origin), _ns(b - origin)) for a, b in ker])


def test_serving_figures_against_plain_python(loop):
    store, st, sv, _ = loop
    true = true_steps()
    # each step's own time: from its start, or from the previous steps' end while their GPU work still ran
    durs = [end - max(start, max([e for _, _, e in true[:i]], default=start)) for i, (start, _, end) in enumerate(true)]
    ends = [end for _, _, end in true]
    assert sv.ttft_ns == ends[0] - true[0][0]  # the first step is the prefill
    assert sv.ttft_cpu_ns == true[0][1] - true[0][0]
    decode = [d for d, (n, _, m, _, _) in zip(durs, LOOP) if m and not n]
    assert sv.tpot_ns == statistics.median(decode)
    total_decode = sum(mt for *_, mt, _ in LOOP)
    assert sv.decode_tokens_per_s == pytest.approx(total_decode * 1e9 / (ends[-1] - sv.steps[0].start_ns), rel=1e-12)
    for k in sv.kinds:
        mine = [d for d, s in zip(durs, sv.steps) if s.kind == k.kind]
        assert k.count == len(mine) and k.stats.mean == pytest.approx(statistics.fmean(mine))
        assert k.stats.median == statistics.median(mine)
        assert k.stats.p90 == pytest.approx(float(np.percentile(mine, 90)))
        steps = [s for s in sv.steps if s.kind == k.kind]
        first = {s.index: min(a for a, _ in ker) for s, ker in zip(sv.steps, loop[3])}
        last = {s.index: max(b for _, b in ker) for s, ker in zip(sv.steps, loop[3])}
        span = sum(_ns(last[s.index]) - _ns(first[s.index]) for s in steps)
        assert k.gpu_busy_pct == pytest.approx(100.0 * sum(s.gpu_ns for s in steps) / span)
        assert {p.name for p in k.phases} >= {"schedule"}
    assert [k.kind for k in sv.kinds] == ["prefill", "decode", "mixed"]


def test_steady_window_skips_ramps_and_the_mixed_step(loop):
    _, _, sv, _ = loop
    first = 1 + len(RAMP_UP) + len(STEADY_A) + len(MIXED)  # STEADY_B is the longest steady run
    s = sv.steady
    assert (s.first, s.last, s.count) == (first, first + len(STEADY_B) - 1, len(STEADY_B))
    batch = [b for _, _, b, _, _ in STEADY_B]
    assert s.batch_median == statistics.median(batch)
    every = true_steps()
    own = [end - max(start, max([e for _, _, e in every[:i]], default=start)) for i, (start, _, end) in enumerate(every)]
    true, durs = every[first:first + len(STEADY_B)], own[first:first + len(STEADY_B)]
    assert s.tpot_ns == statistics.median(durs) and s.decode_tokens == sum(batch)
    window_start = max(true[0][0], max(e for _, _, e in every[:first]))  # the window's first step's own start
    assert s.decode_tokens_per_s == pytest.approx(sum(batch) * 1e9 / (true[-1][2] - window_start))


def test_spikes_per_kind_and_no_generic_verdicts(loop):
    _, st, sv, _ = loop
    decode = sv.kind("decode")
    spike = 1 + len(RAMP_UP) + len(STEADY_A) + len(MIXED) + 4  # the 2 ms decode step
    assert decode.spikes == [spike]  # the 900 µs mixed step is not a decode spike
    kinds = {f.kind for f in serving_findings(sv)}
    assert "spikes:decode" in kinds and "steady_state" in kinds
    generic = {f.kind for f in step_findings(st, sv)}
    assert not generic & {"spikes", "slow_first", "staircase"}
    assert "slow_first" in {f.kind for f in step_findings(st)}  # without kinds: the old verdict


def test_graph_launch_kernels_per_step_and_delay(loop):
    store, st, _, launched = loop
    g = analyse_graphs(store, step_rows=st.rows)
    assert (g.launches, g.kernels, g.kernel_ns) == (1, 3, 3 * 25_000)
    t = 1000.0 + sum(d + GAP_US for *_, d in LOOP[:GRAPH_STEP])
    call, first_kernel = t + LOOP[GRAPH_STEP][4] * 0.8, t + LAG_US + 100
    assert g.launch_delay.count == 1 and g.launch_delay.median == _ns(first_kernel - 1000.0) - _ns(call - 1000.0)
    per = {p.index: p for p in g.per_step if p.launches}
    assert list(per) == [GRAPH_STEP] and per[GRAPH_STEP].kernels == 3 and per[GRAPH_STEP].kernel_ns == 75_000


def test_annotation_forms():
    assert parse_step_name("execute_context_1(888_788544)_generation_0(0)").prefill_tokens == 888
    d = parse_step_name("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)")
    assert (d.kind, d.decode_requests, d.decode_tokens) == ("decode", 32, 32)
    e = parse_step_name("step[EXTEND bs=15 toks=15360]")
    assert (e.kind, e.prefill_requests, e.prefill_tokens) == ("prefill", 15, 15360)
    dec = parse_step_name("step[DECODE bs=32]")
    assert (dec.kind, dec.decode_requests, dec.decode_tokens) == ("decode", 32, 32)
    assert parse_step_name("step[MIXED bs=4 toks=300]").kind == "mixed"
    assert parse_step_name("step[IDLE]").kind == "unknown" and parse_step_name("ProfilerStep#3") is None
    assert parse_step_name("execute_context_0(0)_generation_0(0)").kind == "unknown"
    # hostile: digits beyond int64 sums (and Python's int-parsing limit) are no numbers, never an error
    assert parse_step_name("execute_context_" + "9" * 5000 + "(1)_generation_1(1)") is None
    assert parse_step_name("step[DECODE bs=" + "9" * 9000 + "]").kind == "unknown"


def test_sglang_names_and_two_annotations_count_once(tmp_path: Path):
    events, t = [], 0.0
    plan = [("EXTEND", 4, 2048, 3000.0)] + [("DECODE", 4, 0, 200.0)] * 5
    for mode, bs, toks, dur in plan:
        inner = f"step[{mode} bs={bs}" + (f" toks={toks}]" if toks else "]")
        if mode == "EXTEND":  # SGLang also wrote the vLLM-style name over the same step
            events.append(X(f"execute_{toks}_context_{bs}(sq{toks}sk{toks}sqsq0sqsk0)_generation_0(sq0sk0sqsq0sqsk0)",
                            t, dur, cat="user_annotation"))
            events.append(X(inner, t + 100, dur - 200, cat="user_annotation"))
        else:
            events.append(X(inner, t, dur, cat="user_annotation"))
        t += dur + 50
    # and one partly overlapping pair (not nested): still one step
    events.append(X("step[DECODE bs=4]", t, 200.0, cat="user_annotation"))
    events.append(X("execute_context_0(0)_generation_4(4)", t + 150, 200.0, cat="user_annotation"))
    store = load_events(tmp_path, events)
    sv = analyse_serving(store, analyse_steps(store))
    assert [s.kind for s in sv.steps] == ["prefill"] + ["decode"] * 6
    assert sv.steps[0].prefill_requests == 4 and sv.steps[0].prefill_tokens == 2048 and sv.steps[0].dur_ns == 3_000_000
    assert sv.ttft_ns == 3_000_000 and sv.tpot_ns == 200_000 and sum(s.decode_tokens for s in sv.steps) == 24


def test_steady_window_matches_brute_force():
    def brute(batch, dec):
        best = None
        for i in range(len(batch)):
            for j in range(i + 2, len(batch)):
                if not all(dec[i:j + 1]):
                    break
                med = statistics.median(batch[i:j + 1])
                if all(0.9 * med <= b <= 1.1 * med for b in batch[i:j + 1]) and (best is None or j - i > best[1] - best[0]):
                    best = (i, j)
        return best

    rng = random.Random(7)
    for _ in range(60):
        n = rng.randint(3, 30)
        level = rng.choice([8, 32, 64])
        batch = [max(1, int(level * rng.choice([1, 1, 1, 0.95, 1.05, 0.5, 2]))) for _ in range(n)]
        dec = [rng.random() > 0.1 for _ in range(n)]
        assert steady_window(np.array(batch, float), np.array(dec)) == brute(batch, dec), (batch, dec)


def test_owners_climb_for_nested_sets(loop):
    store, st, _, _ = loop
    s = store.slices
    launches = np.flatnonzero(np.array([n.startswith("cuda") for n in store.strings])[s.name_id])
    nested = np.concatenate([st.rows[:3], launches[:2]])  # steps and launch calls together: climb the parents
    own = owners(store, nested, launches[:2])
    assert own.tolist() == [3, 4]  # a call owns itself (innermost)
    assert launched_gpu_ns(store, st.rows[:1]).tolist() == [loop[2].steps[0].gpu_ns]


# ---- real traces -------------------------------------------------------------------------------
def _raw_gpu_of_step(events, step):
    """Plain Python: the device work whose correlation is that of a runtime call inside ``step``."""
    inside = {e["args"]["correlation"] for e in events if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"
              and e["tid"] == step["tid"] and step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step["ts"] + step["dur"]
              and "correlation" in e.get("args", {})}
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
            and e.get("args", {}).get("correlation") in inside]


def _span(e, origin):
    """Start and end in ns as the store has them: ts and dur each rounded to the ns."""
    start = round(e["ts"] * 1000) - round(origin * 1000)  # the absolute ns grid
    return start, start + round(e["dur"] * 1000)


def _origin(events):
    return min(e["ts"] for e in events if e.get("ph") not in ("M", None) and "ts" in e)


def test_vllm_full_graph_replay(shared_traces):
    path = shared_traces / "public" / "tracelens__vllm_decode_full_graph_execution.json.gz"
    cap_path = shared_traces / "public" / "tracelens__graph_capture_rank_0.1773709742341309550.pt.trace.json.gz"
    events = raw_events(path)
    origin = _origin(events)
    store = load_trace(path)
    ins = compute_insights(store, capture=load_trace(cap_path), capture_name=cap_path.name)
    sv, g = ins.serving, ins.graphs
    step = next(e for e in events if e.get("name", "").startswith("execute_32_context_0"))
    (s,) = sv.steps
    assert (s.kind, s.prefill_requests, s.decode_requests, s.decode_tokens) == ("decode", 0, 32, 32)
    assert s.start_ns == round(step["ts"] * 1000) - round(origin * 1000)
    work = _raw_gpu_of_step(events, step)
    assert s.gpu_ns == union_length([_span(e, origin) for e in work])
    # the replay runs long after the CPU annotation: the step (TPOT, tokens/s) ends with its GPU work
    gpu_end = max(_span(e, origin)[1] for e in work)
    assert s.cpu_dur_ns == round(step["dur"] * 1000) and gpu_end > s.start_ns + s.cpu_dur_ns
    assert s.dur_ns == gpu_end - s.start_ns and s.gpu_outlasts
    assert sv.ttft_ns is None and sv.tpot_ns == s.dur_ns and sv.decode_tokens_per_s == pytest.approx(32e9 / s.dur_ns)
    # the graph: every kernel sharing the hipGraphLaunch's correlation
    launch = next(e for e in events if e.get("name") == "hipGraphLaunch")
    kernels = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"
                      and e["args"].get("correlation") == launch["args"]["correlation"]), key=lambda e: e["ts"])
    assert (g.launches, g.kernels) == (1, len(kernels)) == (1, 421)
    assert g.kernel_ns == pytest.approx(sum(e["dur"] for e in kernels) * 1000, abs=len(kernels))
    assert g.launch_delay.median == round(kernels[0]["ts"] * 1000) - round(launch["ts"] * 1000)  # the absolute ns grid
    assert g.per_step[0].kernels == 421
    # capture <-> replay: a plain longest common subsequence of the kernel names
    cap = raw_events(cap_path)
    region = next(e for e in cap if e.get("name") == "capture_32_FULL" and e.get("cat") == "user_annotation")
    calls = sorted((e for e in cap if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and "kernel" in e.get("args", {})
                    and region["ts"] <= e["ts"] <= region["ts"] + region["dur"] and e["tid"] == region["tid"]),
                   key=lambda e: e["ts"])
    a, b = [e["args"]["kernel"] for e in calls], [e["name"] for e in kernels]
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    assert g.capture.captures == 1 and g.capture.matched == prev[-1] == 421
    assert g.capture.by_op[0][0] == "vllm::moe_forward" and sum(n for _, _, n, _ in g.capture.by_op) == 421
    # a replayed kernel gets its captured stack and shapes: the replay's k-th kernel is the capture's
    # launch at the aligned position (names equal), under the capture region
    from vtui.analysis.gpu.graphs import replay_origin

    row = int(g.kernel_rows[0])
    stack, _shapes = replay_origin(g.capture, row)
    call = next(e for e in calls if e["args"]["kernel"] == b[0])  # the first capture launch of that name
    holders = [e for e in cap if e.get("ph") == "X" and e.get("tid") == call["tid"] and e is not call
               and e["ts"] <= call["ts"] and e["ts"] + e["dur"] >= call["ts"] + call["dur"]]
    innermost = max(holders, key=lambda e: (e["ts"], -e["dur"]))
    assert stack[-1] == innermost["name"] and "capture_32_FULL" in stack
    assert replay_origin(g.capture, -5) is None


def test_sglang_prefill_step(shared_traces):
    path = shared_traces / "public" / "tracelens__sglang_Qwen3-8B_prefilldecode.json.gz"
    events = raw_events(path)
    origin = _origin(events)
    store = load_trace(path)
    sv = analyse_serving(store, analyse_steps(store))
    outer = next(e for e in events if e.get("name", "").startswith("execute_15360_context_15"))
    (s,) = sv.steps  # step[EXTEND …] lies inside the execute_… annotation: one step
    assert (s.kind, s.prefill_requests, s.prefill_tokens, s.decode_tokens) == ("prefill", 15, 15360, 0)
    work = _raw_gpu_of_step(events, outer)
    assert s.gpu_ns == union_length([_span(e, origin) for e in work])
    # TTFT runs to the end of the prefill's GPU work, long after the annotation
    gpu_end = max(_span(e, origin)[1] for e in work)
    assert s.cpu_dur_ns == round(outer["dur"] * 1000) == sv.ttft_cpu_ns
    assert s.dur_ns == max(gpu_end, s.start_ns + s.cpu_dur_ns) - s.start_ns == sv.ttft_ns > sv.ttft_cpu_ns
    assert sv.tpot_ns is None and sv.decode_tokens_per_s is None and sv.steady is None


def test_generate_forward_passes_are_steps():
    from tests.helpers import STACK

    events = raw_events(STACK)
    fw = sorted((e for e in events if e.get("ph") == "X" and e["name"].startswith("nn.Module: LlamaForCausalLM")),
                key=lambda e: e["ts"])
    emb = sorted((e for e in events if e.get("ph") == "X" and e["name"] == "aten::embedding"), key=lambda e: e["ts"])
    store = load_trace(STACK)
    sv = analyse_serving(store, analyse_steps(store))
    assert sv.source == "transformers" and len(sv.steps) == len(fw) == 8
    assert [s.kind for s in sv.steps] == ["prefill"] + ["decode"] * 7
    for s, f, e in zip(sv.steps, fw, emb):
        b, q = e["args"]["Input Dims"][1]
        assert s.dur_ns == round(f["dur"] * 1000)
        assert (s.prefill_tokens + s.decode_tokens, s.prefill_requests + s.decode_requests) == (b * q, b)
    assert sv.ttft_ns == sv.steps[0].dur_ns


def test_diff_compares_serving_figures_side_by_side(tmp_path: Path, capsys):
    """`vtui diff`: TTFT, TPOT and decode tokens/s of both traces, per kind, with the better side."""
    from tests.helpers import cli_json, write_trace

    a = write_trace(tmp_path, synthetic_loop()[0], "a.json")
    b = write_trace(tmp_path, synthetic_loop(1.5)[0], "b.json")  # B: every step but the prefill 1.5× longer
    d = cli_json(capsys, "diff", a, b, "--json")
    m = {x["name"]: x for x in d["metrics"]}
    tokens = sum(mt for *_, mt, _ in LOOP)
    for side, k in (("a", 1.0), ("b", 1.5)):  # steps end with their GPU work (true_steps), in diff as in insights
        true = true_steps(k)
        own = [end - max(start, max([e for _, _, e in true[:i]], default=start)) for i, (start, _, end) in enumerate(true)]
        decode = [d for d, (n, _, g, _, _) in zip(own, LOOP) if g and not n]
        assert m["tpot_ns"][side] == pytest.approx(statistics.median(decode), abs=1e-3)
        assert m["serving_ttft_ns"][side] == true[0][2] - true[0][0] == round(LOOP[0][4] * 1000)
        assert m["decode_tokens_per_s"][side] == pytest.approx(tokens * 1e9 / max(e for *_, e in true), abs=1e-3)  # JSON: 3 decimals
    # B's decode annotations are 1.5× longer: its steps begin later, so each ends later after the one
    # before (the GPU work, 800 µs behind, waits for them): a token every step's own time, slower in B,
    # as its decode tokens/s says
    assert m["tpot_ns"]["better"] == "A"
    assert m["decode_tokens_per_s"]["better"] == "A" and m["mixed_median_ns"]["better"] == "A"


def test_call_tree_puts_graph_kernels_under_the_launch(loop):
    from vtui.analysis.calltree.tree import GRAPH_REPLAY, build_tree

    store, _, _, _ = loop
    tree = build_tree(store)
    (node,) = [i for i, n in enumerate(tree.names) if n == GRAPH_REPLAY]
    host = int(tree.parent[node])
    assert tree.names[host] == "cudaGraphLaunch" and tree.path(node)[0].startswith("execute_")
    assert tree.count[node] == 1 and tree.gpu_self_ns[node] == tree.gpu_ns[node] == 3 * 25_000
    assert tree.gpu_self_ns[host] == 0 and tree.gpu_ns[host] == 3 * 25_000 and tree.total_ns[node] == 0
    # every kernel's time is still counted once at the top
    assert int(tree.gpu_ns[tree.roots()].sum()) == tree.gpu.attributed_ns


def test_grouped_union_against_a_plain_sweep():
    from vtui.analysis.base.launched import grouped_union_ns

    rng = random.Random(3)
    groups, starts, ends = [], [], []
    for _ in range(400):
        g, a = rng.randrange(7), rng.randrange(10_000)
        groups.append(g), starts.append(a), ends.append(a + rng.randrange(0, 300))
    got = grouped_union_ns(np.array(groups), np.array(starts), np.array(ends), 8)
    for g in range(8):
        assert got[g] == union_length([(a, b) for gg, a, b in zip(groups, starts, ends) if gg == g])


def test_clean_steps_fast_path_agrees_with_the_general_path(tmp_path: Path):
    """One stream, work in launch order, every call inside a step: the reduceat path; a call
    between steps sends the same figures through the general path. Both equal the plain sums."""
    from vtui.analysis.base import launched as L

    def build(between: bool):
        ev, t, corr, want = [], 0.0, 1, []
        for i in range(6):
            ev.append(X(f"execute_context_0(0)_generation_{4 + i}({4 + i})", t, 100.0, cat="user_annotation"))
            mine = []
            for j in range(1 + i % 3):
                ev.append(X("cudaLaunchKernel", t + 10 + 20 * j, 5.0, cat="cuda_runtime", correlation=corr))
                k_ts = 1000.0 + t + 30 * j
                ev.append(X("k", k_ts, 12.0, cat="kernel", pid=0, tid=7, correlation=corr))
                mine.append((round(k_ts * 1000), round(k_ts * 1000) + 12_000))
                corr += 1
            want.append(mine)
            if between:  # a launch outside any step
                ev.append(X("cudaLaunchKernel", t + 105, 2.0, cat="cuda_runtime", correlation=corr))
                ev.append(X("k", 1000.0 + t + 90, 5.0, cat="kernel", pid=0, tid=7, correlation=corr))
                corr += 1
            t += 110.0
        return ev, want

    for between in (False, True):
        ev, want = build(between)
        store = load_events(tmp_path, ev, f"clean_{between}.json")
        rows = analyse_steps(store).rows
        clean = L._work_of_clean_steps(store, rows)
        assert (clean is None) == between
        w = L.launched_work(store, rows)
        assert w.count.tolist() == [len(m) for m in want]
        assert w.busy_ns.tolist() == [union_length(m) for m in want]
        assert w.first_ns.tolist() == [m[0][0] for m in want] and w.last_ns.tolist() == [m[-1][1] for m in want]
