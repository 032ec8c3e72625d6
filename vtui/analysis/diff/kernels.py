"""Kernel sequences aligned inside matched steps: what B added, removed and changed, summed by
kernel and by the operator that launched it.

Each step's device work is the work launched from inside it (``vtui.analysis.base.launched``), in
GPU start order. Two aligned steps' sequences are aligned on their kernels' exact keys
(``names.exact_key``: a longest-common-subsequence alignment, difflib's, with the common head and
tail taken off first); what is left unaligned is aligned again on base keys (template arguments
off: a renamed instantiation), and what is still left is paired in order within a family (a GEMM
from another library: ``Cijk_*`` ≈ ``sm90_xmma_gemm_*``). The rest is removed (A only) or added
(B only). The cost is bounded: a middle whose len(A) × len(B) exceeds ``MAX_CELLS`` is cut into
blocks at a repeating kernel (one each layer runs) and aligned block by block; where that finds no
such kernel or a block is still too long, the step pair is not aligned and is counted. Step pairs
of equal sequences (most) are paired in numpy; the alignment of two differing sequences is computed
once per distinct pair of sequences.

A kernel's operator is the innermost CPU operator around the call that launched it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

import numpy as np

from vtui.analysis.base.launched import launch_of, launched_spans
from vtui.analysis.base.stats import dense_unique
from vtui.analysis.diff.names import base_key, exact_key, family
from vtui.store.devices import op_mask
from vtui.store.store import TraceStore

MAX_CELLS = 4_000_000  # len(A middle) × len(B middle) above which a step pair is not aligned
MIN_CHANGE = 0.01  # a kernel's Δ under 1 % of its time in A is not listed as changed
EXACT, BASE, FAMILY = 0, 1, 2  # how a matched pair was matched
NO_OP = "(no operator)"


class Vocab:
    """Strings of both sides as small ints (one table for A and B, so ids compare across them)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str] = []

    def id(self, text: str) -> int:
        got = self.ids.get(text)
        if got is None:
            got = self.ids[text] = len(self.names)
            self.names.append(text)
        return got


@dataclass
class StepKernels:
    """One run's device work per step: position k's kernels are ``[bounds[k], bounds[k+1])``."""

    bounds: np.ndarray
    name: np.ndarray  # vocab id of the raw name
    exact: np.ndarray  # vocab id of the exact key
    base: np.ndarray  # vocab id of the base key
    fam: np.ndarray  # vocab id of the family ("" where none)
    op: np.ndarray  # vocab id of the launching operator
    dur: np.ndarray  # ns
    start: np.ndarray  # ns, on the trace's clock

    def step(self, k: int) -> slice:
        return slice(int(self.bounds[k]), int(self.bounds[k + 1]))


def _launch_ops(store: TraceStore, calls: np.ndarray) -> np.ndarray:
    """Per launch call: the innermost CPU operator holding it (-1 where none or no call)."""
    s = store.slices
    is_op = op_mask(store)
    parent = np.asarray(s.parent)
    out = np.full(len(calls), -1, dtype=np.int64)
    cur = np.where(calls >= 0, parent[np.maximum(calls, 0)], -1).astype(np.int64)
    for _ in range(512):  # the call stack's depth
        live = cur >= 0
        if not live.any():
            break
        hit = live & is_op[np.maximum(cur, 0)]
        out[hit] = cur[hit]
        cur = np.where(live & ~hit, parent[np.maximum(cur, 0)], -1)
    return out


def _by_name_id(store: TraceStore, name_ids: np.ndarray, fns: list[Callable[[str], int]]) -> list[np.ndarray]:
    """Per function of ``fns``, per entry of ``name_ids``: ``fn(the name)``, called once per
    distinct name (a lookup table over the string table, filled where used), the functions in turn."""
    used = np.flatnonzero(np.bincount(name_ids, minlength=len(store.strings)) > 0) if len(name_ids) else name_ids
    texts = [store.strings[n] for n in used.tolist()]
    out = []
    for fn in fns:
        table = np.full(len(store.strings), -1, dtype=np.int64)
        table[used] = [fn(t) for t in texts]
        out.append(table[name_ids])
    return out


