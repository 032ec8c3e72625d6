"""Many ranks: steps side by side, collectives matched across ranks, the straggler, and the
communication the compute does not hide.

Definitions (the SQL engine, vtui/query/ranks.sql, computes the same):
- A collective is one communication kernel per rank (`vtui.analysis.base.comm`), matched across
  ranks by process group and its order within that group on each rank (``seq``, by kernel start).
  Where the process group is unknown (older traces) the collective's kind stands for it. A match
  holds only when its kernels agree where the traces record it: the same kind, the same size (bytes,
  and elements), the same group size. Otherwise none of its kernels is matched (they are left out of the
  collectives, the straggler and the alignment) and a warning counts and names the rejected
  matches.
- ``latency_ns`` = the shortest rank's kernel time (the transfer once everyone has arrived); a
  rank's wait = its kernel time − latency; ``skew_ns`` = latest arrival (kernel start) − earliest;
  ``last_rank`` = the latest arrival (ties: the lower rank).
- ``algbw_gbps`` = bytes ÷ latency (bytes per ns = GB/s); ``busbw_gbps`` = algbw × 2(n−1)/n for
  all-reduce, × (n−1)/n for all-gather, reduce-scatter and all-to-all (NCCL's convention), with n
  the group size the trace records (``Group size``, the process group's ranks, or the world size
  for the world group); other kinds: algbw. With the group size unknown busbw is null and
  ``busbw_note`` says why: the ranks present in the folder are not the group.
- Straggler: the rank that arrives last most often; ``lost_ns`` = the other ranks' waits in those
  collectives; ``steps_last`` = steps in which it arrived last most often.
- Exposed communication: per rank, the union of its collective kernels minus the union of its
  compute kernels, per GPU.
- Clocks: ``epoch`` keeps each rank's own epoch time (Kineto's ``baseTimeNanoseconds`` applied);
  ``collective`` shifts each rank so the end of the first collective every rank took part in
  lines up with the lowest rank's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import msgspec
import numpy as np

from vtui.analysis.ranks.tables import RankTable

ALIGNS = ("epoch", "collective")
_BUS_FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
               "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n}


class RankRow(msgspec.Struct):
    rank: int
    file: str
    steps: int
    collectives: int
    offset_ns: int  # added to this rank's epoch times by the alignment


class StepRow(msgspec.Struct):
    index: int
    name: str  # the lowest rank's step name
    durations_ns: list[int | None]  # per rank, in `ranks` order (None: the rank has no such step)
    skew_ns: int  # longest − shortest duration
    start_skew_ns: int  # latest − earliest start, on the aligned clocks
    slowest_rank: int
    last_rank: int | None  # the rank that arrived last at most of the step's collectives
    waits_ns: list[int | None]  # per rank: its waits at the step's collectives, summed


class Straggler(msgspec.Struct):
    rank: int
    steps_last: int
    collectives_last: int
    lost_ns: int


class CollectiveRow(msgspec.Struct):
    name: str
    group: str
    seq: int
    ranks: int  # ranks that took part
    group_size: int | None  # None: the trace does not say
    bytes: int | None
    start_ns: int  # earliest arrival, aligned epoch ns
    latency_ns: int
    skew_ns: int
    last_rank: int
    algbw_gbps: float | None
    busbw_gbps: float | None
    waits_ns: list[int | None]  # per rank, in `ranks` order
    busbw_note: str | None = None  # why busbw_gbps is null


class ExposedRow(msgspec.Struct):
    rank: int
    comm_ns: int  # union of the rank's collective kernels
    overlapped_ns: int  # of which compute kernels ran at the same time on the same GPU
    exposed_ns: int
    exposed_pct: float


class Alignment(msgspec.Struct):
    method: str
    reference_rank: int | None
    note: str


class RanksReport(msgspec.Struct):
    ranks: list[RankRow]
    missing_ranks: list[int]
    alignment: Alignment
    steps_aligned_by: str  # "annotation" or "index"
    steps: list[StepRow]
    straggler: Straggler | None
    collectives: list[CollectiveRow]
    exposed: list[ExposedRow]
    warnings: list[str]


@dataclass
class Matched:
    """Collectives as arrays, one entry per (collective, rank): the flat form both the report
    and the app's jump use."""

    coll: np.ndarray  # collective index (into report.collectives)
    rank_pos: np.ndarray  # position in report.ranks
    row: np.ndarray  # the kernel's slice row in its store
    start: np.ndarray  # aligned epoch ns
    end: np.ndarray
    wait: np.ndarray  # the rank's kernel time − the collective's latency


