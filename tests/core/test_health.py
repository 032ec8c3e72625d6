"""Trace health: each check on a synthetic trace built with its defect, and a clean twin without it
(no false alarm); the real traces' reports checked by plain Python over the raw events."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, QWEN, SHARED_TRACES, raw_events, write_trace
from vtui.analysis.health.report import analyse_health
from vtui.cli import main
from vtui.load.trace import load_trace

CPU, GPU = 1, 0


def _meta() -> list[dict]:
    return [{"ph": "M", "name": "process_name", "pid": GPU, "args": {"name": "GPU 0"}},
            {"ph": "M", "name": "process_name", "pid": CPU, "args": {"name": "python"}},
            {"ph": "M", "name": "thread_name", "pid": GPU, "tid": 7, "args": {"name": "stream 7"}}]


def _launch(ts: float, corr: int, dur: float = 5.0, name: str = "cudaLaunchKernel") -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": CPU, "tid": 1, "ts": ts, "dur": dur,
            "args": {"correlation": corr}}


def _kernel(ts: float, corr: int, dur: float = 20.0, name: str = "gemm_kernel") -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": GPU, "tid": 7, "ts": ts, "dur": dur,
            "args": {"correlation": corr, "device": 0, "stream": 7}}


def _op(ts: float, dur: float) -> list[dict]:
    """A CPU operator with shapes, a Python frame around it and a memory event: nothing for the
    recording checks to say."""
    return [{"ph": "X", "cat": "python_function", "name": "forward", "pid": CPU, "tid": 1, "ts": ts - 1, "dur": dur + 2},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": CPU, "tid": 1, "ts": ts, "dur": dur,
             "args": {"Input Dims": [[4, 4], [4, 4]], "Input type": ["float", "float"]}},
            {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": CPU, "tid": 1, "ts": ts,
             "args": {"Bytes": 64, "Total Allocated": 64, "Total Reserved": 1024, "Device Id": 0, "Device Type": 1}}]


def _loop(n: int = 6, delay: float = 10.0, gap: float = 1000.0, kdur: float = 20.0) -> list[dict]:
    """``n`` launches ``gap`` µs apart, each kernel starting ``delay`` µs after its launch call."""
    ev = _meta()
    for i in range(n):
        t = 100.0 + i * gap
        ev += _op(t - 2, 10)
        ev += [_launch(t, 100 + i), _kernel(t + delay, 100 + i, kdur)]
    return ev


def _health(tmp_path: Path, events: list[dict]):
    return analyse_health(load_trace(write_trace(tmp_path, events), cache=False))


def _keys(report) -> dict[str, str]:
    return {i.key: i.severity for i in report.items}


def test_a_clean_trace_has_nothing_to_say(tmp_path):
    assert _health(tmp_path, _loop()).items == []


def test_device_work_before_its_launch(tmp_path):
    ev = _loop()
    k = next(e for e in ev if e.get("cat") == "kernel" and e["args"]["correlation"] == 102)
    k["ts"] -= 2500  # 2.5 ms before its launch call
    item = next(i for i in _health(tmp_path, ev).items if i.key == "clock.device_before_launch")
    launches = {e["args"]["correlation"]: e["ts"] for e in ev if e.get("cat") == "cuda_runtime"}
    early = [e for e in ev if e.get("cat") == "kernel" and e["ts"] < launches[e["args"]["correlation"]]]
    assert item.count == len(early) == 1 and item.severity == "error"
    assert item.examples[0].text.endswith("gemm_kernel") and "launch_delay" in item.doubts


def test_a_constant_clock_offset_is_estimated(tmp_path):
    item = next(i for i in _health(tmp_path, _loop(delay=5000.0, gap=10_000.0)).items if i.key == "clock.offset")
    assert item.detail["offset_ns"] == 5_000_000 and item.detail["evidence"] == 6 and item.severity == "warn"
    # the same delays behind a busy stream are queueing, not an offset
    assert "clock.offset" not in _keys(_health(tmp_path, _loop(delay=5000.0, gap=10.0, kdur=1000.0)))


def test_launch_delays_that_disagree_are_no_offset(tmp_path):
    ev = _loop(delay=5000.0, gap=10_000.0)
    for k, d in zip((e for e in ev if e.get("cat") == "kernel"), (10, 3000, 9000, 20, 7000, 15000)):
        k["ts"] = next(e["ts"] for e in ev if e.get("cat") == "cuda_runtime"
                       and e["args"]["correlation"] == k["args"]["correlation"]) + d
    assert "clock.offset" not in _keys(_health(tmp_path, ev))


def test_a_device_synchronize_that_returns_early(tmp_path):
    ev = _loop()
    t = next(e["ts"] for e in ev if e.get("cat") == "cuda_runtime" and e["args"]["correlation"] == 105)
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": CPU, "tid": 1,
               "ts": t + 6, "dur": 3})  # the kernel launched just before runs t+10 .. t+30
    assert _keys(_health(tmp_path, ev)).get("clock.sync_returns_early") == "warn"
    ev[-1]["dur"] = 40  # returns after it: fine
    assert "clock.sync_returns_early" not in _keys(_health(tmp_path, ev))


def test_work_overlapping_the_next_on_its_stream(tmp_path):
    ev = _loop()
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    kernels[1]["dur"] = 1500  # runs 510 µs into the next one
    item = next(i for i in _health(tmp_path, ev).items if i.key == "dur.stream_overlap")
    over = [a["ts"] + a["dur"] - b["ts"] for a, b in zip(kernels, kernels[1:]) if a["ts"] + a["dur"] > b["ts"] + 1]
    assert item.count == len(over) == 1 and item.detail["worst_ns"] == int(over[0] * 1000)


def test_durations_dropped_at_import_are_listed(tmp_path):
    ev = _loop() + [{"ph": "X", "cat": "cpu_op", "name": "bad", "pid": CPU, "tid": 1, "ts": 50, "dur": -5}]
    item = next(i for i in _health(tmp_path, ev).items if i.key == "dur.bad_dur")
    assert item.count == 1


def test_work_past_the_profiler_window(tmp_path):
    ev = _loop() + [{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": 1,
                     "ts": 0, "dur": 5000}]
    assert "dur.past_window" in _keys(_health(tmp_path, ev))  # the last kernels run past 5 ms
    ev[-1]["dur"] = 10_000
    assert "dur.past_window" not in _keys(_health(tmp_path, ev))


def test_launches_whose_device_work_was_dropped(tmp_path):
    ev = [e for e in _loop() if not (e.get("cat") == "kernel" and e["args"]["correlation"] < 102)]
    item = next(i for i in _health(tmp_path, ev).items if i.key == "missing.device_work")
    kernels = {e["args"]["correlation"] for e in ev if e.get("cat") == "kernel"}
    lost = [e for e in ev if e.get("cat") == "cuda_runtime" and e["args"]["correlation"] not in kernels]
    assert item.count == len(lost) == 2 and item.severity == "warn" and item.detail["early"] == 2


def test_launches_inside_a_graph_capture_are_not_missing(tmp_path):
    ev = _loop()
    ev.append({"ph": "X", "cat": "user_annotation", "name": "capture_8_PIECEWISE", "pid": CPU, "tid": 1,
               "ts": 20_000, "dur": 500})
    ev += [_launch(20_100 + 10 * i, 900 + i) for i in range(5)]  # captured: never run
    assert "missing.device_work" not in _keys(_health(tmp_path, ev))
    ev = _loop() + [_launch(20_000, 800, name="cudaStreamBeginCapture"), _launch(20_300, 801, name="cudaStreamEndCapture")]
    ev += [_launch(20_100 + 10 * i, 900 + i) for i in range(5)]
    assert "missing.device_work" not in _keys(_health(tmp_path, ev))


def test_device_work_without_a_launch(tmp_path):
    ev = _loop() + [_kernel(7000, 999)]
    item = next(i for i in _health(tmp_path, ev).items if i.key == "missing.launch")
    origin = min(e["ts"] for e in ev if "ts" in e)
    assert item.count == 1 and item.examples[0].t_ns == int((7000 - origin) * 1000)


def test_flows_with_one_end(tmp_path):
    ev = _loop() + [{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 5, "pid": CPU, "tid": 1, "ts": 105}]
    item = next(i for i in _health(tmp_path, ev).items if i.key == "missing.flow_end")
    assert item.severity == "info" and item.detail == {"starts": 1, "ends": 0}


def test_ranks_that_are_not_here(tmp_path):
    path = tmp_path / "r0.json"
    path.write_text(json.dumps({"traceEvents": _loop(), "distributedInfo": {"rank": 0, "world_size": 8}}))
    item = next(i for i in analyse_health(load_trace(path, cache=False)).items if i.key == "missing.ranks")
    assert item.detail == {"world_size": 8, "ranks": 1} and item.count == 7


def test_a_cut_file(tmp_path):
    text = json.dumps({"traceEvents": _loop()})
    path = tmp_path / "cut.json"
    path.write_text(text[: text.rindex("{")])
    assert _keys(analyse_health(load_trace(path, cache=False))).get("file.repaired") == "warn"


def test_profiler_overhead_events(tmp_path):
    ev = _loop() + [{"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0,
                     "ts": 300, "dur": 40}]
    item = next(i for i in _health(tmp_path, ev).items if i.key == "profiler.overhead")
    assert item.detail["total_ns"] == 40_000


def test_what_was_not_recorded(tmp_path):
    gpu_only = [e for e in _loop() if e.get("pid") == GPU]
    assert set(_keys(_health(tmp_path, gpu_only))) == {"shape.gpu_only"}
    cpu_only = [e for e in _loop() if e.get("pid") == CPU]
    assert set(_keys(_health(tmp_path, cpu_only))) == {"shape.cpu_only"}
    bare = [e for e in _loop() if e.get("cat") not in ("python_function", "cpu_instant_event")]
    for e in bare:
        e.get("args", {}).pop("Input Dims", None)
    assert set(_keys(_health(tmp_path, bare))) == {"shape.no_shapes", "shape.no_stacks", "shape.no_memory"}


CLEAN = ["hf_llama_stack.json.gz", "hf_llama_steploop.json.gz", "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz", "kineto__before_fix_trace.json",
         "hta__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "catapult__webview.json.gz",
         "catapult__main_thread_has_unclosed_slices.json"]


@pytest.mark.parametrize("name", CLEAN)
def test_clean_fixtures_report_no_warning(name):
    assert not analyse_health(load_trace(FIXTURES / name)).at_least("warn")


def test_every_fixture_is_listed_clean_or_with_its_defect():
    """A fixture not in CLEAN has a known defect: the cut first step, the cut file, Qwen's kernels
    launched before the CPU side was recorded."""
    defects = {"kineto__worker0_first_step.json.gz": {"missing.device_work"},
               "speedscope__simple-partial-trailing-comma.json": {"file.repaired"},
               QWEN.name: {"missing.launch"}}
    names = sorted(p.name for p in FIXTURES.iterdir() if p.name.endswith((".json", ".json.gz")))
    assert set(names) == set(CLEAN) | set(defects)
    for name, keys in defects.items():
        assert {i.key for i in analyse_health(load_trace(FIXTURES / name)).at_least("warn")} == keys, name


def test_qwens_kernels_without_launch_by_plain_python():
    events = raw_events(QWEN)
    calls = {e["args"]["correlation"] for e in events if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    flow_starts = {e["id"] for e in events if e.get("ph") == "s"}
    orphans = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
               and e["args"].get("correlation") not in calls and e["args"].get("correlation") not in flow_starts]
    item = next(i for i in analyse_health(load_trace(QWEN)).items if i.key == "missing.launch")
    assert item.count == len(orphans) == 509


LAUNCH = re.compile(r"^(cuda|hip|cu)\w*Launch(?!HostFunc)\w*$|^(cuda|hip|cu)\w*(Memcpy|Memset)\w*Async$")


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not present")
def test_dropped_kernels_at_session_start_on_tracelens_h100_traces_by_plain_python():
    path = SHARED_TRACES / "public" / "tracelens__h100_gaunernst_bert-small-uncased__1016001.json.gz"
    events = raw_events(path)
    work = {e["args"].get("correlation") for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    lost = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
            and LAUNCH.match(e["name"]) and e.get("args", {}).get("correlation") not in work]
    item = next(i for i in analyse_health(load_trace(path)).items if i.key == "missing.device_work")
    assert item.count == len(lost) == 22 and item.detail["early"] == 22


def test_info_shows_health_and_strict_fails_on_an_error(tmp_path, capsys):
    ev = _loop()
    ev[[i for i, e in enumerate(ev) if e.get("cat") == "kernel"][0]]["ts"] -= 3000
    bad = write_trace(tmp_path, ev, "bad.json")
    assert main(["info", str(bad), "--no-cache", "--strict"]) == 3
    out = capsys.readouterr()
    assert "clock.device_before_launch" in out.out and "--strict" in out.err
    assert main(["info", str(bad), "--no-cache", "--json"]) == 0
    health = json.loads(capsys.readouterr().out)["health"]
    assert health[0]["key"] == "clock.device_before_launch" and health[0]["severity"] == "error"
    assert health[0]["examples"][0]["row"] >= 0
    good = write_trace(tmp_path, _loop(), "good.json")
    assert main(["info", str(good), "--no-cache", "--strict"]) == 0
    assert "health: nothing found" in capsys.readouterr().out


def test_the_health_sql_table_lists_the_items():
    pytest.importorskip("duckdb", reason="vtui[sql] is not installed")
    from vtui.query.engine import run_query

    store = load_trace(QWEN)
    got = run_query(store, "select key, severity, count, example_slice_id, example_ts from health order by key")
    want = sorted((i.key, i.severity, i.count, i.examples[0].row if i.examples else None,
                   i.examples[0].t_ns if i.examples else None) for i in analyse_health(store).items)
    assert [tuple(r) for r in got.rows] == want
    assert got.rows[[r[0] for r in got.rows].index("missing.launch")][2] == 509


def test_the_mcp_health_tool_gives_the_items(tmp_path):
    pytest.importorskip("mcp", reason="vtui[mcp] is not installed")
    import vtui.mcp as vmcp

    ev = _loop()
    ev[[i for i, e in enumerate(ev) if e.get("cat") == "kernel"][0]]["ts"] -= 3000
    path = write_trace(tmp_path, ev, "bad.json")
    tools = {s.name: s.fn for s in vmcp.tool_specs(vmcp.StoreCache())}
    doc = json.loads(tools["health"](str(path)))
    want = analyse_health(load_trace(path, cache=False))
    assert [h["key"] for h in doc["health"]] == [i.key for i in want.items]
    assert doc["health"][0]["severity"] == "error" and doc["health"][0]["examples"][0]["row"] >= 0


def test_graph_replays_without_their_capture_beside(tmp_path):
    ev = _loop() + [_launch(9000, 700, name="cudaGraphLaunch"), _kernel(9010, 700, name="graph_kernel")]
    item = next(i for i in _health(tmp_path, ev).items if i.key == "missing.capture")
    assert item.count == 1 and item.examples[0].text == "graph launch: cudaGraphLaunch"
    (tmp_path / "capture_traces").mkdir()
    write_trace(tmp_path / "capture_traces", _loop(), "capture.json")  # vLLM's layout: found, nothing to say
    assert "missing.capture" not in _keys(_health(tmp_path, ev))


def _graph_pair(tmp_path: Path, replayed: list[int]):
    """A capture trace of a graph of kernels k0…k5 (one ``capture_*`` region), and a replay trace
    whose one graph launch ran the kernels ``replayed``."""
    from vtui.analysis.report.insights import compute_insights

    cap = _meta() + [{"ph": "X", "cat": "user_annotation", "name": "capture_8_FULL", "pid": CPU, "tid": 1,
                      "ts": 50.0, "dur": 200.0}]
    cap += [{**_launch(60.0 + 20 * k, 500 + k), "args": {"correlation": 500 + k, "kernel": f"k{k}"}} for k in range(6)]
    ev = _loop() + [_launch(9000, 700, name="cudaGraphLaunch")]
    ev += [_kernel(9010 + 30 * i, 700, name=f"k{k}") for i, k in enumerate(replayed)]
    (tmp_path / "cap").mkdir(parents=True)
    (tmp_path / "rep").mkdir(parents=True)
    capture = load_trace(write_trace(tmp_path / "cap", cap, "capture.json"), cache=False)
    store = load_trace(write_trace(tmp_path / "rep", ev), cache=False)
    return compute_insights(store, capture=capture, capture_name="capture.json").health


def test_a_graph_replay_missing_captured_kernels(tmp_path):
    item = next(i for i in _graph_pair(tmp_path, [0, 1, 3, 4, 5]).items if i.key == "missing.graph_kernels")
    assert (item.severity, item.count, item.detail["kernels_missing"]) == ("warn", 1, 1)
    assert item.examples[0].text == "graph launch cudaGraphLaunch: 1 kernels missing" and item.examples[0].t_ns > 0


def test_a_whole_replay_and_a_piece_of_a_capture_are_not_missing_kernels(tmp_path):
    assert "missing.graph_kernels" not in _keys(_graph_pair(tmp_path / "whole", [0, 1, 2, 3, 4, 5]))
    # a piecewise graph replays one part of what the capture region holds: its ends are not holes
    assert "missing.graph_kernels" not in _keys(_graph_pair(tmp_path / "piece", [2, 3, 4]))


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not present")
def test_vllms_full_graph_replay_misses_no_kernel_inside_its_capture():
    from vtui.analysis.report.insights import compute_insights

    pub = SHARED_TRACES / "public"
    cap = pub / "tracelens__graph_capture_rank_0.1773709742341309550.pt.trace.json.gz"
    health = compute_insights(load_trace(pub / "tracelens__vllm_decode_full_graph_execution.json.gz"),
                              capture=load_trace(cap), capture_name=cap.name).health
    # 421 replayed kernels match the capture's 431 launches in one block (the other 10 are outside the
    # graph, at the region's ends): no hole
    assert "missing.graph_kernels" not in _keys(health)