def step_kernels(store: TraceStore, rows: np.ndarray, vocab: Vocab) -> StepKernels:
    """The device work launched from inside each of ``rows`` (steps), in GPU start order."""
    s = store.slices
    gpu, own, start, end = launched_spans(store, rows)
    in_order = bool((own[1:] >= own[:-1]).all()) and bool(((start[1:] >= start[:-1]) | (own[1:] != own[:-1])).all())
    if not in_order:  # usually they are: launched in order, run in order
        order = np.lexsort((start, own))
        gpu, own, start, end = gpu[order], own[order], start[order], end[order]
    bounds = np.searchsorted(own, np.arange(len(rows) + 1))
    ops = _launch_ops(store, launch_of(store)[gpu])
    name_ids = s.name_id[gpu].astype(np.int64)
    op_names = np.full(len(ops), vocab.id(NO_OP), dtype=np.int64)
    has = ops >= 0
    if has.any():
        op_names[has] = _by_name_id(store, s.name_id[ops[has]].astype(np.int64), [vocab.id])[0]
    name, exact, base, fam = _by_name_id(store, name_ids, [vocab.id, lambda n: vocab.id(exact_key(n)),
                                                           lambda n: vocab.id(base_key(n)), lambda n: vocab.id(family(n))])
    return StepKernels(bounds, name, exact, base, fam, op_names, (end - start).astype(np.int64), start.astype(np.int64))


@dataclass
class Alignment:
    """Positions (within the two steps) of matched, removed and added kernels."""

    a: np.ndarray
    b: np.ndarray
    level: np.ndarray  # EXACT, BASE or FAMILY per matched pair
    removed: np.ndarray
    added: np.ndarray


def _blocks(x: list[int], y: list[int]) -> Sequence[tuple[str, int, int, int, int]]:
    return SequenceMatcher(None, x, y, autojunk=False).get_opcodes()


def _align_middle(ea: np.ndarray, eb: np.ndarray, ba: np.ndarray, bb: np.ndarray, fa: np.ndarray, fb: np.ndarray,
                  empty_family: int) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    ma: list[int] = []
    mb: list[int] = []
    lv: list[int] = []
    rem: list[int] = []
    add: list[int] = []
    for tag, i1, i2, j1, j2 in _blocks(ea.tolist(), eb.tolist()):
        if tag == "equal":
            ma += range(i1, i2)
            mb += range(j1, j2)
            lv += [EXACT] * (i2 - i1)
            continue
        for tag2, k1, k2, l1, l2 in _blocks(ba[i1:i2].tolist(), bb[j1:j2].tolist()):
            if tag2 == "equal":
                ma += range(i1 + k1, i1 + k2)
                mb += range(j1 + l1, j1 + l2)
                lv += [BASE] * (k2 - k1)
                continue
            # what is left: in order, a kernel of A with the next of B of its family
            left_b = list(range(j1 + l1, j1 + l2))
            nxt = 0
            for i in range(i1 + k1, i1 + k2):
                f = int(fa[i])
                hit = next((p for p in range(nxt, len(left_b)) if f != empty_family and int(fb[left_b[p]]) == f), None)
                if hit is None:
                    rem.append(i)
                    continue
                add += left_b[nxt:hit]
                ma.append(i)
                mb.append(left_b[hit])
                lv.append(FAMILY)
                nxt = hit + 1
            add += left_b[nxt:]
    return ma, mb, lv, rem, add


def _common(x: np.ndarray, y: np.ndarray) -> int:
    """How many leading entries ``x`` and ``y`` (of one length) share."""
    differ = np.flatnonzero(x != y)
    return int(differ[0]) if len(differ) else len(x)


