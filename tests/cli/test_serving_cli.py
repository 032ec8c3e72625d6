"""`vtui insights` serving and graphs output: the JSON keys as documented, the text lines, --capture
and the capture_traces/ folder beside a trace, and bad input as one line."""

from __future__ import annotations

import json
import statistics

from tests.core.test_serving import LOOP, synthetic_loop, true_steps
from tests.helpers import X, cli_json, write_trace
from vtui.cli import main
from vtui.units import format_duration as fd

STEP_KEYS = {"index", "kind", "prefill_requests", "prefill_tokens", "decode_requests", "decode_tokens", "start_ns",
             "dur_ns", "cpu_dur_ns", "gpu_outlasts", "gpu_ns", "queued_ns"}
SERVING_KEYS = {"present", "source", "steps", "prefill_steps", "decode_steps", "mixed_steps", "unknown_steps",
                "prefill_tokens", "decode_tokens", "ttft_ns", "ttft_cpu_ns", "tpot_ns", "decode_tokens_per_s", "steady", "kinds",
                "slow_prefills"}
GRAPH_KEYS = {"present", "launches", "kernels", "kernel_ns", "launch_delay", "per_step", "capture"}


def _own(true):
    """Each step's own time: from its start, or the previous steps' end while their GPU work still ran."""
    return [e - max(a, max([x for _, _, x in true[:i]], default=a)) for i, (a, _, e) in enumerate(true)]


def _capture_events():
    """A capture trace: a capture_8_FULL region whose launches name the graph's kernels, each under an operator."""
    ev = [X("capture_8_FULL", 0, 500, cat="user_annotation"),
          X("cudaLaunchKernel", -50, 5, cat="cuda_runtime", kernel="warmup_fill")]  # before the region: not captured
    for k, (op, dims) in enumerate([("aten::mm", [[8, 64], [64, 64]]), ("aten::mm", [[8, 64], [64, 64]]),
                                    ("aten::softmax", [[8, 64], [], []])]):
        ev.append(X(op, 10 + k * 100, 50, **{"Input Dims": dims}))
        ev.append(X("cudaLaunchKernel", 20 + k * 100, 5, cat="cuda_runtime", kernel=f"graph_k{k}"))
    return ev


def test_json_keys_and_figures(tmp_path, capsys):
    path = write_trace(tmp_path, synthetic_loop()[0])
    d = cli_json(capsys, "insights", path, "--json")
    sv, g = d["serving"], d["graphs"]
    assert set(sv) == SERVING_KEYS and set(sv["steps"][0]) == STEP_KEYS and set(g) == GRAPH_KEYS
    assert len(sv["steps"]) == len(LOOP) and sv["prefill_steps"] == 1 and sv["mixed_steps"] == 1
    assert sv["decode_steps"] == len(LOOP) - 2 and sv["decode_tokens"] == sum(mt for *_, mt, _ in LOOP)
    assert sv["prefill_tokens"] == sum(nt for _, nt, *_ in LOOP)
    true = true_steps()  # a step ends at the later of its annotation's end and its GPU work's end
    assert sv["tpot_ns"] == statistics.median(d for d, (n, _, m, _, _) in zip(_own(true), LOOP) if m and not n)
    assert [(s["dur_ns"], s["cpu_dur_ns"], s["gpu_outlasts"]) for s in sv["steps"]] == \
        [(d, c - a, e > c) for (a, c, e), d in zip(true, _own(true))]
    assert sv["ttft_ns"] == true[0][2] - true[0][0] and sv["ttft_cpu_ns"] == true[0][1] - true[0][0]
    assert d["steps"]["durations_ns"] == _own(true)
    assert d["steps"]["cpu_durations_ns"] == [c - a for a, c, _ in true]
    assert (g["launches"], g["kernels"], g["kernel_ns"]) == (1, 3, 75_000) and g["capture"] is None
    assert main(["insights", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Serving (annotations): 1 prefill" in text and f"TPOT {fd(sv['tpot_ns'])}" in text
    assert "CUDA/HIP graphs: 1 launches · 3 kernels" in text
    late = sum(e > c for _, c, e in true)
    assert f"a step ends when its GPU work ends: the later of its annotation's end and the end of the device work " \
           f"it launched ({late} of {len(LOOP)} steps end after the annotation)" in text


def test_capture_flag_and_capture_traces_folder(tmp_path, capsys):
    path = write_trace(tmp_path, synthetic_loop()[0])
    cap = write_trace(tmp_path, _capture_events(), "capture.json")
    d = cli_json(capsys, "insights", path, "--json", "--capture", cap)
    c = d["graphs"]["capture"]
    assert (c["file"], c["captures"], c["replayed_kernels"], c["matched"]) == ("capture.json", 1, 3, 3)
    by_op = {(o["op"], o["shapes"]): (o["kernels"], o["kernel_ns"]) for o in c["by_op"]}
    assert by_op == {("aten::mm", "[[8, 64], [64, 64]]"): (2, 50_000), ("aten::softmax", "[[8, 64], [], []]"): (1, 25_000)}
    (tmp_path / "capture_traces").mkdir()
    (tmp_path / "capture_traces" / "graph_capture_rank_0.json").write_text(json.dumps({"traceEvents": _capture_events()}))
    auto = cli_json(capsys, "insights", path, "--json")["graphs"]["capture"]
    assert auto["file"] == "graph_capture_rank_0.json" and auto["matched"] == 3


def test_bad_capture_is_one_line(tmp_path, capsys):
    path = write_trace(tmp_path, synthetic_loop()[0])
    assert main(["insights", str(path), "--capture", str(tmp_path / "missing.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vtui: error:") and "missing.json" in err and "\n" not in err
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["insights", str(path), "--capture", str(tmp_path / "bad.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vtui: error:") and "\n" not in err and "Traceback" not in err
