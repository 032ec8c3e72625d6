"""The steps of one run by kind, and the steps of two sides aligned kind by kind.

A step's kind is its serving kind (prefill / decode / mixed: ``vtui.analysis.steps.serving``) where
its name or shapes tell it, else the step pattern's name (``ProfilerStep`` for ProfilerStep#N,
``step`` for the rest). Within a kind, the i-th step of A is aligned with the i-th step of B (the
order the engine ran them), of the same batch size where both record it (``matched_pairs``); what
is left on either side is counted as unmatched. A step's duration runs to the end of the device
work it launched, as the serving report's (``ServingStep.dur_ns``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.diff.noise import Difference, SideFigure, difference, side_figure
from vtui.analysis.steps.detect import find_steps
from vtui.analysis.steps.serving import first_token_index, step_tokens
from vtui.analysis.steps.step_names import UNKNOWN
from vtui.store.slicetime import TimeRange
from vtui.store.store import TraceStore

KIND_ORDER = ("prefill", "decode", "mixed", "ProfilerStep", "step")


@dataclass
class RunSteps:
    """One run's steps in time order."""

    label: str
    pattern: str  # the step pattern found ("" when none)
    kinds: list[str] = field(default_factory=list)
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    durations: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    batch: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # requests (0: not recorded)
    tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # prefill + decode tokens
    ttft_ns: int | None = None

    def of_kind(self, kind: str) -> np.ndarray:
        """Positions (into this run's steps) of the steps of ``kind``, in time order."""
        return np.flatnonzero(np.array(self.kinds, dtype=object) == kind) if self.kinds else np.zeros(0, dtype=np.int64)


def pattern_kind(pattern: str) -> str:
    return "ProfilerStep" if pattern.startswith("ProfilerStep") else "step"


def run_steps(store: TraceStore, label: str, rng: TimeRange | None = None, step_regex: str | None = None) -> RunSteps:
    """The steps of one run with their kinds (see the module's docstring): the steps found and their
    tokens, not the step and serving reports' phases, trends and windows, which a diff never reads."""
    st = find_steps(store, rng, step_regex)
    if not st.present or not st.count:
        return RunSteps(label, "")
    tokens, _ = step_tokens(store, st)
    raw = np.array([t.kind for t in tokens])
    fallback = pattern_kind(st.pattern)
    first = first_token_index(raw, st.run_start)
    return RunSteps(
        label, st.pattern, [k if k != UNKNOWN else fallback for k in raw.tolist()],
        st.rows.astype(np.int64), st.starts.astype(np.int64), (st.ends - st.starts).astype(np.int64),
        np.array([t.prefill_requests + t.decode_requests for t in tokens], dtype=np.int64),
        np.array([t.prefill_tokens + t.decode_tokens for t in tokens], dtype=np.int64),
        None if first is None else int(st.ends[first] - st.starts[0]),
    )


@dataclass
class KindDiff:
    kind: str
    a: SideFigure | None
    b: SideFigure | None
    diff: Difference
    matched: int  # step pairs (summed over the run pairs)
    unmatched_a: int  # steps of this kind A has beyond B (summed over the run pairs)
    unmatched_b: int
    batch_differs: int = 0  # matched pairs whose recorded batch (requests) differs


def kinds_of(runs: list[RunSteps]) -> list[str]:
    seen = {k for r in runs for k in r.kinds}
    return [k for k in KIND_ORDER if k in seen] + sorted(seen - set(KIND_ORDER))


def matched_pairs(a: RunSteps, b: RunSteps, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``a`` and in ``b`` of their aligned steps of ``kind``: the i-th with the i-th;
    where every step of the kind on both sides records its batch (requests) and the sides share a
    batch size, the i-th of each batch size with the i-th of the same size (a decode of 8 requests
    runs other kernels, or another CUDA graph, than one of 16), in A's order."""
    pa, pb = a.of_kind(kind), b.of_kind(kind)
    ba, bb = a.batch[pa], b.batch[pb]
    if len(pa) and len(pb) and bool((ba > 0).all()) and bool((bb > 0).all()) and np.intersect1d(ba, bb).size:
        out_a, out_b = [], []
        for size in np.intersect1d(ba, bb).tolist():
            xa, xb = pa[ba == size], pb[bb == size]
            n = min(len(xa), len(xb))
            out_a.append(xa[:n])
            out_b.append(xb[:n])
        qa, qb = np.concatenate(out_a), np.concatenate(out_b)
        order = np.argsort(qa, kind="stable")
        return qa[order], qb[order]
    n = min(len(pa), len(pb))
    return pa[:n], pb[:n]


def run_pairs(n_a: int, n_b: int) -> list[tuple[int, int]]:
    """Which run of A is aligned with which run of B: the k-th with the k-th, the shorter side's
    runs reused in turn (every run of both sides takes part)."""
    return [(k % n_a, k % n_b) for k in range(max(n_a, n_b))] if n_a and n_b else []


def diff_kinds(side_a: list[RunSteps], side_b: list[RunSteps]) -> list[KindDiff]:
    """Per step kind of either side: the side figures, B against A, and the step counts aligned."""
    out = []
    for kind in kinds_of(side_a + side_b):
        a_runs = [r.durations[r.of_kind(kind)] for r in side_a]
        b_runs = [r.durations[r.of_kind(kind)] for r in side_b]
        matched = un_a = un_b = batch = 0
        for i, j in run_pairs(len(side_a), len(side_b)):
            pa, pb = matched_pairs(side_a[i], side_b[j], kind)
            matched += len(pa)
            un_a += len(side_a[i].of_kind(kind)) - len(pa)
            un_b += len(side_b[j].of_kind(kind)) - len(pb)
            ba, bb = side_a[i].batch[pa], side_b[j].batch[pb]
            batch += int(((ba > 0) & (bb > 0) & (ba != bb)).sum())
        out.append(KindDiff(kind, side_figure(a_runs), side_figure(b_runs), difference(a_runs, b_runs),
                            matched, un_a, un_b, batch))
    return out