def _align_blocks(ea: np.ndarray, eb: np.ndarray, ba: np.ndarray, bb: np.ndarray, fa: np.ndarray, fb: np.ndarray,
                  empty_family: int) -> tuple[list[int], list[int], list[int], list[int], list[int]] | None:
    """A middle too long to align whole, cut into blocks at a repeating kernel (a decoder layer's):
    the kernel both sides run the same number of times (2 or more; the most often of those), each
    run of it starting a block; the k-th block of A aligned with the k-th of B. None when there is
    no such kernel or a block is still too long."""
    ka, ca = np.unique(ea, return_counts=True)
    kb, cb = np.unique(eb, return_counts=True)
    both, ia, ib = np.intersect1d(ka, kb, return_indices=True)
    same = (ca[ia] == cb[ib]) & (ca[ia] >= 2)
    if not same.any():
        return None
    anchor = int(both[same][np.argmax(ca[ia][same])])
    cuts_a = np.r_[0, np.flatnonzero(ea == anchor), len(ea)]
    cuts_b = np.r_[0, np.flatnonzero(eb == anchor), len(eb)]
    out: tuple[list[int], ...] = ([], [], [], [], [])
    for (a0, a1), (b0, b1) in zip(zip(cuts_a[:-1].tolist(), cuts_a[1:].tolist()),
                                  zip(cuts_b[:-1].tolist(), cuts_b[1:].tolist())):
        if (a1 - a0) * (b1 - b0) > MAX_CELLS:
            return None
        ma, mb, lv, rem, add = _align_middle(ea[a0:a1], eb[b0:b1], ba[a0:a1], bb[b0:b1], fa[a0:a1], fb[b0:b1],
                                             empty_family)
        out[0].extend(i + a0 for i in ma)
        out[1].extend(j + b0 for j in mb)
        out[2].extend(lv)
        out[3].extend(i + a0 for i in rem)
        out[4].extend(j + b0 for j in add)
    return out[0], out[1], out[2], out[3], out[4]


def align(a: StepKernels, ka: int, b: StepKernels, kb: int, empty_family: int,
          cache: dict[bytes, Alignment | None]) -> Alignment | None:
    """The alignment of step ``ka`` of ``a`` with step ``kb`` of ``b``; None when too costly."""
    sa, sb = a.step(ka), b.step(kb)
    ea, eb = a.exact[sa], b.exact[sb]
    na, nb = len(ea), len(eb)
    if na == nb and bool((ea == eb).all()):
        idx = np.arange(na)
        z = np.zeros(0, dtype=np.int64)
        return Alignment(idx, idx, np.zeros(na, dtype=np.int64), z, z)
    key = ea.tobytes() + b"|" + eb.tobytes()
    if key in cache:
        return cache[key]
    n = min(na, nb)
    head = _common(ea[:n], eb[:n])
    tail = _common(ea[head:][::-1][:n - head], eb[head:][::-1][:n - head])
    mid_a, mid_b = slice(head, na - tail), slice(head, nb - tail)
    parts = (ea[mid_a], eb[mid_b], a.base[sa][mid_a], b.base[sb][mid_b], a.fam[sa][mid_a], b.fam[sb][mid_b])
    if (na - tail - head) * (nb - tail - head) <= MAX_CELLS:
        got: tuple[list[int], ...] | None = _align_middle(*parts, empty_family)
    else:
        got = _align_blocks(*parts, empty_family)
    if got is None:
        cache[key] = None
        return None
    ma, mb, lv, rem, add = got
    head_idx, tail_a, tail_b = np.arange(head), np.arange(na - tail, na), np.arange(nb - tail, nb)
    out = Alignment(
        np.concatenate([head_idx, np.asarray(ma, dtype=np.int64) + head, tail_a]),
        np.concatenate([head_idx, np.asarray(mb, dtype=np.int64) + head, tail_b]),
        np.concatenate([np.zeros(head, dtype=np.int64), np.asarray(lv, dtype=np.int64), np.zeros(tail, dtype=np.int64)]),
        np.asarray(rem, dtype=np.int64) + head, np.asarray(add, dtype=np.int64) + head)
    cache[key] = out
    return out


@dataclass
class KernelRow:
    kind: str
    name: str  # A's name (added: B's)
    op: str
    count: int  # kernels over all aligned step pairs
    a_ns: int  # total over the aligned step pairs (0 for added)
    b_ns: int  # (0 for removed)
    per_step_ns: float  # (b − a) ÷ aligned step pairs
    b_name: str = ""  # changed: B's name when it differs (renamed / another kernel of the family)
    match: str = ""  # changed: "exact", "base" (template arguments differ) or "family"

    @property
    def delta_ns(self) -> int:
        return self.b_ns - self.a_ns


