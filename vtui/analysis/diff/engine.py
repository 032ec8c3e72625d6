"""Side A (one or several runs) against side B: steps by kind, kernels inside matched steps, the
parity of the work and each run's own figures. One engine for the CLI, the app, JSON and MCP.

Runs are paired the k-th of A with the k-th of B (the shorter side's runs reused in turn); within
a pair, steps are aligned by kind and order (``steps``), and the kernels of each aligned step pair
(``kernels``). The side figures and their difference come from every run of each side (``noise``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.diff.kernels import KernelDiff, StepKernels, StepPairSet, Vocab, diff_kernels, step_kernels
from vtui.analysis.diff.noise import NOISE_NS, Difference, SideFigure, difference, side_figure
from vtui.analysis.diff.parity import Fingerprint, ParityItem, fingerprint, parity
from vtui.analysis.diff.steps import KindDiff, RunSteps, diff_kinds, kinds_of, matched_pairs, run_pairs, run_steps
from vtui.store.slicetime import TimeRange
from vtui.store.store import TraceStore

TOLERANCE = 0.05  # a kernel seen under 3 times: a Δ within 5 % of its time in A is no change


@dataclass
class Run:
    store: TraceStore
    label: str
    range: TimeRange | None = None


@dataclass
class RunsDiff:
    a_labels: list[str]
    b_labels: list[str]
    a_steps: list[RunSteps]
    b_steps: list[RunSteps]
    kinds: list[KindDiff]
    kernels: KernelDiff
    parity: list[ParityItem]
    fingerprints: tuple[list[Fingerprint], list[Fingerprint]]
    ttft_a: SideFigure | None = None
    ttft_b: SideFigure | None = None
    ttft: Difference = field(default_factory=lambda: Difference(None, None, False))
    tolerance: float = TOLERANCE
    # Per run: its steps' kernels (None where no step of it was aligned), their names' table
    a_kernels: list[StepKernels | None] = field(default_factory=list)
    b_kernels: list[StepKernels | None] = field(default_factory=list)
    vocab: Vocab = field(default_factory=Vocab)

    @property
    def like(self) -> bool:
        """The two sides ran the same work, as far as the traces tell (see ``parity``)."""
        return not self.parity

    def kind(self, kind: str) -> KindDiff | None:
        return next((k for k in self.kinds if k.kind == kind), None)

    def samples(self, kind: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per run of A and of B: the durations of its steps of ``kind``."""
        return ([r.durations[r.of_kind(kind)] for r in self.a_steps],
                [r.durations[r.of_kind(kind)] for r in self.b_steps])


def _ttft(runs: list[RunSteps]) -> list[np.ndarray]:
    return [np.array([r.ttft_ns], dtype=np.float64) for r in runs if r.ttft_ns is not None]


def diff_runs(side_a: list[Run], side_b: list[Run], step_regex: str | None = None,
              tolerance: float = TOLERANCE) -> RunsDiff:
    """Every run of A against every run of B (see the module's docstring)."""
    if not side_a or not side_b:
        raise ValueError("each side needs at least one run")
    a_steps = [run_steps(r.store, r.label, r.range, step_regex) for r in side_a]
    b_steps = [run_steps(r.store, r.label, r.range, step_regex) for r in side_b]
    vocab = Vocab()
    a_k: list[StepKernels | None] = [None] * len(side_a)
    b_k: list[StepKernels | None] = [None] * len(side_b)
    sets = []
    for pair, (i, j) in enumerate(run_pairs(len(side_a), len(side_b))):
        for kind in kinds_of([a_steps[i], b_steps[j]]):
            pa, pb = matched_pairs(a_steps[i], b_steps[j], kind)
            if not len(pa):
                continue
            if a_k[i] is None:
                a_k[i] = step_kernels(side_a[i].store, a_steps[i].rows, vocab)
            if b_k[j] is None:
                b_k[j] = step_kernels(side_b[j].store, b_steps[j].rows, vocab)
            ka, kb = a_k[i], b_k[j]
            assert ka is not None and kb is not None
            sets.append(StepPairSet(kind, ka, pa, kb, pb, pair))
    fa = [fingerprint(r.store, s) for r, s in zip(side_a, a_steps)]
    fb = [fingerprint(r.store, s) for r, s in zip(side_b, b_steps)]
    ta, tb = _ttft(a_steps), _ttft(b_steps)
    return RunsDiff(
        [r.label for r in side_a], [r.label for r in side_b], a_steps, b_steps,
        diff_kinds(a_steps, b_steps), diff_kernels(sets, vocab, tolerance, NOISE_NS), parity(fa[0], fb[0]), (fa, fb),
        side_figure(ta), side_figure(tb), difference(ta, tb), tolerance, a_k, b_k, vocab)
