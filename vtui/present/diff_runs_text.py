"""``vtui diff``'s run-against-run sections for a terminal: parity, steps by kind, kernels."""

from __future__ import annotations

import numpy as np

from vtui.analysis.diff.engine import RunsDiff
from vtui.analysis.diff.gate import GateResult
from vtui.analysis.diff.kernels import KernelRow
from vtui.analysis.diff.noise import LEVEL, Difference, SideFigure
from vtui.analysis.diff.steps import kinds_of
from vtui.present.names import cut_middle
from vtui.present.tabular import Table
from vtui.safe_text import safe_field
from vtui.units import format_duration as fd

ABSENT = "—"
NAME_WIDTH = 56


def _ns(v: float | None, signed: bool = False) -> str:
    if v is None:
        return ABSENT
    return ("+" if signed and v > 0 else "-" if signed and v < 0 else "") + fd(abs(v) if signed else v)


def difference_text(d: Difference) -> str:
    if d.delta_pct is None:
        return ABSENT
    ci = f" ({d.ci_pct[0]:+.1f} … {d.ci_pct[1]:+.1f}%)" if d.ci_pct else " (too few for an interval)"
    return f"{d.delta_pct:+.1f}%{ci}"


def _side(f: SideFigure | None) -> str:
    if f is None:
        return ABSENT
    runs = f" · {f.runs} runs ±{f.run_spread_pct:.1f}%" if f.run_spread_pct is not None else ""
    return f"{fd(f.median_ns)} p90 {fd(f.p90_ns)} ({f.n}){runs}"


def kinds_table(d: RunsDiff) -> Table:
    rows = d.kinds
    return Table(
        columns=["kind", "a_median_ns", "b_median_ns", "delta_pct", "significant", "matched", "unmatched_a",
                 "unmatched_b"],
        rows=[[k.kind, k.a.median_ns if k.a else None, k.b.median_ns if k.b else None, k.diff.delta_pct,
               k.diff.significant, k.matched, k.unmatched_a, k.unmatched_b] for k in rows],
        display=[[k.kind, _side(k.a), _side(k.b), difference_text(k.diff), "yes" if k.diff.significant else "no",
                  f"{k.matched:,}", f"{k.unmatched_a:,} / {k.unmatched_b:,}"] for k in rows],
        headers=["kind", "A median", "B median", f"Δ ({LEVEL:.0%} CI)", "significant", "pairs", "unmatched A/B"],
        numeric=[False, False, False, False, False, True, True],
    )


def _cut(name: str) -> str:
    """Cut in the middle: templated names share long heads and differ in their tails."""
    return safe_field(cut_middle(name, NAME_WIDTH), NAME_WIDTH)


def _kernel_name(r: KernelRow) -> str:
    return f"{_cut(r.name)} → {_cut(r.b_name)} ({r.match})" if r.b_name else _cut(r.name)


def kernels_table(rows: list[KernelRow], top: int | None = None) -> Table:
    rows = rows[:top] if top else rows
    return Table(
        columns=["kind", "name", "b_name", "op", "count", "a_ns", "b_ns", "delta_ns", "per_step_ns"],
        rows=[[r.kind, r.name, r.b_name, r.op, r.count, r.a_ns, r.b_ns, r.delta_ns, r.per_step_ns] for r in rows],
        display=[[r.kind, _kernel_name(r), safe_field(r.op, 28), f"{r.count:,}", _ns(r.a_ns), _ns(r.b_ns),
                  _ns(r.per_step_ns, True)] for r in rows],
        headers=["kind", "kernel", "operator", "count", "A total", "B total", "Δ per step"],
        numeric=[False, False, False, True, True, True, True],
    )


def parity_lines(d: RunsDiff) -> list[str]:
    if not d.parity:
        return ["Parity: like runs (device, model, main operators' shapes, dtypes, tokens per step, profiler flags)"]
    return ["Parity: UNLIKE RUNS — the sides did not run the same work; differences may be the work's:",
            *(f"  {safe_field(p.what)}: A {safe_field(p.a, 70)} · B {safe_field(p.b, 70)}" for p in d.parity)]


def kinds_lines(d: RunsDiff) -> list[str]:
    if not d.kinds:
        return ["Steps by kind: no steps found in either side (try --step REGEX)"]
    out = ["Steps by kind (aligned by kind and order; Δ of the medians with its bootstrap interval)",
           kinds_table(d).render("table")]
    if d.ttft_a is not None and d.ttft_b is not None:
        out.append(f"TTFT: A {_side(d.ttft_a)} · B {_side(d.ttft_b)} · Δ {difference_text(d.ttft)}")
    return out


def kernel_lines(d: RunsDiff, top: int = 15) -> list[str]:
    k = d.kernels
    conf = ", ".join(f"{kind} {100 * v:.0f}%" for kind, v in k.confidence.items())
    out = [f"Kernels inside matched steps ({sum(k.step_pairs.values()):,} step pairs aligned"
           + (f"; exact matches {conf}" if conf else "")
           + (f"; {sum(k.unaligned.values())} too long to align" if k.unaligned else "") + ")"]
    for title, rows in (("changed", k.changed), ("added (B only)", k.added), ("removed (A only)", k.removed)):
        if rows:
            out += [f"  {title}: {len(rows)}", kernels_table(rows, top).render("table")]
    if not (k.changed or k.added or k.removed):
        out.append("  no kernel added, removed or changed beyond the noise")
    if k.by_op:
        out.append("  by operator (Δ per step: matched kernels' Δ + added − removed)")
        out += [f"    {o.kind:<8} {safe_field(o.op, 48):<48} {_ns(o.per_step_ns, True)}" for o in k.by_op[:top]]
    return out


def run_lines(d: RunsDiff) -> list[str]:
    """Each run's steps by kind (median, count) and TTFT."""
    out = []
    for tag, side in (("A", d.a_steps), ("B", d.b_steps)):
        for r in side:
            kinds = " · ".join(f"{kind} {fd(float(np.median(r.durations[r.of_kind(kind)])))} ({len(r.of_kind(kind))})"
                               for kind in kinds_of([r]))
            ttft = f" · TTFT {fd(r.ttft_ns)}" if r.ttft_ns is not None else ""
            out.append(f"  {tag} {safe_field(r.label, 60)}: {kinds or 'no steps'}{ttft}")
    return [f"Runs: A {len(d.a_labels)} · B {len(d.b_labels)}", *out]


def runs_lines(d: RunsDiff, top: int = 15, table: str | None = None) -> list[str]:
    """Parity, steps by kind and kernels (what ``vtui diff`` prints after its tables), or the one
    ``table`` names (parity, steps_by_kind, kernels, runs)."""
    if table == "parity":
        return parity_lines(d)
    if table == "steps_by_kind":
        return kinds_lines(d)
    if table == "kernels":
        return kernel_lines(d, top)
    if table == "runs":
        return run_lines(d)
    return [*run_lines(d), *parity_lines(d), "", *kinds_lines(d), "", *kernel_lines(d, top)]


def gate_lines(results: list[GateResult]) -> list[str]:
    """One line per breached threshold."""
    out = []
    for g in results:
        if not g.breached:
            continue
        delta = ABSENT if g.delta_pct is None else f"{g.delta_pct:+.1f}%"
        ci = f" (CI {g.ci_pct[0]:+.1f} … {g.ci_pct[1]:+.1f}%)" if g.ci_pct else ""
        out.append(f"vtui diff: threshold crossed: {safe_field(g.gate.text)}: {delta}{ci}, {g.reason}")
    return out
