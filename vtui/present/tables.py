"""Analysis results as `Table`s (shared by the CLI's printing and the app's table export)."""

from __future__ import annotations

from vtui.analysis.slices.aggregate import Aggregation
from vtui.present.tabular import Table
from vtui.units import format_duration

AGG_COLUMNS = ["name", "count", "total_ns", "self_ns", "avg_ns", "min_ns", "max_ns", "pct"]


def aggregation_table(agg: Aggregation, top: int | None = None) -> Table:
    rows = agg.rows[:top] if top else agg.rows
    title = {"name": "name", "cat": "category", "track": "track"}.get(agg.by, agg.by)
    return Table(
        columns=AGG_COLUMNS,
        rows=[list(r.as_dict().values()) for r in rows],
        display=[[r.key, f"{r.count:,}", format_duration(r.total_ns), format_duration(r.self_ns),
                  format_duration(r.avg_ns), format_duration(r.min_ns), format_duration(r.max_ns), f"{r.pct:.2f}%"]
                 for r in rows],
        headers=[title, "count", "total", "self", "avg", "min", "max", "% range"],
        numeric=[False] + [True] * 7,
    )
