"""Thresholds for CI: ``decode.median:+5%`` fails when B's decode median is more than 5 % above A's
*and* the difference is beyond the noise (its bootstrap interval excludes 0).

A spec is ``FIGURE:±N%``. Figures: ``KIND.median`` / ``KIND.p90`` for a step kind (prefill,
decode, mixed, ProfilerStep, step), ``tpot`` (= decode.median) and ``ttft``. A positive N fails on
a rise beyond N %, a negative one on a fall beyond |N| % (a figure where higher is better). A figure
with too few samples for an interval (a TTFT of one run per side) fails on the threshold alone,
and says so; a figure a side lacks fails as not measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vtui.analysis.diff.engine import RunsDiff
from vtui.analysis.diff.noise import Difference, difference

_SPEC = re.compile(r"^\s*([A-Za-z][\w]{0,40})(?:\.(median|p90))?\s*:\s*([+-]?)(\d{1,6}(?:\.\d{1,6})?)\s*%\s*$")
ALIASES = {"tpot": ("decode", "median")}


class GateSpecError(ValueError):
    pass


@dataclass(frozen=True)
class Gate:
    text: str
    figure: str  # "ttft" or a step kind
    stat: str  # "median", "p90" ("" for ttft)
    threshold_pct: float  # signed


@dataclass(frozen=True)
class GateResult:
    gate: Gate
    delta_pct: float | None
    ci_pct: tuple[float, float] | None
    breached: bool
    reason: str  # why it breached or not, in words


def parse_gate(text: str) -> Gate:
    m = _SPEC.match(text)
    if not m:
        raise GateSpecError(f"--fail-if {text!r}: expected FIGURE:+N% (e.g. decode.median:+5%, ttft:+10%)")
    name, stat, sign, number = m.groups()
    figure, default = ALIASES.get(name.lower(), (name, "median"))
    if figure.lower() == "ttft":
        if stat:
            raise GateSpecError(f"--fail-if {text!r}: ttft has no .{stat} (one value per run)")
        figure, stat, default = "ttft", "", ""
    threshold = float(number) * (-1 if sign == "-" else 1)
    return Gate(text.strip(), figure, stat or default, threshold)


def _difference(d: RunsDiff, gate: Gate) -> tuple[Difference | None, str]:
    if gate.figure == "ttft":
        if d.ttft_a is None or d.ttft_b is None:
            return None, "no TTFT on " + ("A" if d.ttft_a is None else "B")
        return d.ttft, f"{d.ttft_a.n} vs {d.ttft_b.n} runs"
    kd = d.kind(gate.figure)
    if kd is None or kd.a is None or kd.b is None:
        side = "A" if kd is None or kd.a is None else "B"
        return None, f"no {gate.figure} steps on {side}"
    counts = f"{kd.a.n} vs {kd.b.n} steps"
    if gate.stat == "median":
        return kd.diff, counts
    a_runs, b_runs = d.samples(gate.figure)
    return difference(a_runs, b_runs, q=90), counts


def check(d: RunsDiff, gate: Gate) -> GateResult:
    diff, counts = _difference(d, gate)
    if diff is None or diff.delta_pct is None:
        return GateResult(gate, None, None, True, f"not measured ({counts})")
    t, delta = gate.threshold_pct, diff.delta_pct
    crossed = delta > t if t >= 0 else delta < t
    if not crossed:
        return GateResult(gate, delta, diff.ci_pct, False, f"within the threshold ({counts})")
    if diff.ci_pct is None:
        return GateResult(gate, delta, None, True, f"crossed; too few samples for a noise estimate ({counts})")
    lo, hi = diff.ci_pct
    beyond = lo > 0 if t >= 0 else hi < 0
    if beyond and diff.significant:
        return GateResult(gate, delta, diff.ci_pct, True, f"crossed beyond noise ({counts})")
    return GateResult(gate, delta, diff.ci_pct, False, f"crossed but within noise ({counts})")
