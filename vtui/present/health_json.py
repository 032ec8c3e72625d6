"""Trace health (`vtui.analysis.health`) as JSON Structs and as the lines `vtui info` and the app
show: most severe first, each with its key, count, examples and the figures it puts in doubt."""

from __future__ import annotations

import msgspec

from vtui.analysis.health.items import Example, HealthReport
from vtui.safe_text import safe_field
from vtui.units import format_duration


class HealthExampleOut(msgspec.Struct):
    row: int  # slice row (-1: not one slice)
    t_ns: int  # relative to the trace origin
    text: str


class HealthItemOut(msgspec.Struct):
    key: str
    severity: str  # info / warn / error
    message: str
    count: int
    examples: list[HealthExampleOut]
    doubts: list[str]  # the figures this puts in doubt
    detail: dict[str, int | float | str]


def health_out(report: HealthReport) -> list[HealthItemOut]:
    return [HealthItemOut(i.key, i.severity, i.message, i.count,
                          [HealthExampleOut(e.row, e.t_ns, e.text) for e in i.examples], list(i.doubts), dict(i.detail))
            for i in report.items]


MARK = {"error": "✗", "warn": "!", "info": "·"}


def health_lines(report: HealthReport, examples: bool = True) -> list[str]:
    """One line per item (escaped: the messages quote trace names), examples indented beneath."""
    return [line for line, _ in health_rows(report, examples)]


def health_rows(report: HealthReport, examples: bool = True) -> list[tuple[str, Example | None]]:
    """``health_lines`` with, for each example's line, the example (the app jumps to it)."""
    if not report.items:
        return [("health: nothing found that puts a figure in doubt", None)]
    worst = report.worst
    head = {"error": "health: ERRORS — some figures are wrong", "warn": "health: warnings — some figures are in doubt",
            "info": "health: notes only"}[worst or "info"]
    rows: list[tuple[str, Example | None]] = [(head, None)]
    for item in report.items:
        doubt = f"  [in doubt: {', '.join(item.doubts)}]" if item.doubts and item.severity != "info" else ""
        rows.append((f"  {MARK[item.severity]} {item.severity:5} {item.key}: {safe_field(item.message, 400)}{doubt}", None))
        if examples:
            rows += [(f"        at {format_duration(e.t_ns)}: {safe_field(e.text, 200)}", e) for e in item.examples[:3]]
    return rows


def health_headline(report: HealthReport) -> str | None:
    """The one line above any figure (Insights): None when no item is a warning or error."""
    bad = report.at_least("warn")
    if not bad:
        return None
    doubts = report.doubts()
    names = ", ".join(i.key for i in bad[:3]) + (" …" if len(bad) > 3 else "")
    return (f"trace health: {len(bad)} problem(s) ({names}) — in doubt: {', '.join(doubts) or 'none'}"
            " (vtui info shows them)")