def number_ranks(tables: list[RankTable]) -> list[str]:
    """Give every table a distinct rank: its own where all are known and distinct, else the
    position in the folder (with a warning). Tables come back sorted by rank."""
    numbers = [t.rank for t in tables]
    warnings = []
    if any(n < 0 for n in numbers) or len(set(numbers)) != len(numbers):
        why = "some files name no rank" if any(n < 0 for n in numbers) else "two files name the same rank"
        warnings.append(f"{why}: ranks numbered by file order")
        for i, t in enumerate(tables):
            t.rank = i
    tables.sort(key=lambda t: t.rank)
    return warnings


def _missing(tables: list[RankTable]) -> list[int]:
    have = {t.rank for t in tables}
    sizes = [t.world_size for t in tables if t.world_size]
    top = max(sizes) if sizes else (max(have) + 1 if have else 0)
    return [r for r in range(top) if r not in have] if top <= 1 << 16 else []


def _group_keys(tables: list[RankTable]) -> list[list[str]]:
    return [[g if g else f"?{k}" for g, k in zip(t.coll_group, t.coll_kind)] for t in tables]


def _seq(keys: list[str]) -> np.ndarray:
    """Per collective of one rank (in start order): its order within its group."""
    seen: dict[str, int] = {}
    out = np.empty(len(keys), dtype=np.int64)
    for i, k in enumerate(keys):  # one per collective, not per event
        out[i] = seen.get(k, 0)
        seen[k] = out[i] + 1
    return out


def _offsets(tables: list[RankTable], keys: list[list[str]], seqs: list[np.ndarray], align: str,
             rejected: set[tuple[str, int]]) -> tuple[list[int], Alignment]:
    if align == "epoch" or len(tables) < 2:
        return [0] * len(tables), Alignment("epoch", None, "each rank's own epoch clock (Kineto baseTimeNanoseconds applied)")
    common = None
    for k, s in zip(keys, seqs):
        here = set(zip(k, s.tolist())) - rejected
        common = here if common is None else common & here
    if not common:
        return [0] * len(tables), Alignment("epoch", None, "no collective common to every rank: epoch clocks kept")
    first = min(common, key=lambda ks: (ks[1], ks[0]))
    ends = []
    for t, k, s in zip(tables, keys, seqs):
        i = next(i for i, ks in enumerate(zip(k, s.tolist())) if ks == first)
        ends.append(int(t.coll_end[i]))
    offsets = [ends[0] - e for e in ends]
    return offsets, Alignment("collective", tables[0].rank,
                              f"the end of the first common collective ({first[0]} #{first[1]}) lined up with rank {tables[0].rank}'s")


REJECT_REASONS = ("kinds differ", "sizes differ", "group sizes differ")
NAMED_REJECTS = 5  # rejected matches named in the warning


def rejection_warning(matches: int, rejected: list[tuple[str, int, str, str]]) -> list[str]:
    """The warning for rejected matches, given (group key, seq, reason, detail) sorted by key and
    seq; both engines build it here."""
    if not rejected:
        return []
    counts = {r: n for r in REJECT_REASONS if (n := sum(1 for x in rejected if x[2] == r))}
    why = next(iter(counts)) if len(counts) == 1 else ", ".join(f"{r} ×{n}" for r, n in counts.items())
    named = "; ".join(f"{k} #{s}: {d}" for k, s, _r, d in rejected[:NAMED_REJECTS])
    more = f"; {len(rejected) - NAMED_REJECTS} more" if len(rejected) > NAMED_REJECTS else ""
    return [f"{len(rejected)} of {matches} matches rejected: {why} ({named}{more}); their kernels are left unmatched"]


def _detail(reason: str, kinds: list[str], nbytes: list[int], sizes: list[int], elems: list[int]) -> str:
    if reason == "kinds differ":  # the two ends, as SQL's min/max give them
        return f"{min(kinds)} vs {max(kinds)}"
    if reason == "sizes differ":
        known = [b for b in nbytes if b > 0]
        if len(set(known)) > 1:
            return f"{min(known):,} vs {max(known):,} B"
        counts = [n for n in elems if n > 0]
        return f"{min(counts):,} vs {max(counts):,} elements"
    known = [z for z in sizes if z > 0]
    return f"{min(known)} vs {max(known)} ranks"


