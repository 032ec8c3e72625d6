"""Find the repeating unit of work (the step) and split each step into its direct child phases.

Detection order: a user regex if given; else well-known step names (PyTorch's ProfilerStep#N,
vLLM's execute_…context…_generation_… and SGLang's step[…] annotations, engine_step /
llm_engine_step, transformers' forward passes under generate()); else a generic guess: a
name that repeats at the top level of a CPU thread and covers much of that thread's time.
When a pattern whose names tell the kind (the engine annotations, then the forward passes) marks
the same iterations as the count winner, one inside or around each of its steps (vLLM's
profiler wrapper opens a ProfilerStep#N per engine step), it is the step.
Steps are taken on one CPU track (the one with the most matches, joined by the other threads of its
process whose matches take turns with its own, never overlapping), outermost matches only, so
annotations mirrored onto GPU streams or nested re-entries are not counted twice.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.base.launched import launched_work, owners
from vtui.analysis.base.stats import Stats, dense_unique, pct
from vtui.analysis.gpu.graphs import CAPTURE_REGION
from vtui.analysis.steps.step_names import ANNOTATION_REGEX, ENGINE_FRAME_REGEX
from vtui.analysis.steps.trends import Trend, analyse_trend
from vtui.regex_guard import compile_user
from vtui.store.devices import (
    device_work_kinds,
    helper_mask,
    name_mask,
    on_thread_track,
    per_slice,
    python_mask,
    string_mask,
    whole_run_mask,
)
from vtui.store.grouping import distinct_ids
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore

ENGINE_ANNOTATION = "engine step annotation"  # vLLM execute_…context…, SGLang step[…] (see step_names)
TRANSFORMERS_FORWARD = "transformers forward"  # generate()'s forward passes: the first is the prefill
ENGINE_FRAME = "engine step frame"  # SGLang's run_batch / vLLM's EngineCore.step frames (with_stack)
KNOWN_STEP_PATTERNS: list[tuple[str, str]] = [
    ("ProfilerStep#N", r"^ProfilerStep#\d+$"),
    # One pattern for every engine form, so two annotations over one step (SGLang writes both) nest
    # and count once.
    (ENGINE_ANNOTATION, ANNOTATION_REGEX),
    ("engine_step", r"(?i)^(llm_?)?engine[._]?step\b|^LLMEngine\.step\b"),
    (ENGINE_FRAME, ENGINE_FRAME_REGEX),
    # The model's top module (with_modules) or its forward frame (with_stack); outermost only.
    (TRANSFORMERS_FORWARD, r"^nn\.Module: \w*(ForCausalLM|ForConditionalGeneration|LMHeadModel)\w*$"
                           r"|^transformers/models/[\w/]+/modeling_\w+\.py\(\d+\): forward$"),
]
# The known patterns that are an inference engine's steps: the first is the prefill (TTFT).
SERVING_STEP_PATTERNS = frozenset({ENGINE_ANNOTATION, ENGINE_FRAME, "engine_step", TRANSFORMERS_FORWARD})
# Patterns whose steps say their kind (prefill / decode), most telling first: when one of them marks
# the same steps as the count winner (one inside each ProfilerStep#N that vLLM's profiler.step() or
# a prof.step() loop opens, or around each), it is the step.
KIND_PATTERNS = (ENGINE_ANNOTATION, ENGINE_FRAME, TRANSFORMERS_FORWARD)
SAME_STEPS_SHARE = 0.9  # of the steps of either pattern that pair one-to-one with the other's
SAME_STEPS_SLACK = 2  # or all but this many: torch's ProfilerStep#0 before the first engine step, one after the last
# LLM evidence for transformers' forward passes: generate() around them, or a language-model head
# class (the module names one); an encoder's or a diffusion transformer's forward is neither.
GENERATE_FRAME = re.compile(r"generation/utils\.py\(\d+\): \w+$|^generate$")
LM_MODULE = re.compile(r"^nn\.Module: \w*(ForCausalLM|ForConditionalGeneration|LMHeadModel)\w*$")
ONE_TOKEN_SHARE = 0.5  # of the passes after the first with recorded ids: one token per sequence (decode)
GENERIC_MIN_COUNT = 3
GENERIC_MIN_COVER = 0.3  # the repeated name covers >= 30% of its track's top-level time


@dataclass
class Phase:
    name: str
    total_ns: int
    count: int
    pct: float  # of the total step time
    first_ns: int  # time in the first step
    rest_mean_ns: float  # mean per step over the other steps


@dataclass
class StepReport:
    present: bool
    pattern: str = ""  # what was matched: a known pattern's label, the user's regex, or "repeated: NAME"
    source: str = ""  # "known", "user", "generic"
    track: int = -1
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    phases: list[Phase] = field(default_factory=list)
    unattributed_ns: int = 0  # step time not in any direct child
    trend: Trend | None = None
    in_trace: int = 0  # steps in the whole trace (the range may hold fewer)
    run_start: bool = True  # the range's first step is the run's first step (a prefill / TTFT)
    # The annotations' own ends; ``ends`` is the later of that and the end of the device work the
    # step launched (in replay traces the CPU runs far ahead of the GPU).
    cpu_ends: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # When steps' direct children are Python frames: the first level below them that is not a frame.
    op_phases: list[Phase] = field(default_factory=list)
    op_unattributed_ns: int = 0
    where: str = ""  # the steps' track ("process › thread") when the store holds several files (ranks)
    # The first step's serving kind when its name or shapes tell it (see vtui.analysis.steps.serving): a
    # decode first step is no time to first token.
    first_kind: str = ""
    processes: int = 1  # processes with steps of this pattern (the steps are one process's)
    process: str = ""  # the steps' process: its name and pid
    # With no steps: what looked like steps and why it is not (capture regions, forwards, helper threads)
    not_steps: str = ""

    @property
    def count(self) -> int:
        return len(self.rows)

    @property
    def durations(self) -> np.ndarray:
        return self.ends - self.starts

    @property
    def cpu_durations(self) -> np.ndarray:
        """Each step's annotation alone (start to the annotation's end)."""
        return (self.cpu_ends if len(self.cpu_ends) == len(self.starts) else self.ends) - self.starts

    @property
    def gpu_outlasts(self) -> np.ndarray:
        """Per step: the device work it launched ends after its annotation."""
        return self.durations > self.cpu_durations

    @property
    def first_ns(self) -> int | None:
        """The range's first step (whatever it is)."""
        return int(self.durations[0]) if self.count else None

    @property
    def ttft_ns(self) -> int | None:
        """The first step as time to first token: only when it is the run's first step, and not a
        step known to be a decode (a trace profiled after the prompt has no TTFT)."""
        if self.first_kind == "decode":
            return None
        return self.first_ns if self.run_start else None

    @property
    def rest(self) -> Stats | None:
        """Per-token latency in a decode loop: the steps after the first when the range starts the
        run (the first is the prefill), else every step in the range."""
        return Stats.of(self.durations[1:] if self.run_start else self.durations)

    @property
    def all(self) -> Stats | None:
        return Stats.of(self.durations)

    @property
    def steps_per_s(self) -> float | None:
        """Decode rate from the mean of the steps after the first (one token per sequence per step)."""
        rest = self.rest
        return 1e9 / rest.mean if rest and rest.mean > 0 else None


