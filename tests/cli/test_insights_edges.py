"""Insights at the edges a first trace hits: one step (a single decode step, as vLLM's profiler
often records: the trend line says there is too little to judge instead of printing a
measured-looking zero trend), the profiler's own overhead events (not CPU operators), ranks that
tie (no slowest rank)."""

from __future__ import annotations

import json

from tests.helpers import X, write_trace
from vtui.cli import main

STEP = "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)"


def _insights(capsys, events, tmp_path) -> list[str]:
    path = write_trace(tmp_path, events)
    assert main(["insights", str(path)]) == 0
    return capsys.readouterr().out.splitlines()


def test_one_step_prints_no_zero_trend(tmp_path, capsys):
    events = [X(STEP, 0, 2400, cat="user_annotation"), X("schedule", 10, 500), X("forward", 600, 1700)]
    lines = _insights(capsys, events, tmp_path)
    trend = [line for line in lines if line.strip().startswith("trend:")]
    assert trend == ["  trend: n/a (1 step: a trend, spikes and slow first need more)"]
    phases = [line for line in lines if line.strip().startswith(("schedule", "forward")) and "first" in line]
    assert len(phases) == 2 and all("then" not in line for line in phases), phases


def test_two_steps_still_say_gaps_and_the_first_step(tmp_path, capsys):
    events = [X(STEP, 0, 2400, cat="user_annotation"), X(STEP, 3000, 1200, cat="user_annotation")]
    trend = [line for line in _insights(capsys, events, tmp_path) if line.strip().startswith("trend:")]
    assert len(trend) == 1 and trend[0].startswith("  trend: n/a (2 steps: ")
    assert "gaps 600 µs" in trend[0] and "slow first: no (2.0× median)" in trend[0]


def test_cupti_overhead_is_not_a_cpu_operator(tmp_path, capsys):
    """Kineto writes CUPTI's buffer requests as cat "overhead" on pid -1: the tracer's time, not the program's."""
    events = [X("aten::mm", 0, 100), X("aten::add", 200, 50),
              X("Activity Buffer Request", 300, 900, cat="overhead", pid=-1, tid=0),
              X("Lazy Function Loading", 1300, 20, cat="overhead", pid=-1, tid=0)]
    path = write_trace(tmp_path, events)
    assert main(["insights", str(path), "--json"]) == 0
    ops = json.loads(capsys.readouterr().out)["ops"]
    names = {o["name"] for o in ops}
    assert names == {"aten::mm", "aten::add"}, names
    assert main(["insights", str(path)]) == 0
    assert "Activity Buffer Request" not in capsys.readouterr().out


def test_ranks_that_tie_have_no_slowest_rank(tmp_path, capsys):
    """Four ranks computing exactly alike: each step's step time is the same on every rank, so the
    steps table says "tie" rather than naming rank 0 the slowest."""
    from benchmarks.ranks_synth import write_rank

    folder = tmp_path / "ranks"
    folder.mkdir()
    for r in range(4):
        steps = [X(f"ProfilerStep#{i}", 100 + 2000 * i, 1500, cat="user_annotation", pid=100 + r, tid=100 + r)
                 for i in range(3)]
        write_rank(folder, f"rank{r}.pt.trace.json", steps, r, 4)
    assert main(["ranks", str(folder)]) == 0
    out = capsys.readouterr().out
    steps = out[out.index("Steps"):out.index("Collectives")]
    rows = [line for line in steps.splitlines()[2:] if line.strip() and not set(line.strip()) <= set("-─ ")]
    assert rows and all(line.split()[-2] == "tie" for line in rows), steps
