"""The GPU's idle gaps split by cause, on a trace shaped like SGLang's decode on MI300X
(tracelens__sglang_Qwen3-8B_prefilldecode): the GPU goes idle, the host issues a
``hipStreamWaitEvent`` 18 µs later and the next kernel's ``hipLaunchKernel`` 39.6 µs into the gap,
then blocks in a ``hipMemcpyWithStream`` for 493 ms; the kernel runs when the copy is done. Only
the 39.6 µs up to the launch call waited for the CPU; the rest waited behind the stream wait."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import load_events
from vtui.analysis.gpu.activity import analyse_gpu
from vtui.analysis.why.findings import gpu_findings
from vtui.present.insights_json import gpu_dict

GAP_START = 1000.0  # µs: the first kernel ends here
BLOCK_US = 493_208.469


def _runtime(name: str, ts: float, dur: float, corr: int, **args) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 251, "tid": 251, "ts": ts, "dur": dur,
            "args": {"correlation": corr, **args}}


def _kernel(name: str, ts: float, dur: float, corr: int) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 9, "tid": 3, "ts": ts, "dur": dur,
            "args": {"device": 9, "stream": 3, "correlation": corr, "kind": "Dispatch Kernel"}}


def _events() -> list[dict]:
    copy_end = GAP_START + 88.28 + BLOCK_US
    return [
        {"ph": "M", "name": "process_name", "pid": 9, "args": {"name": "GPU 9"}},
        _runtime("hipLaunchKernel", 10.0, 5.0, 1, kernel="arange_kernel"),
        _kernel("arange_kernel", 20.0, GAP_START - 20.0, 1),
        _runtime("hipStreamWaitEvent", GAP_START + 18.107, 9.795, 2),
        _runtime("hipEventDestroy", GAP_START + 28.79, 0.711, 3),
        _runtime("hipLaunchKernel", GAP_START + 39.6, 5.008, 4, kernel="resolve_future_token_ids_kernel"),
        _runtime("hipMemcpyWithStream", GAP_START + 88.28, BLOCK_US, 5, bytes="60", kind="1"),
        _kernel("resolve_future_token_ids_kernel", copy_end - 13.0, 7.01, 4),
    ]


def _truth(events: list[dict]) -> dict[str, int]:
    """Plain Python: the gap between the two kernels, cut at the second one's launch call."""
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    first, second = kernels
    launch = next(e for e in events if e.get("cat") == "cuda_runtime"
                  and e["args"]["correlation"] == second["args"]["correlation"])
    gap_start, gap_end = round((first["ts"] + first["dur"]) * 1000), round(second["ts"] * 1000)
    cpu = round(launch["ts"] * 1000) - gap_start
    return {"gap": gap_end - gap_start, "cpu": cpu, "after_launch": gap_end - gap_start - cpu}


def test_sglang_shaped_gap_is_a_stream_wait_not_the_cpu(tmp_path: Path):
    events = _events()
    want = _truth(events)
    g = analyse_gpu(load_events(tmp_path, events))
    assert g.idle_cpu_launch_ns == want["cpu"] == 39_600
    assert g.idle_dependency_ns == want["after_launch"] and g.idle_queued_ns == 0
    assert g.idle_dependencies == [("hipStreamWaitEvent", want["after_launch"])]
    assert g.idle_cpu_launch_ns + g.idle_dependency_ns == want["gap"]
    kinds = {f.kind: f for f in gpu_findings(g)}
    assert "gpu_waits_cpu" not in kinds  # no "launch-bound → CUDA graphs" for a 40 µs CPU share
    assert "hipStreamWaitEvent" in kinds["gpu_waits_dependency"].message
    idle = gpu_dict(g)["idle_ns"]
    assert (idle["cpu_launch_ns"], idle["queued_ns"], idle["dependency_ns"]) == (want["cpu"], 0, want["after_launch"])
    assert idle["dependencies"] == [{"call": "hipStreamWaitEvent", "ns": want["after_launch"]}]


def test_without_the_stream_wait_the_launched_time_is_queued(tmp_path: Path):
    events = [e for e in _events() if e.get("name") != "hipStreamWaitEvent"]
    want = _truth(events)
    g = analyse_gpu(load_events(tmp_path, events))
    assert (g.idle_cpu_launch_ns, g.idle_queued_ns, g.idle_dependency_ns) == (want["cpu"], want["after_launch"], 0)
    assert "gpu_queued" in {f.kind for f in gpu_findings(g)}


def test_a_stream_wait_before_the_previous_launch_is_not_this_gaps_cause(tmp_path: Path):
    """The wait must come after the thread's previous launch: an older one ordered older work."""
    events = _events()
    wait = next(e for e in events if e.get("name") == "hipStreamWaitEvent")
    wait["ts"] = 5.0  # before the first kernel's launch at 10 µs
    g = analyse_gpu(load_events(tmp_path, events))
    assert g.idle_dependency_ns == 0 and g.idle_queued_ns == _truth(events)["after_launch"]


def test_work_starting_before_its_launch_call_is_a_clock_offset(tmp_path: Path):
    events = _events()
    launch = next(e for e in events if e.get("args", {}).get("correlation") == 4 and e["cat"] == "cuda_runtime")
    launch["ts"] = GAP_START + BLOCK_US + 500.0  # after the kernel started: the clocks disagree
    g = analyse_gpu(load_events(tmp_path, events))
    assert g.idle_clock_offset_ns == _truth(events)["gap"] and g.idle_cpu_launch_ns == 0


def test_compare_and_diff_read_the_same_split(tmp_path: Path):
    from vtui.analysis.report.insights import summary_metrics

    events = _events()
    want = _truth(events)
    store = load_events(tmp_path, events)
    m = summary_metrics(store)
    assert (m["gpu_idle_cpu_launch_ns"], m["gpu_idle_dependency_ns"]) == (want["cpu"], want["after_launch"])
