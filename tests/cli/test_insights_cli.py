"""`vtui insights`: JSON and text over the bundled step loop, ranks, bad input, and layering."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from tests.helpers import FIXTURES, GPU_CATS, ROOT, STEPLOOP, raw_events, raw_origin, raw_span_ns, union_length
from vtui.cli import main


def test_insights_json_on_the_step_loop(capsys):
    assert main(["insights", str(STEPLOOP), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    events = raw_events(STEPLOOP)
    steps = sorted(e["dur"] for e in events if e.get("ph") == "X" and e.get("name") == "engine_step")
    st = d["steps"]
    assert st["count"] == len(steps) == 32 and st["pattern"] == "engine_step"
    assert sorted(st["durations_ns"]) == pytest.approx([round(x * 1000) for x in steps], abs=2)
    # The decode steps after the prefill: no fitted rise and nothing 1.5x the median, so "flat".
    rest = [e["dur"] for e in sorted((e for e in events if e.get("ph") == "X" and e.get("name") == "engine_step"),
                                     key=lambda e: e["ts"])][1:]
    assert max(rest) < 1.5 * statistics.median(rest)
    n = len(rest)
    x_mean, y_mean = (n - 1) / 2, sum(rest) / n
    slope = sum((i - x_mean) * (y - y_mean) for i, y in enumerate(rest)) / sum((i - x_mean) ** 2 for i in range(n))
    assert st["slope_ns_per_step"] == pytest.approx(slope * 1000, abs=1) and abs(slope * (n - 1)) < 0.25 * y_mean
    assert st["slow_first"] is True and st["trend"] == "flat" and st["spikes"] == []
    assert {p["name"] for p in d["phases"]} == {"schedule", "execute_model", "sample", "update_kv_cache"}
    assert d["gpu"]["present"] is False and d["memory"]["present"] is True
    assert any(f["message"] == "no GPU activity in this trace" for f in d["findings"])


def test_insights_text_and_range(capsys):
    assert main(["insights", str(STEPLOOP), "--range", ":100ms"]) == 0
    out = capsys.readouterr().out
    for heading in ("Steps:", "Operators (CPU) by self time", "GPU: no GPU activity", "Memory", "Findings:"):
        assert heading in out
    assert "range 0 ns – 100 ms" in out


@pytest.mark.parametrize("args, message", [
    (["--step", "a("], "invalid regex"),
    (["--range", "10s:20s"], "outside the trace"),
    (["--top", "0"], "--top"),
])
def test_insights_bad_input_is_one_line(capsys, args, message):
    assert main(["insights", str(FIXTURES / "kineto__before_fix_trace.json"), *args]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("vtui: error:") and message in err and "\n" not in err


def test_busy_per_device_over_rank_files():
    """Two rank files: busy % per device is each rank's own union; the headline is their mean."""
    from vtui.analysis.gpu.activity import analyse_gpu
    from vtui.load.trace import load_trace

    store = load_trace(FIXTURES / "ranks")
    g = analyse_gpu(store)
    assert len(g.devices) == 2
    for dev, path in zip(g.devices, sorted((FIXTURES / "ranks").iterdir())):
        events = raw_events(path)
        origin = raw_origin(events)
        gpu = [raw_span_ns(origin, e) for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() in GPU_CATS]
        assert dev.busy_ns == pytest.approx(union_length(gpu), abs=len(gpu))
    assert g.busy_pct == pytest.approx(sum(d.busy_pct for d in g.devices) / 2)


def test_insights_core_does_not_import_textual_or_rich():
    code = ("import sys, vtui.analysis.report.insights, vtui.present.insights_text, vtui.commands.insights;"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'));"
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
