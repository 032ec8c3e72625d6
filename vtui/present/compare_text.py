"""`vtui diff` as tables and text (the tables are reused by the app's compare view)."""

from __future__ import annotations

from vtui.analysis.report.compare import NOISE_NS, Comparison, MetricDiff, StepPair
from vtui.present.bars import scaled_bar, shared_sparklines
from vtui.present.tabular import Table
from vtui.safe_text import safe_field
from vtui.units import counted, format_bytes
from vtui.units import format_duration as fd

ABSENT = "—"
STEP_ROWS = 60  # steps listed in text; the sparklines and --json have them all
BAR_WIDTH = 16
NAME_WIDTH = 60  # operator names in the diff table


def format_value(value: float | None, unit: str, signed: bool = False) -> str:
    if value is None:
        return ABSENT
    sign = "+" if signed and value > 0 else ""
    if unit == "ns":
        return sign + fd(value)
    if unit == "pct":
        return f"{sign}{value:.1f}%" if not signed else f"{sign}{value:.1f} pt"
    if unit == "bytes":
        return sign + format_bytes(value)
    if unit == "rate":
        return f"{sign}{value:,.1f}/s"
    return f"{sign}{int(value):,}"


def format_pct(value: float | None) -> str:
    return ABSENT if value is None else f"{value:+.1f}%"


def metrics_table(c: Comparison) -> Table:
    def better(m: MetricDiff) -> str:
        return {"A": "A", "B": "B", "same": "same"}.get(m.better or "", ABSENT if m.a is None or m.b is None else "")

    return Table(
        columns=["name", "a", "b", "delta", "pct", "better"],
        rows=[[m.name, m.a, m.b, m.delta, m.pct, m.better] for m in c.metrics],
        display=[[m.label, format_value(m.a, m.unit), format_value(m.b, m.unit), format_value(m.delta, m.unit, True),
                  format_pct(m.pct), better(m)] for m in c.metrics],
        headers=["metric", "A", "B", "Δ", "Δ%", "better"],
        numeric=[False, True, True, True, True, False],
    )


def ops_table(c: Comparison, top: int | None = None) -> Table:
    ops = c.ops[:top] if top else c.ops

    def mean(v: float | None) -> str:
        return ABSENT if v is None else fd(v)

    return Table(
        columns=["name", "kind", "a_count", "b_count", "a_total_ns", "b_total_ns", "a_mean_ns", "b_mean_ns", "delta_ns",
                 "pct", "status"],
        rows=[[o.name, o.kind, o.a_count, o.b_count, o.a_total_ns, o.b_total_ns, o.a_mean_ns, o.b_mean_ns, o.delta_ns,
               o.pct, o.status] for o in ops],
        display=[[safe_field(o.name, NAME_WIDTH), o.kind, f"{o.a_count:,}", f"{o.b_count:,}", fd(o.a_total_ns), fd(o.b_total_ns),
                  mean(o.a_mean_ns), mean(o.b_mean_ns), format_value(o.delta_ns, "ns", True), format_pct(o.pct), o.status]
                 for o in ops],
        headers=["name", "kind", "A count", "B count", "A total", "B total", "A mean", "B mean", "Δ total", "Δ%",
                 "status"],
        numeric=[False, False, True, True, True, True, True, True, True, True, False],
    )


