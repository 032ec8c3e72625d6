"""One aligned step pair as the step-by-step view draws it: both steps' kernels on a clock relative
to each step's start, each marked matched, changed, added or removed, and the pairs of a kind
ordered by how much they differ (the order ``n`` / ``N`` walk)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.diff.engine import RunsDiff
from vtui.analysis.diff.kernels import EXACT, align
from vtui.analysis.diff.steps import matched_pairs

MATCHED, CHANGED, ADDED, REMOVED = "matched", "changed", "added", "removed"
SAME_NS = 1_000  # a matched kernel within 1 µs and 5 % of A is drawn as matched, else changed
SAME_SHARE = 0.05


@dataclass(frozen=True)
class Mark:
    start_ns: int  # from the step's start
    dur_ns: int
    name: str
    status: str
    colour: int  # the same number for a kernel and its match (its exact key's id)
    delta_ns: int = 0  # changed: B − A


@dataclass
class PairView:
    kind: str
    rank: int  # position among the kind's pairs in the walk order (0: the biggest difference)
    pairs: int  # pairs of this kind
    a_step: int  # step positions in each run
    b_step: int
    a_ns: int
    b_ns: int
    a: list[Mark] = field(default_factory=list)
    b: list[Mark] = field(default_factory=list)
    aligned: bool = True  # False: too costly to align (the marks are drawn unmatched)

    @property
    def span_ns(self) -> int:
        """The shared clock's length: the longer of the steps and of their kernels' ends."""
        ends = [m.start_ns + m.dur_ns for m in (*self.a, *self.b)]
        return max([self.a_ns, self.b_ns, 1, *ends])


def walk_order(d: RunsDiff, kind: str) -> list[tuple[int, int]]:
    """The aligned step pairs of ``kind`` in the first runs, biggest |Δ duration| first (ties: in
    time order)."""
    a, b = d.a_steps[0], d.b_steps[0]
    pa, pb = matched_pairs(a, b, kind)
    delta = np.abs(b.durations[pb] - a.durations[pa])
    order = np.lexsort((np.arange(len(pa)), -delta))
    return [(int(pa[k]), int(pb[k])) for k in order.tolist()]


def pair_view(d: RunsDiff, kind: str, rank: int) -> PairView | None:
    """The ``rank``-th pair of ``kind`` in the walk order, drawn; None when there is none."""
    order = walk_order(d, kind)
    if not order or not d.a_kernels or not d.b_kernels:
        return None
    rank %= len(order)
    ka, kb = order[rank]
    a, b = d.a_steps[0], d.b_steps[0]
    view = PairView(kind, rank, len(order), ka, kb, int(a.durations[ka]), int(b.durations[kb]))
    sa_k, sb_k = d.a_kernels[0], d.b_kernels[0]
    if sa_k is None or sb_k is None:
        return view
    names = d.vocab.names
    sa, sb = sa_k.step(ka), sb_k.step(kb)
    a_rows, b_rows = np.arange(sa.start, sa.stop), np.arange(sb.start, sb.stop)
    a_start = _starts(d, "a", a_rows, int(a.starts[ka]))
    b_start = _starts(d, "b", b_rows, int(b.starts[kb]))
    al = align(sa_k, ka, sb_k, kb, d.vocab.id(""), {})
    a_status = [REMOVED] * len(a_rows)
    b_status = [ADDED] * len(b_rows)
    colour_a = sa_k.exact[sa].tolist()
    colour_b = [-1] * len(b_rows)
    delta_a = [0] * len(a_rows)
    if al is None:
        view.aligned = False
    else:
        for i, j, level in zip(al.a.tolist(), al.b.tolist(), al.level.tolist()):
            da, db = int(sa_k.dur[sa.start + i]), int(sb_k.dur[sb.start + j])
            same = level == EXACT and abs(db - da) <= max(SAME_NS, SAME_SHARE * da)
            a_status[i] = b_status[j] = MATCHED if same else CHANGED
            colour_b[j] = colour_a[i]
            delta_a[i] = db - da
    for k, r in enumerate(a_rows.tolist()):
        view.a.append(Mark(a_start[k], int(sa_k.dur[r]), names[int(sa_k.name[r])], a_status[k], colour_a[k], delta_a[k]))
    for k, r in enumerate(b_rows.tolist()):
        view.b.append(Mark(b_start[k], int(sb_k.dur[r]), names[int(sb_k.name[r])], b_status[k],
                           colour_b[k] if colour_b[k] >= 0 else int(sb_k.exact[r])))
    return view


def _starts(d: RunsDiff, side: str, rows: np.ndarray, step_start: int) -> list[int]:
    k = d.a_kernels[0] if side == "a" else d.b_kernels[0]
    assert k is not None
    return (k.start[rows] - step_start).tolist()