def _cpu_candidates(store: TraceStore) -> np.ndarray:
    """Per slice: may be a step (on a CPU thread, not device work, not the profiler's whole-run
    span; async spans overlap freely and belong to no thread, so they are not steps; nothing on a
    runtime / profiler helper thread or an OS call; nothing inside a CUDA-graph capture region, whose
    forward is a dummy run)."""
    return store.memo("step_candidates", lambda: on_thread_track(store) & (device_work_kinds(store) == 0)
                      & ~whole_run_mask(store) & ~helper_mask(store) & ~_in_capture(store))


def _in_capture(store: TraceStore) -> np.ndarray:
    """Per slice: a ``capture_*`` region (vLLM's graph capture) or inside one. Memoised per store."""
    return store.memo("in_capture_region", lambda: _in_capture_now(store))


def _in_capture_now(store: TraceStore) -> np.ndarray:
    cap = name_mask(store, CAPTURE_REGION)
    out = cap.copy()
    if not cap.any():
        return out
    parent = store.slices.parent
    rows = np.flatnonzero(~cap)
    anc = parent[rows].astype(np.int64)
    while len(rows):  # climb every slice one level per pass (depth is small)
        live = anc >= 0
        rows, anc = rows[live], anc[live]
        hit = cap[anc]
        out[rows[hit]] = True
        rows, anc = rows[~hit], parent[anc[~hit]].astype(np.int64)
    return out