def steps_table(c: Comparison, limit: int | None = STEP_ROWS) -> Table:
    pairs = c.steps[:limit] if limit else c.steps
    top = max([p.a_ns or 0 for p in c.steps] + [p.b_ns or 0 for p in c.steps] + [1])

    def dur(v: int | None) -> str:
        return ABSENT if v is None else fd(v)

    def share(p: StepPair, name: str) -> str:
        a, b = p.a_shares.get(name), p.b_shares.get(name)
        return f"{ABSENT if a is None else f'{a:.0f}'}/{ABSENT if b is None else f'{b:.0f}'}"

    def shares(p: StepPair) -> list[float | None]:
        return [v for n in c.phases for v in (p.a_shares.get(n), p.b_shares.get(n))]

    return Table(  # machine columns: each phase's share of the step in A and in B, as numbers
        columns=["index", "a_ns", "b_ns", "delta_ns", *(f"{n} {side}_pct" for n in c.phases for side in "ab")],
        rows=[[p.index, p.a_ns, p.b_ns, p.delta_ns, *shares(p)] for p in pairs],
        display=[[f"#{p.index}", dur(p.a_ns), dur(p.b_ns), format_value(p.delta_ns, "ns", True),
                  scaled_bar(p.a_ns, top, BAR_WIDTH), scaled_bar(p.b_ns, top, BAR_WIDTH), *(share(p, n) for n in c.phases)] for p in pairs],
        headers=["step", "A", "B", "Δ", "A", "B", *(f"{safe_field(n, 18)} A/B %" for n in c.phases)],
        numeric=[True, True, True, True, False, False, *([True] * len(c.phases))],
    )


def _side_line(tag: str, side) -> str:
    steps = f"{counted(side.step_count, 'step')} ({safe_field(side.step_pattern)})" if side.step_pattern else "no steps found"
    return f"{tag}: {safe_field(side.label)} · range {fd(side.t0)} – {fd(side.t1)} · {steps}"


def steps_lines(c: Comparison) -> list[str]:
    if not c.steps:
        return ["Steps: no repeating step found in either trace (try --step REGEX)"]
    lines = []
    sa, sb = shared_sparklines(c.a_durations, c.b_durations)
    lines += [f"  A {sa or ABSENT}", f"  B {sb or ABSENT}", ""]
    lines.append(steps_table(c).render("table"))
    if len(c.steps) > STEP_ROWS:
        lines.append(f"… {len(c.steps) - STEP_ROWS} more steps (use --json for all)")
    return lines


def diff_text(c: Comparison, top: int = 25, table: str | None = None) -> str:
    """The comparison for a terminal: every section, or only ``table`` (metrics, ops, steps)."""
    if table == "metrics":
        return "\n".join([_side_line("A", c.a), _side_line("B", c.b), "", metrics_table(c).render("table")])
    if table == "ops":
        return ops_table(c, top).render("table") if c.ops else "no operators or kernels in either trace"
    if table == "steps":
        return "\n".join(steps_lines(c))
    counts: dict[str, int] = {}
    for o in c.ops:
        counts[o.status] = counts.get(o.status, 0) + 1
    summary = ", ".join(f"{counts[s]} {s}" for s in ("slower", "faster", "added", "removed", "same") if s in counts)
    tol = (f"same = within {100 * c.tolerance:g}% of A (times: or within {fd(NOISE_NS)}); "
           "better = lower time, memory, memcpy share and sync; higher GPU busy % and steps/s")
    out = [_side_line("A", c.a), _side_line("B", c.b), "",
           "Metrics", metrics_table(c).render("table"), "",
           f"Operators and kernels by |Δ total| ({summary or 'none'}; first {min(top, len(c.ops))} of {len(c.ops)})",
           ops_table(c, top).render("table") if c.ops else "  none", "",
           "Steps side by side (bars on one scale; phase columns: share of each step, A/B)", *steps_lines(c), "",
           tol]
    return "\n".join(out)


def diff_tables(c: Comparison, fmt: str, table: str | None = None, top: int = 25) -> str:
    """The comparison's tables as ``csv`` (one table, every row: ``table``, default ``ops``) or
    ``md`` (every table as a section, or just ``table``; operators limited to ``top``)."""
    if fmt == "csv":
        chosen = table or "ops"
        return {"metrics": metrics_table(c), "ops": ops_table(c), "steps": steps_table(c, None)}[chosen].render("csv")
    sections = {"metrics": ("Metrics", metrics_table(c)), "ops": ("Operators and kernels", ops_table(c, top)),
                "steps": ("Steps side by side", steps_table(c, None))}
    names = [table] if table else list(sections)
    return "\n\n".join(f"### {sections[n][0]}\n\n{sections[n][1].render('md')}" for n in names)
