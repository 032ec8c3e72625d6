"""Trace health, assembled: every check over the whole trace, most severe first. Cheap: a few
numpy passes over columns the store already has, and the launch pairing the analyses share."""

from __future__ import annotations

from vtui.analysis.gpu.graphs import CaptureMatch
from vtui.analysis.health.clock import clock_items
from vtui.analysis.health.items import SEVERITIES, HealthItem, HealthReport
from vtui.analysis.health.shape import shape_items
from vtui.analysis.health.work import (
    capture_items,
    duration_items,
    file_items,
    graph_hole_items,
    missing_items,
    rank_items,
)
from vtui.store.store import TraceStore

_MEMO = "health.report"


def analyse_health(store: TraceStore) -> HealthReport:
    """The trace's health report (computed once per store)."""
    return store.memo(_MEMO, lambda: _analyse(store))


def with_capture(report: HealthReport, store: TraceStore, match: CaptureMatch | None) -> HealthReport:
    """The report with what only the matched capture trace shows (graph replays missing kernels)."""
    extra = graph_hole_items(store, match)
    return _sorted([*report.items, *extra]) if extra else report


def _analyse(store: TraceStore) -> HealthReport:
    return _sorted([*file_items(store), *clock_items(store), *duration_items(store), *missing_items(store),
                    *rank_items(store), *capture_items(store), *shape_items(store)])


def _sorted(items: list[HealthItem]) -> HealthReport:
    items = sorted(items, key=lambda i: -SEVERITIES.index(i.severity))  # stable: checks keep their order within a level
    return HealthReport(items)