def _agreement(tables: list[RankTable], keys: list[list[str]], seqs: list[np.ndarray]
               ) -> tuple[set[tuple[str, int]], list[str]]:
    """The (group key, seq) matches whose kernels disagree, and the warning naming them. One
    dict entry per collective kernel (a few hundred per rank), not per event."""
    members: dict[tuple[str, int], list[tuple[str, int, int, int]]] = {}
    for t, k, s in zip(tables, keys, seqs):
        for i, key in enumerate(zip(k, s.tolist())):
            members.setdefault(key, []).append((t.coll_kind[i], int(t.coll_bytes[i]), int(t.coll_size[i]),
                                                int(t.coll_elems[i])))
    rejected = []
    matches = 0
    for key, m in members.items():
        if len(m) < 2:
            continue
        matches += 1
        kinds, nbytes, sizes, elems = [x[0] for x in m], [x[1] for x in m], [x[2] for x in m], [x[3] for x in m]
        reason = ("kinds differ" if len(set(kinds)) > 1 else
                  "sizes differ" if len({b for b in nbytes if b > 0}) > 1 or len({n for n in elems if n > 0}) > 1 else
                  "group sizes differ" if len({z for z in sizes if z > 0}) > 1 else None)
        if reason:
            rejected.append((key[0], key[1], reason, _detail(reason, kinds, nbytes, sizes, elems)))
    rejected.sort(key=lambda x: (x[0], x[1]))
    return {(k, s) for k, s, _r, _d in rejected}, rejection_warning(matches, rejected)


def busbw_note(nbytes: int, latency: int, group_size: int) -> str | None:
    """Why a collective has no bus bandwidth (None when it has one)."""
    if nbytes <= 0 or latency <= 0:
        return "message size unknown" if nbytes <= 0 else "no transfer time"
    if group_size <= 0:
        return ("group size unknown: the trace records no Group size, process-group ranks or world group "
                "(the ranks in the folder are not the group)")
    return None


def _steps_alignment(tables: list[RankTable]) -> tuple[str, list[str], list[list[int]]]:
    """Step keys and, per rank, the step index at each key (-1 missing). By annotation where
    every rank's step names are distinct and the ranks share them; else by index."""
    names = [t.step_names for t in tables]
    distinct = all(len(set(n)) == len(n) for n in names)
    shared = set(names[0]).intersection(*names[1:]) if names else set()
    if names and distinct and shared and any(names):
        order: dict[str, None] = {}
        for n in names:
            for x in n:
                order.setdefault(x, None)
        keys = sorted(order, key=_natural)
        pos = [{x: i for i, x in enumerate(n)} for n in names]
        return "annotation", keys, [[p.get(k, -1) for p in pos] for k in keys]
    count = max((len(n) for n in names), default=0)
    return "index", [f"step {i}" for i in range(count)], [[i if i < len(n) else -1 for n in names] for i in range(count)]