@dataclass
class OpRow:
    kind: str
    op: str
    delta_ns: int  # matched Δ + added − removed, over the aligned step pairs
    per_step_ns: float


@dataclass
class KernelDiff:
    added: list[KernelRow] = field(default_factory=list)
    removed: list[KernelRow] = field(default_factory=list)
    changed: list[KernelRow] = field(default_factory=list)
    by_op: list[OpRow] = field(default_factory=list)
    step_pairs: dict[str, int] = field(default_factory=dict)  # per kind: step pairs aligned
    unaligned: dict[str, int] = field(default_factory=dict)  # per kind: step pairs too costly to align
    confidence: dict[str, float] = field(default_factory=dict)  # per kind: exact matches ÷ kernels of the longer side


LEVEL_NAMES = {EXACT: "exact", BASE: "base", FAMILY: "family"}


@dataclass
class StepPairSet:
    """The aligned steps of one kind in one pair of runs."""

    kind: str
    a: StepKernels
    a_steps: np.ndarray  # step positions in A's run
    b: StepKernels
    b_steps: np.ndarray
    run_pair: int = 0  # which pair of runs (several runs per side)


def _groups(cols: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of the columns ``cols`` (small non-negative ints, one length) in row order,
    one row per line of the result, and each row's group: one int64 key per row where the columns
    fit (a row-wise unique sorts far slower), grouped by counting where the key space is small."""
    if not len(cols[0]):
        return np.zeros((0, len(cols)), dtype=np.int64), np.zeros(0, dtype=np.int64)
    widths = [int(c.max()) + 1 for c in cols]
    if float(np.prod(widths, dtype=np.float64)) < 2**62:
        packed = np.zeros(len(cols[0]), dtype=np.int64)
        for c, w in zip(cols, widths):
            packed = packed * w + c
        uniq, inv = dense_unique(packed, int(np.prod(widths, dtype=np.int64)))
        out = np.empty((len(uniq), len(widths)), dtype=np.int64)
        for col in range(len(widths) - 1, -1, -1):  # unpacked: each column's digit
            uniq, out[:, col] = np.divmod(uniq, widths[col])
        return out, inv
    uniq2, inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    return uniq2, inv.reshape(-1)


def _joined(parts: list[tuple[np.ndarray, ...]], width: int) -> list[np.ndarray]:
    """Column k of every part, end to end, for each k < ``width`` (one part: its own columns)."""
    if not parts:
        return [np.zeros(0, dtype=np.int64) for _ in range(width)]
    if len(parts) == 1:
        return list(parts[0])
    return [np.concatenate([p[k] for p in parts]) for k in range(width)]


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``starts[k] .. starts[k] + lengths[k] - 1`` for every k, concatenated."""
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    before = np.cumsum(lengths) - lengths
    return np.repeat(starts - before, lengths) + np.arange(total, dtype=np.int64)


@dataclass
class _PairSetAlignment:
    """A set of step pairs' alignments, pair after pair: kernel positions within each run."""

    a: np.ndarray  # matched
    b: np.ndarray
    level: np.ndarray
    removed: np.ndarray
    added: np.ndarray
    aligned: int  # step pairs aligned
    unaligned: int  # too costly
    longer: int  # Σ over the aligned pairs of the longer step's kernels


def _align_set(ps: StepPairSet, empty_family: int, cache: dict[bytes, Alignment | None]) -> _PairSetAlignment:
    """Every step pair of ``ps`` aligned (``align``). Pairs of equal sequences (most) are found and
    paired in numpy; ``align`` runs on the others only."""
    a0, a1 = ps.a.bounds[ps.a_steps], ps.a.bounds[ps.a_steps + 1]
    b0, b1 = ps.b.bounds[ps.b_steps], ps.b.bounds[ps.b_steps + 1]
    la, lb = (a1 - a0).astype(np.int64), (b1 - b0).astype(np.int64)
    same = np.flatnonzero(la == lb)
    owner = np.repeat(same, la[same])
    differ = ps.a.exact[_ranges(a0[same], la[same])] != ps.b.exact[_ranges(b0[same], lb[same])]
    equal = np.zeros(len(la), dtype=bool)
    equal[same] = np.bincount(owner[differ], minlength=len(la))[same] == 0
    matched = np.where(equal, la, 0)
    rest: dict[int, Alignment] = {}
    unaligned = np.zeros(len(la), dtype=bool)
    for k in np.flatnonzero(~equal).tolist():
        al = align(ps.a, int(ps.a_steps[k]), ps.b, int(ps.b_steps[k]), empty_family, cache)
        if al is None:
            unaligned[k] = True
        else:
            rest[k] = al
            matched[k] = len(al.a)
    at = np.cumsum(matched) - matched  # where each pair's matches go
    ia = np.empty(int(matched.sum()), dtype=np.int64)
    ib = np.empty_like(ia)
    lv = np.zeros_like(ia)
    put = _ranges(at[equal], la[equal])
    ia[put], ib[put] = _ranges(a0[equal], la[equal]), _ranges(b0[equal], lb[equal])
    removed, added = [], []
    for k, al in rest.items():  # in pair order (dicts keep it)
        lo, hi = int(at[k]), int(at[k] + matched[k])
        ia[lo:hi], ib[lo:hi], lv[lo:hi] = al.a + a0[k], al.b + b0[k], al.level
        removed.append(al.removed + a0[k])
        added.append(al.added + b0[k])
    z = np.zeros(0, dtype=np.int64)
    aligned = ~unaligned
    return _PairSetAlignment(ia, ib, lv, np.concatenate([z, *removed]).astype(np.int64),
                             np.concatenate([z, *added]).astype(np.int64), int(aligned.sum()), int(unaligned.sum()),
                             int(np.maximum(la, lb)[aligned].sum()))


def _real_changes(group: np.ndarray, delta: np.ndarray, run_pair: np.ndarray, count: np.ndarray,
                  a_ns: np.ndarray, b_ns: np.ndarray, tolerance: float) -> np.ndarray:
    """Per group of matched kernels: is its Δ beyond the noise? With 3 or more kernel pairs, the mean
    Δ is over 3 standard errors from 0 (a consistent shift, however small, is real; a jitter is
    not); with fewer, |Σ Δ| is over ``tolerance`` of A. With several pairs of runs, every run pair
    must also move the same way (one odd run is the runs' noise, not the change)."""
    n = len(count)
    mean = np.bincount(group, weights=delta, minlength=n) / np.maximum(count, 1)
    sq = np.bincount(group, weights=delta * delta, minlength=n) / np.maximum(count, 1)
    se = np.sqrt(np.maximum(sq - mean * mean, 0.0) / np.maximum(count - 1, 1))
    real = np.where(count >= 3, np.abs(mean) > 3 * se, np.abs(b_ns - a_ns) > tolerance * a_ns)
    real &= mean != 0
    pairs = int(run_pair.max()) + 1 if len(run_pair) else 1
    if pairs > 1:
        per = np.bincount(group * pairs + run_pair, weights=delta, minlength=n * pairs).reshape(n, pairs)
        seen = np.bincount(group * pairs + run_pair, minlength=n * pairs).reshape(n, pairs) > 0
        same_way = np.where(seen, np.sign(per) == np.sign(mean)[:, None], True).all(axis=1)
        real &= same_way
    return real


def diff_kernels(sets: list[StepPairSet], vocab: Vocab, tolerance: float, noise_ns: int) -> KernelDiff:
    """Every aligned step pair's kernels aligned, then summed per kind by kernel and by operator.
    A matched kernel is listed as changed when renamed, or when its Δ is real (``_real_changes``) and
    at least ``MIN_CHANGE`` of its time in A and ``noise_ns`` per step pair."""
    out = KernelDiff()
    kinds: list[str] = []
    empty = vocab.id("")
    m_cols: list[tuple[np.ndarray, ...]] = []  # kind, a name, b name, op, level, a ns, b ns, run pair
    r_cols: list[tuple[np.ndarray, ...]] = []  # kind, name, op, ns (removed)
    d_cols: list[tuple[np.ndarray, ...]] = []  # kind, name, op, ns (added)
    exact_hits: dict[str, int] = {}
    longer: dict[str, int] = {}
    cache: dict[bytes, Alignment | None] = {}
    for ps in sets:
        if ps.kind not in kinds:
            kinds.append(ps.kind)
        kid = kinds.index(ps.kind)
        got = _align_set(ps, empty, cache)
        if got.unaligned:
            out.unaligned[ps.kind] = out.unaligned.get(ps.kind, 0) + got.unaligned
        if not got.aligned:
            continue
        out.step_pairs[ps.kind] = out.step_pairs.get(ps.kind, 0) + got.aligned
        longer[ps.kind] = longer.get(ps.kind, 0) + got.longer
        ia, ib, lv, ir, id_ = got.a, got.b, got.level, got.removed, got.added
        exact_hits[ps.kind] = exact_hits.get(ps.kind, 0) + int((lv == EXACT).sum())
        a_op = ps.a.op[ia]
        m_cols.append((np.full(len(ia), kid), ps.a.name[ia], ps.b.name[ib], np.where(a_op != vocab.id(NO_OP), a_op, ps.b.op[ib]),
                       lv, ps.a.dur[ia], ps.b.dur[ib], np.full(len(ia), ps.run_pair)))
        r_cols.append((np.full(len(ir), kid), ps.a.name[ir], ps.a.op[ir], ps.a.dur[ir]))
        d_cols.append((np.full(len(id_), kid), ps.b.name[id_], ps.b.op[id_], ps.b.dur[id_]))
    for kind in kinds:
        if longer.get(kind):
            out.confidence[kind] = exact_hits.get(kind, 0) / longer[kind]
    names = vocab.names
    per_op: dict[tuple[int, int], int] = {}

    def steps_of(kid: int) -> int:
        return max(1, out.step_pairs.get(kinds[kid], 0))

    m = _joined(m_cols, 8)
    keys, inv = _groups(m[:4])
    if len(keys):
        a_ns = np.bincount(inv, weights=m[5], minlength=len(keys))
        b_ns = np.bincount(inv, weights=m[6], minlength=len(keys))
        count = np.bincount(inv, minlength=len(keys))
        level = np.zeros(len(keys), dtype=np.int64)  # per group, the loosest match in it
        for lvl in (BASE, FAMILY):
            level[np.bincount(inv, weights=m[4] == lvl, minlength=len(keys)) > 0] = lvl
        real = _real_changes(inv, (m[6] - m[5]).astype(np.float64), m[7], count, a_ns, b_ns, tolerance)
        for g, (kid, an, bn, op) in enumerate(keys.tolist()):
            a, b = int(round(a_ns[g])), int(round(b_ns[g]))
            per_op[(kid, op)] = per_op.get((kid, op), 0) + b - a
            pairs = steps_of(kid)
            if an == bn and not (real[g] and abs(b - a) >= max(MIN_CHANGE * a, noise_ns * pairs)):
                continue
            out.changed.append(KernelRow(kinds[kid], names[an], names[op], int(count[g]), a, b, (b - a) / pairs,
                                         names[bn] if bn != an else "", LEVEL_NAMES[int(level[g])]))
    for cols, target, sign in ((r_cols, out.removed, -1), (d_cols, out.added, 1)):
        c = _joined(cols, 4)
        keys, inv = _groups(c[:3])
        if not len(keys):
            continue
        total = np.bincount(inv, weights=c[3], minlength=len(keys))
        count = np.bincount(inv, minlength=len(keys))
        for g, (kid, name, op) in enumerate(keys.tolist()):
            ns = int(round(total[g]))
            per_op[(kid, op)] = per_op.get((kid, op), 0) + sign * ns
            pairs = steps_of(kid)
            target.append(KernelRow(kinds[kid], names[name], names[op], int(count[g]),
                                    ns if sign < 0 else 0, ns if sign > 0 else 0, sign * ns / pairs))
    for rows in (out.added, out.removed, out.changed):
        rows.sort(key=lambda r: (-abs(r.per_step_ns), r.kind, r.name))
    out.by_op = sorted((OpRow(kinds[kid], names[op], d, d / steps_of(kid)) for (kid, op), d in per_op.items() if d),
                       key=lambda r: (-abs(r.per_step_ns), r.kind, r.op))
    return out
