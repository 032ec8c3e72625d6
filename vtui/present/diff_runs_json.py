"""``vtui diff --json``'s run-against-run sections (``vtui.analysis.diff``) as the parts of the
``Diff`` Struct: ``steps_by_kind``, ``kernels``, ``parity``, ``runs``, ``like`` and ``gate``."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from vtui.analysis.diff.engine import RunsDiff
from vtui.analysis.diff.gate import GateResult
from vtui.analysis.diff.kernels import KernelRow
from vtui.analysis.diff.noise import Difference, SideFigure
from vtui.present.schema_diff import (
    GateOut,
    KernelOut,
    KernelsOut,
    KindOut,
    OpDeltaOut,
    ParityOut,
    RunKindOut,
    RunOut,
    RunsOut,
    SideSteps,
    TtftOut,
)


def _r(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(float(v), digits)


def _f(v: float, digits: int = 3) -> float:
    return round(float(v), digits)


def _side(f: SideFigure | None) -> SideSteps | None:
    if f is None:
        return None
    return SideSteps(n=f.n, runs=f.runs, median_ns=_f(f.median_ns, 1), p90_ns=_f(f.p90_ns, 1),
                     spread_ns=_f(f.spread_ns, 1), run_medians_ns=[_f(v, 1) for v in f.run_medians],
                     run_spread_pct=_r(f.run_spread_pct))


def _diff(d: Difference) -> dict[str, Any]:
    return {"delta_pct": _r(d.delta_pct), "ci_pct": None if d.ci_pct is None else [_r(d.ci_pct[0]), _r(d.ci_pct[1])],
            "significant": d.significant}


def _kernel(r: KernelRow) -> KernelOut:
    return KernelOut(kind=r.kind, name=r.name, b_name=r.b_name or None, match=r.match or None, op=r.op, count=r.count,
                     a_ns=r.a_ns, b_ns=r.b_ns, delta_ns=r.delta_ns, per_step_ns=_f(r.per_step_ns, 1))


def steps_by_kind(d: RunsDiff) -> list[KindOut]:
    return [KindOut(kind=k.kind, a=_side(k.a), b=_side(k.b), **_diff(k.diff), matched=k.matched,
                    unmatched_a=k.unmatched_a, unmatched_b=k.unmatched_b, batch_differs=k.batch_differs)
            for k in d.kinds]


def kernels(d: RunsDiff) -> KernelsOut:
    k = d.kernels
    return KernelsOut(added=[_kernel(r) for r in k.added], removed=[_kernel(r) for r in k.removed],
                      changed=[_kernel(r) for r in k.changed],
                      by_op=[OpDeltaOut(kind=o.kind, op=o.op, delta_ns=o.delta_ns, per_step_ns=_f(o.per_step_ns, 1))
                             for o in k.by_op],
                      step_pairs=dict(k.step_pairs), unaligned=dict(k.unaligned),
                      confidence={kind: _f(v, 4) for kind, v in k.confidence.items()})


def runs(d: RunsDiff) -> RunsOut:
    def one(side) -> list[RunOut]:
        out = []
        for r in side:
            kinds = {}
            for kind in sorted(set(r.kinds)):
                dur = r.durations[r.of_kind(kind)]
                kinds[kind] = RunKindOut(n=len(dur), median_ns=_f(float(np.median(dur)), 1))
            out.append(RunOut(trace=r.label, step_pattern=r.pattern or None, steps=len(r.kinds), kinds=kinds,
                              ttft_ns=r.ttft_ns))
        return out

    return RunsOut(a=one(d.a_steps), b=one(d.b_steps),
                   ttft=TtftOut(a=_side(d.ttft_a), b=_side(d.ttft_b), **_diff(d.ttft)))


def parity(d: RunsDiff) -> list[ParityOut]:
    return [ParityOut(what=p.what, a=p.a, b=p.b) for p in d.parity]


def gate(results: list[GateResult]) -> list[GateOut]:
    return [GateOut(spec=g.gate.text, figure=g.gate.figure, stat=g.gate.stat or None,
                    threshold_pct=float(g.gate.threshold_pct), delta_pct=_r(g.delta_pct),
                    ci_pct=None if g.ci_pct is None else [_f(g.ci_pct[0]), _f(g.ci_pct[1])],
                    breached=g.breached, reason=g.reason) for g in results]


def runs_parts(d: RunsDiff, results: list[GateResult] | None = None) -> dict[str, Any]:
    """The ``Diff`` fields of the run-against-run diff, each its schema's Struct or value."""
    out: dict[str, Any] = {"like": d.like, "parity": parity(d), "steps_by_kind": steps_by_kind(d),
                           "kernels": kernels(d), "runs": runs(d)}
    if results:
        out["gate"] = gate(results)
    return out


def runs_dict(d: RunsDiff, results: list[GateResult] | None = None) -> dict[str, Any]:
    """The same as plain data."""
    return msgspec.to_builtins(runs_parts(d, results))