def _natural(text: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals covering the same time as the input intervals."""
    if not len(start):
        return start.astype(np.int64), end.astype(np.int64)
    order = np.lexsort((end, start))
    s, e = start[order].astype(np.int64), end[order].astype(np.int64)
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    idx = np.flatnonzero(new)
    return s[idx], np.maximum.reduceat(e, idx) if len(idx) else e[:0]


def covered(us: np.ndarray, ue: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Length of the disjoint sorted intervals (us, ue) before each time t."""
    cum = np.concatenate([[0], np.cumsum(ue - us)])
    i = np.searchsorted(us, t, side="right")  # intervals starting at or before t
    prev = np.maximum(i - 1, 0)
    inside = np.where(i > 0, np.minimum(t, ue[prev]) - us[prev], 0) if len(us) else np.zeros(len(t), np.int64)
    return cum[np.maximum(i - 1, 0)] * (i > 0) + np.maximum(inside, 0)


def overlap(as_: np.ndarray, ae: np.ndarray, bs: np.ndarray, be: np.ndarray) -> int:
    """Time in both of two sets of disjoint sorted intervals."""
    if not len(as_) or not len(bs):
        return 0
    return int((covered(bs, be, ae) - covered(bs, be, as_)).sum())


def _exposed(t: RankTable) -> ExposedRow:
    comm = over = 0
    for dev in np.unique(t.coll_device).tolist():
        cs, ce = union(t.coll_start[t.coll_device == dev], t.coll_end[t.coll_device == dev])
        ks, ke = union(t.comp_start[t.comp_device == dev], t.comp_end[t.comp_device == dev])
        comm += int((ce - cs).sum())
        over += overlap(cs, ce, ks, ke)
    exposed = comm - over
    return ExposedRow(t.rank, comm, over, exposed, round(100.0 * exposed / comm, 2) if comm else 0.0)


def analyse_ranks(tables: list[RankTable], align: str = "epoch") -> tuple[RanksReport, Matched]:
    """The report over rank tables (any order; numbered and sorted here)."""
    if align not in ALIGNS:
        raise ValueError(f"align must be one of {', '.join(ALIGNS)}")
    tables = list(tables)
    warnings = number_ranks(tables)
    keys = _group_keys(tables)
    seqs = [_seq(k) for k in keys]
    rejected, rejects_warning = _agreement(tables, keys, seqs)
    warnings += rejects_warning
    offsets, alignment = _offsets(tables, keys, seqs, align, rejected)
    rank_ids = [t.rank for t in tables]
    n_ranks = len(tables)

    # ---- collectives: flat (rank, key, seq) arrays, grouped with numpy --------------------
    key_code: dict[str, int] = {}
    parts = []
    for p, (t, k, s, off) in enumerate(zip(tables, keys, seqs, offsets)):
        codes = np.array([key_code.setdefault(x, len(key_code)) for x in k], dtype=np.int64)
        keep = np.array([(x, q) not in rejected for x, q in zip(k, s.tolist())], dtype=bool)
        local = np.arange(len(k))[keep] if len(k) else np.zeros(0, np.int64)
        parts.append((np.full(len(local), p), codes[local], s[local], t.coll_start[local] + off, t.coll_end[local] + off,
                      local))
    cat = [np.concatenate([x[i] for x in parts]) if parts else np.zeros(0, np.int64) for i in range(6)]
    pos, code, seq, start, end, local = (a.astype(np.int64) for a in cat)
    names_of_code = list(key_code)
    order = np.lexsort((pos, seq, code))
    pos, code, seq, start, end, local = (a[order] for a in (pos, code, seq, start, end, local))
    dur = end - start
    new = np.ones(len(code), dtype=bool)
    new[1:] = (code[1:] != code[:-1]) | (seq[1:] != seq[:-1])
    first = np.flatnonzero(new)
    coll_id = np.cumsum(new) - 1
    latency = np.minimum.reduceat(dur, first) if len(first) else dur[:0]
    earliest = np.minimum.reduceat(start, first) if len(first) else start[:0]
    latest = np.maximum.reduceat(start, first) if len(first) else start[:0]
    members = np.diff(np.append(first, len(code)))
    wait = dur - latency[coll_id]
    # The last arrival: the latest start, ties to the lower rank (rows are in rank order).
    is_latest = start == latest[coll_id]
    cand = np.where(is_latest, np.arange(len(code)), len(code))
    last_at = np.minimum.reduceat(cand, first) if len(first) else cand[:0]
    last_pos = pos[last_at] if len(first) else pos[:0]
    lost = np.bincount(coll_id, weights=wait, minlength=len(first)).astype(np.int64) - wait[last_at]

    collectives: list[CollectiveRow] = []
    for c, at in enumerate(first.tolist()):  # one per collective
        p, li = int(pos[at]), int(local[at])
        t = tables[p]
        kind, group = t.coll_kind[li], t.coll_group[li]
        # The members agree where they know (`_agreement`): the largest is the one known, if any.
        size = max(int(tables[int(pos[j])].coll_size[int(local[j])]) for j in range(at, at + int(members[c])))
        nbytes = max(int(tables[int(pos[j])].coll_bytes[int(local[j])]) for j in range(at, at + int(members[c])))
        lat = int(latency[c])
        bw = nbytes / lat if nbytes > 0 and lat > 0 else None
        note = busbw_note(nbytes, lat, size)
        factor = _BUS_FACTOR.get(kind, lambda n: 1.0)(size) if size > 0 else 1.0
        waits: list[int | None] = [None] * n_ranks
        for j in range(at, at + int(members[c])):
            waits[int(pos[j])] = int(wait[j])
        collectives.append(CollectiveRow(
            name=kind, group=group, seq=int(seq[at]), ranks=int(members[c]), group_size=size if size > 0 else None,
            bytes=nbytes if nbytes > 0 else None, start_ns=int(earliest[c]), latency_ns=lat,
            skew_ns=int(latest[c] - earliest[c]), last_rank=rank_ids[int(last_pos[c])],
            algbw_gbps=None if bw is None else round(bw, 4),
            busbw_gbps=None if bw is None or note else round(bw * factor, 4), waits_ns=waits, busbw_note=note))
    row = np.concatenate([t.coll_row for t in tables]).astype(np.int64) if tables else np.zeros(0, np.int64)
    base = np.cumsum([0] + [len(t.coll_row) for t in tables])
    matched = Matched(coll=coll_id, rank_pos=pos, row=row[base[pos] + local] if len(pos) else pos,
                      start=start, end=end, wait=wait)
    gkeys = [names_of_code[int(code[at])] for at in first.tolist()]
    order_c = sorted(range(len(collectives)), key=lambda i: (collectives[i].start_ns, gkeys[i], collectives[i].seq))
    remap = np.empty(len(collectives), dtype=np.int64)
    remap[order_c] = np.arange(len(collectives))
    collectives = [collectives[i] for i in order_c]
    matched.coll = remap[matched.coll] if len(matched.coll) else matched.coll
    last_of = remap[np.arange(len(first))] if len(first) else np.zeros(0, np.int64)
    last_rank_sorted = np.empty(len(first), dtype=np.int64)
    last_rank_sorted[last_of] = last_pos
    lost_sorted = np.empty(len(first), dtype=np.int64)
    lost_sorted[last_of] = lost

    # ---- steps ------------------------------------------------------------------------------
    by, step_keys, step_pos = _steps_alignment(tables)
    steps: list[StepRow] = []
    step_last: list[int | None] = []
    for i, (key, where) in enumerate(zip(step_keys, step_pos)):
        durs: list[int | None] = [None] * n_ranks
        starts, windows = [], []
        for p, (t, w) in enumerate(zip(tables, where)):
            if w >= 0:
                durs[p] = int(t.step_end[w] - t.step_start[w])
                starts.append(int(t.step_start[w]) + offsets[p])
                windows.append((p, int(t.step_start[w]) + offsets[p], int(t.step_end[w]) + offsets[p]))
        have = [d for d in durs if d is not None]
        slowest = max(range(n_ranks), key=lambda p: (durs[p] if durs[p] is not None else -1, -p))
        # The step's collectives: those the lowest present rank ran inside its step.
        late = None
        step_waits: list[int | None] = [None if d is None else 0 for d in durs]
        if windows and len(matched.coll):
            p0, s0, e0 = windows[0]
            sel = (matched.rank_pos == p0) & (matched.start >= s0) & (matched.start < e0)
            ids = np.unique(matched.coll[sel])
            inside = np.isin(matched.coll, ids)
            per_rank = np.bincount(matched.rank_pos[inside], weights=matched.wait[inside], minlength=n_ranks)
            step_waits = [None if d is None else int(per_rank[p]) for p, d in enumerate(durs)]
            if len(ids):
                counts = np.bincount(last_rank_sorted[ids], minlength=n_ranks)
                lost_by = np.bincount(last_rank_sorted[ids], weights=lost_sorted[ids], minlength=n_ranks)
                late = max(range(n_ranks), key=lambda p: (counts[p], lost_by[p], -p))
        step_last.append(late)
        name = next((tables[p].step_names[w] for p, w in enumerate(where) if w >= 0), key) if by == "index" else key
        steps.append(StepRow(i, name, durs, max(have) - min(have) if have else 0,
                             max(starts) - min(starts) if starts else 0, rank_ids[slowest],
                             None if late is None else rank_ids[late], step_waits))

    straggler = None
    if len(first):
        counts = np.bincount(last_rank_sorted, minlength=n_ranks)
        lost_by = np.bincount(last_rank_sorted, weights=lost_sorted, minlength=n_ranks).astype(np.int64)
        who = max(range(n_ranks), key=lambda p: (counts[p], lost_by[p], -p))
        straggler = Straggler(rank_ids[who], sum(1 for x in step_last if x == who), int(counts[who]), int(lost_by[who]))

    ranks = [RankRow(t.rank, t.file, len(t.step_names), len(t.coll_row), off) for t, off in zip(tables, offsets)]
    exposed = [_exposed(t) for t in tables]
    report = RanksReport(ranks=ranks, missing_ranks=_missing(tables), alignment=alignment, steps_aligned_by=by,
                         steps=steps, straggler=straggler, collectives=collectives, exposed=exposed, warnings=warnings)
    return report, matched