def _llm_forwards(store: TraceStore, rows: np.ndarray) -> bool:
    """Whether transformers' forward passes are a language model generating: generate() around
    them or an LM-head module (its class) as or inside them, and, where the token ids' shapes are
    recorded, the passes after the first feed about one token per sequence (decode)."""
    if not len(rows):
        return False
    s = store.slices
    lm = name_mask(store, LM_MODULE)
    evidence = bool(lm[rows].any())
    if not evidence:
        gen = name_mask(store, GENERATE_FRAME)
        anc = s.parent[rows].astype(np.int64)
        while len(anc) and not evidence:
            anc = anc[anc >= 0]
            evidence = bool(gen[anc].any())
            anc = s.parent[anc].astype(np.int64)
    if not evidence and lm.any():
        evidence = bool((owners(store, rows, np.flatnonzero(lm)) >= 0).any())
    if not evidence:
        return False
    per_seq = _tokens_per_sequence(store, rows[1:])
    return not per_seq or sum(1 for p in per_seq if p == 1) > ONE_TOKEN_SHARE * len(per_seq)


def _tokens_per_sequence(store: TraceStore, rows: np.ndarray) -> list[int]:
    """Per pass with a 2-D ``input_ids`` shape recorded on its first aten::embedding: tokens per sequence."""
    emb = store.string_ids("aten::embedding")
    if not emb or not len(rows):
        return []
    s = store.slices
    cand = np.flatnonzero(np.isin(s.name_id, emb))
    cand = cand[np.argsort(s.start_ns[cand], kind="stable")]
    own = owners(store, rows, cand)
    out = []
    seen: set[int] = set()
    for r, o in zip(cand.tolist(), own.tolist()):
        if o < 0 or o in seen:
            continue
        seen.add(o)
        dims = store.slice_args(r).get("Input Dims")
        if isinstance(dims, list) and len(dims) > 1 and isinstance(dims[1], list) and len(dims[1]) > 1 \
                and isinstance(dims[1][-1], int):
            out.append(int(dims[1][-1]))
    return out


def _outermost(store: TraceStore, mask: np.ndarray) -> np.ndarray:
    """Rows of ``mask`` with no ancestor in ``mask``."""
    parent = store.slices.parent
    rows = np.flatnonzero(mask)
    keep = np.ones(len(rows), dtype=bool)
    anc = parent[rows].astype(np.int64)
    while True:  # climb all candidates one level at a time (depth is small)
        live = anc >= 0
        if not live.any():
            break
        hit = np.zeros(len(rows), dtype=bool)
        hit[live] = mask[anc[live]]
        keep &= ~hit
        anc = np.where(live, parent[np.maximum(anc, 0)], -1)
    return rows[keep]


