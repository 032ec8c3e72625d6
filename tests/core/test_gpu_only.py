"""GPU-only traces (no CPU side, as vLLM users ask for and MI210 traces are): every command still
answers what the device side can, and says first what it cannot."""

from __future__ import annotations

from tests.core.test_health import GPU, _loop
from tests.helpers import cli_json, union_length, write_trace
from vtui.analysis.report.insights import compute_insights
from vtui.cli import main
from vtui.load.trace import load_trace


def _gpu_only(tmp_path):
    events = [e for e in _loop(n=8) if e.get("pid") == GPU]
    return events, write_trace(tmp_path, events, "gpu_only.json")


def test_insights_say_what_a_gpu_only_trace_cannot_answer(tmp_path):
    events, path = _gpu_only(tmp_path)
    ins = compute_insights(load_trace(path, cache=False))
    assert ins.findings[0].kind == "gpu_only" and "no CPU side" in ins.findings[0].message
    assert not any(f.kind == "steps" for f in ins.findings)  # no step advice: steps are CPU annotations
    busy = [f for f in ins.findings if f.kind == "gpu_busy"]
    assert busy and "CUDA graph" not in busy[0].hint and "CPU side" in busy[0].hint
    kernels = [(int(e["ts"] * 1000), int((e["ts"] + e["dur"]) * 1000)) for e in events if e.get("cat") == "kernel"]
    assert ins.gpu.busy_ns == union_length(kernels)  # what the device side can answer, it does
    assert not ins.steps.present and not ins.serving.present


def test_every_command_answers_on_a_gpu_only_trace(tmp_path, capsys):
    _, path = _gpu_only(tmp_path)
    doc = cli_json(capsys, "insights", path, "--json", "--no-cache")
    assert doc["health"]["problems"] == ["shape.gpu_only"] and "critical_path" in doc["health"]["doubt"]
    assert main(["insights", str(path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1].startswith("trace health: 1 problem(s) (shape.gpu_only)")
    for argv in (["stats", str(path)], ["tree", str(path)], ["info", str(path), "--strict"], ["search", str(path), "gemm"]):
        assert main([*argv, "--no-cache"]) == 0, argv
        capsys.readouterr()
