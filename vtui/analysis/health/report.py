"""Trace health, assembled: every check over the whole trace, most severe first. Cheap: a few
numpy passes over columns the store already has, and the launch pairing the analyses share."""

from __future__ import annotations

from vtui.analysis.health.clock import clock_items
from vtui.analysis.health.items import SEVERITIES, HealthReport
from vtui.analysis.health.shape import shape_items
from vtui.analysis.health.work import capture_items, duration_items, file_items, missing_items, rank_items
from vtui.store.store import TraceStore

_MEMO = "health.report"


def analyse_health(store: TraceStore) -> HealthReport:
    """The trace's health report (computed once per store)."""
    return store.memo(_MEMO, lambda: _analyse(store))


def _analyse(store: TraceStore) -> HealthReport:
    items = [*file_items(store), *clock_items(store), *duration_items(store), *missing_items(store),
             *rank_items(store), *capture_items(store), *shape_items(store)]
    items.sort(key=lambda i: -SEVERITIES.index(i.severity))  # stable: checks keep their order within a level
    return HealthReport(items)
