"""Async spans (b/e, S/F) are neither operators nor steps: they overlap freely and belong to no
thread. Chrome's InputLatency spans (281 of them over a 4 s trace) ranked first with 95 s of
"self time" before."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.helpers import FIXTURES
from vtui.analysis.slices.operators import analyse_ops
from vtui.analysis.steps.detect import analyse_steps
from vtui.load.trace import load_trace

WEBVIEW = FIXTURES / "catapult__webview.json.gz"
ALL = 10**9


def test_async_spans_are_not_operators_nor_steps(tmp_path: Path):
    events = []
    for k in range(4):
        events.append({"ph": "X", "name": "RunTask", "cat": "toplevel", "ts": 100 * k, "dur": 60, "pid": 1, "tid": 1})
        events.append({"ph": "X", "name": "Paint", "cat": "cc", "ts": 100 * k + 10, "dur": 20, "pid": 1, "tid": 1})
    for k in range(6):  # long, overlapping async spans, each its own id
        events.append({"ph": "b", "name": "InputLatency", "cat": "benchmark", "id": k, "ts": 20 * k, "pid": 1, "tid": 1})
        events.append({"ph": "e", "name": "InputLatency", "cat": "benchmark", "id": k, "ts": 20 * k + 300, "pid": 1, "tid": 1})
    path = tmp_path / "t.json"
    path.write_text(json.dumps(events))
    store = load_trace(path, cache=False)
    report = analyse_ops(store, top=ALL)
    assert {r.name: r.self_ns for r in report.by_self} == {"RunTask": 4 * 40_000, "Paint": 4 * 20_000}
    assert report.threads == 1  # the async tracks are not CPU threads
    steps = analyse_steps(store)
    assert steps.pattern == "repeated: RunTask" and steps.count == 4


def test_chrome_trace_operators_are_its_thread_slices():
    with gzip.open(WEBVIEW, "rt") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    thread_names = {e.get("name") for e in events if e.get("ph") in ("X", "B")}
    async_names = {e.get("name") for e in events if e.get("ph") in ("b", "S")} - thread_names
    assert async_names  # e.g. "WebContentsImpl Loading"
    ops = {r.name for r in analyse_ops(load_trace(WEBVIEW), top=ALL).by_self}
    assert ops == thread_names