def _best_track(store: TraceStore, rows: np.ndarray) -> np.ndarray:
    """The matches on the one track with most of them (ties: most time), with those of other threads
    of its process that take turns with them: one sequence of steps that a thread pool runs on
    several threads (never overlapping in time), unlike parallel ranks or mirrored copies."""
    if not len(rows):
        return rows
    s = store.slices
    tracks = s.track[rows]
    dur = s.dur_ns[rows]
    uniq, inv, counts = np.unique(tracks, return_inverse=True, return_counts=True)
    time = np.bincount(inv, weights=dur, minlength=len(uniq))
    order = uniq[np.lexsort((-time, -counts))].tolist()  # most matches first, ties: most time
    keep = tracks == order[0]
    process = store.tracks.process_ids()  # one id per (file, pid): no Track made
    pid = process[order[0]]
    kept = rows[keep]
    kept = kept[np.argsort(s.start_ns[kept], kind="stable")]
    ks, ke = s.start_ns[kept].astype(np.int64), s.end_ns[kept].astype(np.int64)
    for t in order[1:]:
        if process[t] != pid:
            continue
        mine = rows[tracks == t]
        mine = mine[np.argsort(s.start_ns[mine], kind="stable")]
        ms, me = s.start_ns[mine].astype(np.int64), s.end_ns[mine].astype(np.int64)
        if not bool((ms[1:] >= me[:-1]).all()):
            continue
        k = np.searchsorted(ks, ms, side="right")  # the kept steps before (k - 1) and after (k) each one
        before_ok = (k == 0) | (ke[np.maximum(k - 1, 0)] <= ms)
        after_ok = (k == len(ks)) | (ks[np.minimum(k, len(ks) - 1)] >= me)
        if bool((before_ok & after_ok).all()):
            keep |= tracks == t
            kept = rows[keep]
            kept = kept[np.argsort(s.start_ns[kept], kind="stable")]
            ks, ke = s.start_ns[kept].astype(np.int64), s.end_ns[kept].astype(np.int64)
    return rows[keep]


def _drop_overlapping(store: TraceStore, rows: np.ndarray) -> np.ndarray:
    """Of annotations that partly overlap (two engines' names over one step, not nested), the first."""
    s = store.slices
    rows = rows[np.argsort(s.start_ns[rows], kind="stable")]
    if len(rows) < 2 or bool((s.start_ns[rows[1:]] >= s.end_ns[rows[:-1]]).all()):
        return rows
    keep, reach = [], -1
    for r in rows.tolist():  # only when some overlap: steps are few
        if int(s.start_ns[r]) >= reach:
            keep.append(r)
            reach = int(s.end_ns[r])
    return np.array(keep, dtype=np.int64)


def _trains(store: TraceStore) -> bool:
    """The trace runs autograd's backward (training, not serving). Memoised per store."""
    hit = store.derived.get("trains")
    if hit is None:
        hit = store.derived["trains"] = any(n.startswith("autograd::engine::evaluate_function: ") for n in store.strings)
    return bool(hit)


def _same_steps(store: TraceStore, rows: np.ndarray, other: np.ndarray) -> bool:
    """Whether two patterns' steps (each in start order) mark the same iterations: nearly every step
    of each lies inside, or around, its own step of the other (one each, not many in one)."""
    s = store.slices
    n = max(len(rows), len(other))
    need = min(SAME_STEPS_SHARE * n, n - SAME_STEPS_SLACK)
    if not len(rows) or not len(other) or min(len(rows), len(other)) < need:
        return False

    def one_each(inner: np.ndarray, outer: np.ndarray) -> int:
        a, b = s.start_ns[outer].astype(np.int64), s.end_ns[outer].astype(np.int64)
        st, en = s.start_ns[inner].astype(np.int64), s.end_ns[inner].astype(np.int64)
        k = np.searchsorted(a, st, side="right") - 1  # the last outer step starting at or before
        ok = k >= 0
        kk = np.maximum(k, 0)
        ok &= (st >= a[kk]) & (en <= b[kk])
        return len(np.unique(kk[ok]))  # distinct outer steps holding one

    return max(one_each(rows, other), one_each(other, rows)) >= max(need, 1)


