"""The one range value (vtui.store.slicetime.TimeRange): resolved once where the user gives it,
clamped into the trace, refused by an analysis of another store, its selection made once and
shared by every analysis it is handed to.

The numbers each analysis gives over a range value are checked against plain Python over the
raw events in the brute-force tests (tests/core/test_*brute_force*.py), which all go through it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.helpers import FIXTURES
from vtui.analysis.base.ranges import resolve_range
from vtui.analysis.calltree.python_overhead import analyse_python
from vtui.analysis.calltree.tree import build_tree
from vtui.analysis.gpu.activity import analyse_gpu
from vtui.analysis.gpu.graphs import analyse_graphs
from vtui.analysis.gpu.jump_lists import gpu_idle_gaps, kernel_outliers
from vtui.analysis.gpu.memory import analyse_memory
from vtui.analysis.gpu.roofline import analyse_roofline
from vtui.analysis.report.compare import compare, op_totals
from vtui.analysis.report.insights import compute_insights, insights_metrics, summary_metrics
from vtui.analysis.slices.aggregate import aggregate
from vtui.analysis.slices.caches import analyse_caches
from vtui.analysis.slices.operators import analyse_ops
from vtui.analysis.slices.search import search
from vtui.analysis.steps.detect import analyse_steps
from vtui.errors import UsageError
from vtui.load.trace import load_trace
from vtui.present.compare_json import comparison_dict
from vtui.present.insights_json import insights_dict
from vtui.store import slicetime
from vtui.store.slicetime import TimeRange, time_range

TRACE = FIXTURES / "kineto__worker0_first_step.json.gz"  # CPU ops, GPU kernels, steps, memory

ENTRY_POINTS = {  # every public analysis that covers a time range, called with one range value
    "gpu": analyse_gpu, "ops": analyse_ops, "steps": analyse_steps, "memory": analyse_memory,
    "caches": analyse_caches, "python": analyse_python, "graphs": analyse_graphs, "roofline": analyse_roofline,
    "insights": lambda s, r: insights_dict(compute_insights(s, r)), "summary": summary_metrics,
    "op_totals": op_totals, "tree": build_tree, "search": lambda s, r: search(s, "aten|cuda|Memcpy", r),
    "aggregate": aggregate, "idle_gaps": gpu_idle_gaps, "outliers": kernel_outliers,
    "compare": lambda s, r: comparison_dict(compare(s, s, r, r)),
}


def _plain(value):
    """Every field spelled out, comparable with ``==`` (arrays as lists with their dtype)."""
    if isinstance(value, TimeRange):
        return ("range", value.t0, value.t1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.tolist())
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@pytest.fixture(scope="module")
def store():
    return load_trace(TRACE, cache=False)


def test_open_ends_are_the_trace_and_a_range_is_clamped_into_it(store):
    span = int(store.span_ns)
    whole = time_range(store)
    assert (whole.t0, whole.t1, whole.span_ns, whole.whole) == (0, span, span, True)
    assert (time_range(store, None, span // 2).t0, time_range(store, span // 3).t1) == (0, span)
    assert (time_range(store, -5, span + 5).t0, time_range(store, -5, span + 5).t1) == (0, span)
    past = time_range(store, span + 5, span + 9)
    assert (past.t0, past.t1) == (span, span) and not len(past.slices.rows)
    assert (time_range(store, 20, 10).t0, time_range(store, 20, 10).t1) == (20, 20)  # an end before the start
    for t0, t1 in ((-1, 5), (0, span + 1), (10, 5)):
        with pytest.raises(ValueError, match="not inside the trace"):
            TimeRange(store, t0, t1)
    got = resolve_range(store, "1us:2us")  # the CLI's edge builds the same value
    assert isinstance(got, TimeRange) and (got.t0, got.t1) == (1_000, 2_000) and got.store is store
    with pytest.raises(UsageError, match="outside the trace"):
        resolve_range(store, f"{span + 1}ns:")


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_analysis_refuses_a_range_of_another_store(store, name: str):
    other = load_trace(TRACE, cache=False)  # the same file, another store: its rows are not this one's
    with pytest.raises(ValueError, match="another trace"):
        ENTRY_POINTS[name](store, time_range(other))


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_analysis_over_a_shared_range_equals_it_alone_on_a_fresh_store(name: str):
    """One range value handed to every analysis in turn (its selection made by the first, reused
    by the rest) gives each the numbers it gives alone, with its own range on its own store: no
    analysis changes the shared selection, none reads another range."""
    shared_store = load_trace(TRACE, cache=False)
    span = int(shared_store.span_ns)
    for t0, t1 in ((0, span), (span // 5, span // 2)):
        shared = time_range(shared_store, t0, t1)
        before = {n: _plain(fn(shared_store, shared)) for n, fn in sorted(ENTRY_POINTS.items()) if n != name}
        fresh_store = load_trace(TRACE, cache=False)
        alone = _plain(ENTRY_POINTS[name](fresh_store, time_range(fresh_store, t0, t1)))
        assert _plain(ENTRY_POINTS[name](shared_store, shared)) == alone, (name, t0, t1)
        assert before == {n: _plain(fn(shared_store, shared)) for n, fn in sorted(ENTRY_POINTS.items())
                          if n != name}


def test_the_range_is_resolved_once_and_its_selection_made_once(store, monkeypatch):
    """Insights hands its range on as it is: one selection of the range's slices for every
    analysis, and none again for the headline metrics or the operator totals of the same range."""
    selections: list[tuple[int, int]] = []
    real = slicetime.range_rows

    def counted(st, t0, t1, tracks=None):
        if tracks is None:
            selections.append((t0, t1))
        return real(st, t0, t1, tracks)

    monkeypatch.setattr(slicetime, "range_rows", counted)
    span = int(store.span_ns)
    rng = time_range(store, span // 4, span // 2)
    ins = compute_insights(store, rng)
    assert ins.range is rng and selections == [(rng.t0, rng.t1)]
    assert summary_metrics(store, rng) == insights_metrics(ins)
    op_totals(store, rng)
    assert selections == [(rng.t0, rng.t1)]  # nothing selected again
    compare(store, store, rng, time_range(store))
    assert selections == [(rng.t0, rng.t1), (0, span)]  # the new range once; the old one reused
