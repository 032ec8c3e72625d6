"""record_function labels that a 2021 Kineto trace files as operators are annotations, not operators.

PyTorch 1.9 wrote every CPU-side slice with cat ``Operator``: ATen ops, autograd nodes, and the
labels of ``record_function`` (``ProfilerStep#5``, ``Optimizer.step#SGD.step``,
``enumerate(DataLoader)#…__next__``, users' ``## forward ##``). The labels hold a '#'; no op does.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.helpers import FIXTURES, SHARED_TRACES
from vtui.analysis.slices.operators import analyse_ops
from vtui.load.trace import load_trace

SHARED_2021 = SHARED_TRACES / "public" / "kineto__worker0.1623143089861.pt.trace.json.gz"
FIXTURE_2021 = FIXTURES / "kineto__worker0_first_step.json.gz"
TRACE_2021 = SHARED_2021 if SHARED_2021.is_file() else FIXTURE_2021
ALL = 10**9  # a "top" that keeps every row


def _x(name: str, cat: str, ts: float, dur: float, pid: int = 1, tid: int = 1) -> dict:
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def test_labels_filed_as_operators_are_listed_apart(tmp_path: Path):
    events = [
        {"ph": "M", "name": "process_labels", "pid": 0, "args": {"labels": "GPU 0"}},
        _x("ProfilerStep#3", "Operator", 0, 100),
        _x("## forward ##", "Operator", 1, 40),
        _x("aten::mm", "Operator", 2, 30),
        _x("Optimizer.step#SGD.step", "Operator", 50, 20),
        _x("aten::add_", "Operator", 51, 10),
        _x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "Operator", 75, 5),
        _x("cudaLaunchKernel", "Runtime", 60, 2),
        # A kernel's name may hold '#' (lambdas): it stays device work, never an annotation.
        _x("void kernel<{lambda(float)#1}>()", "Kernel", 62, 5, pid=0, tid=7),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    store = load_trace(path, cache=False)
    report = analyse_ops(store, top=ALL)
    assert {r.name for r in report.by_self} == {"aten::mm", "aten::add_", "cudaLaunchKernel"}
    assert {r.name for r in report.annotations} == {
        "ProfilerStep#3", "## forward ##", "Optimizer.step#SGD.step",
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"}
    # Shares are of the range x threads with operators: the labels add nothing to either.
    assert report.cpu_self_ns == (30 + 10 + 2) * 1000


def test_2021_trace_ranks_only_operators():
    with gzip.open(TRACE_2021, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    host = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("Operator", "Runtime")]
    labels = {e["name"] for e in host if "#" in e["name"]}
    assert "Optimizer.step#SGD.step" in labels and any(n.startswith("ProfilerStep#") for n in labels)
    expected_ops = {e["name"] for e in host if "#" not in e["name"]}
    report = analyse_ops(load_trace(TRACE_2021), top=ALL)
    assert {r.name for r in report.by_self} == expected_ops
    assert labels <= {r.name for r in report.annotations}
    # Per label: count and total (µs, all inside the trace) as the raw file has them.
    got = {r.name: (r.count, r.total_ns) for r in report.annotations}
    for name in labels:
        rows = [e for e in host if e["name"] == name]
        assert got[name] == (len(rows), sum(round(e["dur"] * 1000) for e in rows))