def _generic(store: TraceStore, allowed: np.ndarray) -> tuple[str, np.ndarray]:
    """A name repeated at the top level of a thread that covers much of its top-level time."""
    s = store.slices
    top = allowed & (s.parent < 0) & ~python_mask(store)
    if not top.any():
        return "", np.zeros(0, dtype=np.int64)
    rows = np.flatnonzero(top)
    keys = s.track[rows].astype(np.int64) * (len(store.strings) + 1) + s.name_id[rows]
    uniq, inverse = dense_unique(keys, len(store.tracks) * (len(store.strings) + 1))
    counts = np.bincount(inverse, minlength=len(uniq))
    totals = np.bincount(inverse, weights=s.dur_ns[rows], minlength=len(uniq))
    track_top = np.bincount(s.track[rows], weights=s.dur_ns[rows], minlength=len(store.tracks))
    best, best_total = -1, 0.0
    for k in np.flatnonzero(counts >= GENERIC_MIN_COUNT).tolist():
        track = int(uniq[k] // (len(store.strings) + 1))
        if totals[k] >= GENERIC_MIN_COVER * track_top[track] and totals[k] > best_total:
            best, best_total = k, float(totals[k])
    if best < 0:
        return "", np.zeros(0, dtype=np.int64)
    chosen = rows[inverse == best]
    return store.name(int(chosen[0])), chosen


def find_step_rows(store: TraceStore, regex: str | None = None) -> tuple[str, str, np.ndarray]:
    """(pattern label, source, rows in start order) over the whole trace; empty rows if none.

    Among the known patterns the one with the most steps wins (a single ProfilerStep around a
    whole generate loses to the engine steps inside it); ties go to the earlier pattern.
    """
    label, source, rows, _ = _find_steps(store, regex)
    return label, source, rows


def _pids(store: TraceStore, rows: np.ndarray) -> int:
    """Distinct processes (file, pid) of the slices ``rows``, from the track columns (no Track made)."""
    return len(set(store.tracks.process_ids()[distinct_ids(store.slices.track[rows])].tolist()))


def _process_of(store: TraceStore, track: int) -> str:
    tr = store.tracks[track]
    return f"{tr.process_name or 'process'} pid {tr.pid}"


def _why_no_steps(store: TraceStore) -> str:
    """What a user might take for steps in a trace with none, and why they are not."""
    if not len(store.slices):
        return ""
    s = store.slices
    known = np.zeros(len(s), dtype=bool)
    for _, pat in KNOWN_STEP_PATTERNS:
        known |= string_mask(store, re.compile(pat).search)[s.name_id]
    known &= on_thread_track(store)
    out = []
    captured = len(_outermost(store, known & _in_capture(store)))
    if captured:
        out.append(f"{captured} forward pass(es) or step annotation(s) lie inside capture_* regions "
                   "(CUDA-graph capture: dummy runs, not steps)")
    forwards = len(_outermost(store, known & ~_in_capture(store)))
    if forwards:
        out.append(f"{forwards} model forward pass(es) without LLM evidence (no generate(), no LM head, or many "
                   "tokens per sequence after the first): forwards, not serving steps")
    if helper_mask(store).any():
        out.append("calls on runtime / profiler helper threads and OS-runtime calls are never steps")
    return "; ".join(out)


def _find_steps(store: TraceStore, regex: str | None = None) -> tuple[str, str, np.ndarray, int]:
    """``find_step_rows`` and how many processes have steps of the pattern chosen (engine processes,
    ranks in one file: the steps come from one of them)."""
    empty = np.zeros(0, dtype=np.int64)
    if not len(store.slices):
        return (regex or "", "user" if regex else "", empty, 0)
    allowed = _cpu_candidates(store)
    candidates = [(regex, "user", regex)] if regex else [(label, "known", pat) for label, pat in KNOWN_STEP_PATTERNS]
    best: tuple[str, str, np.ndarray] | None = None
    found: dict[str, np.ndarray] = {}
    processes: dict[str, int] = {}
    for label, source, pat in candidates:
        if source == "user":  # a user's pattern: the guarded engine (cannot backtrack without end)
            mask = per_slice(store, compile_user(pat).mask(store.strings), store.slices.name_id) & allowed
        else:
            mask = per_slice(store, string_mask(store, re.compile(pat).search), store.slices.name_id) & allowed
        if mask.any():
            outer = _outermost(store, mask)
            processes[label] = _pids(store, outer)
            rows = _best_track(store, outer)
            if label == ENGINE_ANNOTATION:
                rows = _drop_overlapping(store, rows)
            rows = rows[np.argsort(store.slices.start_ns[rows], kind="stable")]
            if label == TRANSFORMERS_FORWARD and not _llm_forwards(store, rows):
                continue  # text encoders, a diffusion transformer: forwards, no prefill or decode
            found[label] = rows
            if best is None or len(rows) > len(best[2]):
                best = (label, source, rows)
    if best is not None:
        for label in KIND_PATTERNS:  # the same steps under a name that tells their kind, most telling first
            if label == best[0]:
                break
            kind_rows = found.get(label)
            if label == TRANSFORMERS_FORWARD and _trains(store):
                continue  # a training step's forward pass is a third of it, and no prefill
            if kind_rows is not None and _same_steps(store, kind_rows, best[2]):
                return label, "known", kind_rows, processes[label]
        return (*best, processes[best[0]])
    if regex:
        return regex, "user", empty, 0
    name, rows = _generic(store, allowed)
    if len(rows):
        return f"repeated: {name}", "generic", rows[np.argsort(store.slices.start_ns[rows], kind="stable")], 1
    return "", "", empty, 0


def _phases(store: TraceStore, rows: np.ndarray, kids: np.ndarray, k_step: np.ndarray) -> tuple[list[Phase], int]:
    """Phases by name from slices ``kids`` lying in step ``k_step``, with their share of step time."""
    s = store.slices
    total_steps = int(s.dur_ns[rows].sum())
    k_dur = np.asarray(s.dur_ns[kids], dtype=np.int64)
    names = np.asarray(s.name_id[kids], dtype=np.int64)
    # Per name id in one pass each (not one pass per name): bincount over the dense ids; float64
    # sums are exact up to 2^53 ns.
    n = len(store.strings)
    counts = np.bincount(names, minlength=n)
    totals = np.rint(np.bincount(names, weights=k_dur, minlength=n)).astype(np.int64)
    in_first = k_step == 0
    firsts = np.rint(np.bincount(names[in_first], weights=k_dur[in_first], minlength=n)).astype(np.int64)
    phases = []
    for nid in np.flatnonzero(counts).tolist():
        k = nid
        total, first = int(totals[k]), int(firsts[k])
        rest_mean = (total - first) / (len(rows) - 1) if len(rows) > 1 else 0.0
        phases.append(Phase(store.strings[nid], total, int(counts[k]), pct(total, total_steps), first, rest_mean))
    phases.sort(key=lambda p: -p.total_ns)
    return phases, total_steps - int(k_dur.sum())


def _children(store: TraceStore, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(children of ``rows``, position in ``rows`` of each child's parent). Memoised per set of rows
    (the steps' phases and the serving figures by kind both need them; a pass over every slice).
    One slot: the last set asked for, so ranges chosen in the app do not pile up."""
    key = hashlib.blake2b(np.ascontiguousarray(rows, dtype=np.int64).tobytes(), digest_size=16).digest()
    last = store.derived.get("step_children_last")
    if last is None or last[0] != key:
        kids, pos = _children_now(store, rows)
        kids.flags.writeable = pos.flags.writeable = False
        last = (key, kids, pos)
        store.derived["step_children_last"] = last
    return last[1], last[2]


def _children_now(store: TraceStore, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = store.slices
    index = np.full(len(s), -1, dtype=np.int64)
    index[rows] = np.arange(len(rows))
    kids = np.flatnonzero((s.parent >= 0) & (index[np.maximum(s.parent, 0)] >= 0))
    return kids, index[s.parent[kids]]


# For callers that split one set of steps (by kind): the children found once, the phases per subset.
def children_of(store: TraceStore, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(direct children of ``rows``, position in ``rows`` of each one's parent)."""
    return _children(store, rows)


def phases_from(store: TraceStore, rows: np.ndarray, kids: np.ndarray, k_step: np.ndarray) -> tuple[list[Phase], int]:
    """``phases_of`` from children already found (``k_step``: positions in ``rows``)."""
    return _phases(store, rows, kids, k_step)


def phases_of(store: TraceStore, rows: np.ndarray) -> tuple[list[Phase], int]:
    """Direct children of the steps, by name, with their share of the total step time."""
    if not len(rows):
        return [], 0
    kids, k_step = _children(store, rows)
    return _phases(store, rows, kids, k_step)


def phases_below_frames(store: TraceStore, rows: np.ndarray) -> tuple[list[Phase], int]:
    """Phases one sees through Python frames: the first slices below each step that are not
    frames (vLLM steps whose direct children are ``python_function`` frames). Empty when no
    direct child of a step is a frame."""
    if not len(rows):
        return [], 0
    is_py = python_mask(store)
    kids, k_step = _children(store, rows)
    if not is_py[kids].any():
        return [], 0
    found, found_step = [kids[~is_py[kids]]], [k_step[~is_py[kids]]]
    frames, f_step = kids[is_py[kids]], k_step[is_py[kids]]
    while len(frames):  # one stack level per pass; frames nest only as deep as the stack
        sub, pos = _children(store, frames)
        step_of = f_step[pos]
        found.append(sub[~is_py[sub]])
        found_step.append(step_of[~is_py[sub]])
        frames, f_step = sub[is_py[sub]], step_of[is_py[sub]]
    return _phases(store, rows, np.concatenate(found), np.concatenate(found_step))


def find_steps(store: TraceStore, rng: TimeRange | None = None, regex: str | None = None) -> StepReport:
    """The steps that start inside ``rng`` (its end excluded; the whole trace when None): where they
    were found, their rows, starts and ends, without phases or trend (``analyse_steps`` adds them;
    a comparison of runs needs only these); ``present=False`` when none."""
    rng = over(store, rng)
    t0, t1 = rng.t0, rng.t1
    label, source, rows, processes = _find_steps(store, regex)
    s = store.slices
    in_trace, all_rows = len(rows), rows
    rows = rows[(s.start_ns[rows] >= t0) & (s.start_ns[rows] < t1)]
    if not len(rows):
        return StepReport(False, pattern=label, source=source, in_trace=in_trace,
                          not_steps="" if in_trace or regex else _why_no_steps(store))
    starts, cpu_ends = s.start_ns[rows].astype(np.int64), s.end_ns[rows].astype(np.int64)
    ends = np.maximum(cpu_ends, launched_work(store, rows).last_ns)  # -1 where it launched nothing
    track = int(s.track[rows[0]])
    t = store.tracks[track]
    where = f"{t.process_title} › {t.title}" if len(store.sources) > 1 else ""  # which rank's
    return StepReport(True, label, source, track, rows, starts, ends, in_trace=in_trace,
                      run_start=int(rows[0]) == int(all_rows[0]), cpu_ends=cpu_ends, where=where,
                      processes=processes, process=_process_of(store, track))


def analyse_steps(store: TraceStore, rng: TimeRange | None = None, regex: str | None = None) -> StepReport:
    """``find_steps`` with the steps' phases and trends."""
    st = find_steps(store, rng, regex)
    if not st.present:
        return st
    st.phases, st.unattributed_ns = phases_of(store, st.rows)
    st.op_phases, st.op_unattributed_ns = phases_below_frames(store, st.rows)
    st.trend = analyse_trend(st.starts, st.ends)
    return st
