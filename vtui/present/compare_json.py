"""``vtui diff --json``: a comparison of two traces (`vtui.analysis.report.compare`) as the parts of
the ``Diff`` Struct (sides, metrics, operators, steps)."""

from __future__ import annotations

from typing import Any

import msgspec

from vtui.analysis.report.compare import NOISE_NS, Comparison, Side
from vtui.present.schema_diff import DiffSide, MetricOut, OpDiffOut, StepPairOut


def _num(v: float | None) -> float | int | None:
    if v is None:
        return None
    return int(v) if float(v).is_integer() else round(float(v), 3)


def _pct(v: float | None) -> float | None:
    return None if v is None else float(round(v, 3))


def _side(s: Side) -> DiffSide:
    return DiffSide(trace=s.label, t0_ns=s.t0, t1_ns=s.t1, step_pattern=s.step_pattern, steps=s.step_count,
                    first_step_ns=s.first_step_ns)


def comparison_parts(c: Comparison) -> dict[str, Any]:
    """The ``Diff`` fields of the comparison, each its schema's Struct or value."""
    return {
        "a": _side(c.a), "b": _side(c.b),
        "tolerance_pct": float(round(100 * c.tolerance, 3)), "noise_ns": NOISE_NS,
        "metrics": [MetricOut(name=m.name, label=m.label, unit=m.unit, a=_num(m.a), b=_num(m.b), delta=_num(m.delta),
                              pct=_pct(m.pct), better=m.better) for m in c.metrics],
        "ops": [OpDiffOut(name=o.name, kind=o.kind, a_count=o.a_count, b_count=o.b_count, a_total_ns=o.a_total_ns,
                          b_total_ns=o.b_total_ns, delta_ns=o.delta_ns, pct=_pct(o.pct), a_mean_ns=_num(o.a_mean_ns),
                          b_mean_ns=_num(o.b_mean_ns), status=o.status) for o in c.ops],
        "phases": c.phases,
        "steps": [StepPairOut(index=p.index, a_ns=p.a_ns, b_ns=p.b_ns, delta_ns=p.delta_ns,
                              a_phase_pct={k: float(round(v, 2)) for k, v in p.a_shares.items()},
                              b_phase_pct={k: float(round(v, 2)) for k, v in p.b_shares.items()}) for p in c.steps],
    }


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The same as plain data."""
    return msgspec.to_builtins(comparison_parts(c))
