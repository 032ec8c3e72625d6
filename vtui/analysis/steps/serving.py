"""Steps as LLM serving sees them: each step's kind (prefill / decode / mixed / unknown) and tokens,
the GPU time of the work it launched, and the serving figures (TTFT, TPOT, decode tokens/s, per-kind
statistics, the steady-state window).

Definitions (README "Serving"):
- kind: ``prefill`` = context requests only, ``decode`` = generation only, ``mixed`` = both,
  ``unknown`` = the step's name says neither (ProfilerStep, engine_step, a regex).
  transformers' generate() forward passes: the first is the prefill, the others decode; tokens
  from the first ``aten::embedding``'s input shape in the pass when recorded.
- ``gpu_ns``: the union length of the device work whose launch call starts inside the step (by flow or
  correlation id, never by time overlap); a kind's GPU busy % is Σ gpu_ns ÷ Σ GPU span (first start
  to last end of each step's launched work: the step as the GPU ran it, often after the CPU step).
- a step ends when its work ends: at the later of its annotation's end and the end of the last
  device work it launched (``cpu_dur_ns`` keeps the annotation alone). Every time below uses it.
- ``ttft_ns``: end of the first step with a prefill part − start of the first step (only when the
  range starts the run; ``ttft_cpu_ns`` the same to the annotation's end); ``tpot_ns``: median
  duration of decode-only steps; ``decode_tokens_per_s``: Σ decode tokens ÷ (end of the last step −
  start of the first).
- steady state: the longest run of consecutive decode steps whose decode batch (requests) stays
  within ±10 % of the run's median batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.base.launched import launched_work, owners
from vtui.analysis.base.stats import Stats, pct
from vtui.analysis.steps.detect import (
    ENGINE_FRAME,
    TRANSFORMERS_FORWARD,
    Phase,
    StepReport,
    children_of,
    phases_below_frames,
    phases_from,
)
from vtui.analysis.steps.step_names import (
    DECODE,
    KINDS,
    MIXED,
    PREFILL,
    UNKNOWN,
    StepTokens,
    frame_kind,
    parse_step_name,
)
from vtui.analysis.steps.trends import SLOW_FIRST_RATIO, Trend, analyse_series
from vtui.store.devices import python_mask
from vtui.store.grouping import distinct_ids
from vtui.store.store import TraceStore

STEADY_TOLERANCE = 0.10  # a steady batch stays within ±10 % of the window's median
STEADY_MIN_STEPS = 3


@dataclass
class ServingStep:
    index: int  # position among the range's steps
    kind: str
    prefill_requests: int
    prefill_tokens: int
    decode_requests: int
    decode_tokens: int
    start_ns: int
    dur_ns: int
    gpu_ns: int  # union of the device work it launched
    row: int = -1  # slice row of the step
    cpu_dur_ns: int = 0  # the annotation alone; dur_ns runs to the end of its device work when later

    @property
    def gpu_outlasts(self) -> bool:
        """The device work it launched ends after its annotation."""
        return self.dur_ns > self.cpu_dur_ns


@dataclass
class KindStats:
    kind: str
    count: int
    stats: Stats
    gpu_busy_pct: float | None  # Σ gpu_ns ÷ Σ GPU span (first start → last end of each step's launched work)
    prefill_tokens: int
    decode_tokens: int
    phases: list[Phase] = field(default_factory=list)
    trend: Trend | None = None
    spikes: list[int] = field(default_factory=list)  # step indices above the kind's spike threshold


@dataclass
class Steady:
    first: int  # step indices, inclusive
    last: int
    count: int
    batch_median: float
    stats: Stats
    tpot_ns: float
    decode_tokens: int
    decode_tokens_per_s: float | None
    gpu_busy_pct: float | None


@dataclass
class ServingReport:
    present: bool
    source: str = ""  # "annotations", "transformers", "steps" (kinds unknown)
    steps: list[ServingStep] = field(default_factory=list)
    ttft_ns: int | None = None
    ttft_cpu_ns: int | None = None  # the same to the annotation's end (what the CPU alone shows)
    tpot_ns: float | None = None
    decode_tokens_per_s: float | None = None
    kinds: list[KindStats] = field(default_factory=list)
    steady: Steady | None = None
    slow_prefills: list[int] = field(default_factory=list)  # prefill steps slow for their tokens

    def count(self, kind: str) -> int:
        return sum(1 for s in self.steps if s.kind == kind)

    def tokens(self, attr: str) -> int:
        return sum(getattr(s, attr) for s in self.steps)

    @property
    def kinds_known(self) -> bool:
        return any(s.kind != UNKNOWN for s in self.steps)

    def kind(self, kind: str) -> KindStats | None:
        return next((k for k in self.kinds if k.kind == kind), None)


def _annotation_tokens(store: TraceStore, rows: np.ndarray) -> list[StepTokens] | None:
    """Tokens per step from its name, parsed once per distinct name; None when no name parses."""
    ids = store.slices.name_id[rows]
    parsed = {n: parse_step_name(store.strings[n]) for n in distinct_ids(ids)}
    if not any(p is not None and p.known for p in parsed.values()):
        return None
    return [parsed[int(n)] or StepTokens() for n in ids.tolist()]


def _embedding_shape(store: TraceStore, rows: np.ndarray) -> list[tuple[int, int, int] | None]:
    """Per forward pass: (batch, tokens, tokens per sequence) from the ``input_ids`` shape of its
    first aten::embedding; ``(0, tokens, 0)`` for packed 1-D ids (an engine's batch: TensorRT-LLM,
    vLLM), which say how many tokens but not whose."""
    s = store.slices
    out: list[tuple[int, int, int] | None] = [None] * len(rows)
    emb = store.string_ids("aten::embedding")
    if not emb:
        return out
    cand = np.flatnonzero(np.isin(s.name_id, emb))
    cand = cand[np.argsort(s.start_ns[cand], kind="stable")]
    own = owners(store, rows, cand)
    for step in range(len(rows)):
        hit = cand[own == step]
        if not len(hit):
            continue
        dims = store.slice_args(int(hit[0])).get("Input Dims")
        if isinstance(dims, list) and len(dims) > 1 and isinstance(dims[1], list) and dims[1] \
                and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims[1]):
            shape = dims[1]
            out[step] = (int(shape[0]), int(np.prod(shape)), int(shape[-1])) if len(shape) > 1 else (0, int(shape[0]), 0)
    return out


def _frame_tokens(store: TraceStore, rows: np.ndarray) -> list[StepTokens] | None:
    """Engine step frames: each step's kind from the first frame below it that names one
    (step_names.FRAME_KINDS); no request or token counts. None when no step has such a frame."""
    kinds = {i: k for i, n in enumerate(store.strings) if (k := frame_kind(n)) is not None}
    if not kinds:
        return None
    s = store.slices
    cand = np.flatnonzero(np.isin(s.name_id, np.fromiter(kinds, dtype=np.int64)) & python_mask(store))
    cand = cand[np.argsort(s.start_ns[cand], kind="stable")]
    own = owners(store, rows, cand)
    out = [StepTokens()] * len(rows)
    for step, row in zip(own.tolist()[::-1], cand.tolist()[::-1]):  # the first in each step wins
        if step >= 0:
            out[step] = StepTokens(known=True, fixed_kind=kinds[int(s.name_id[row])])
    return out if any(t.known for t in out) else None


def _forward_tokens(store: TraceStore, rows: np.ndarray, first_is_prefill: bool) -> list[StepTokens]:
    """generate()'s passes: the run's first is the prefill, the others decode; a first pass of one
    token per sequence is a decode too (the profiler started after the prompt). Packed 1-D token
    ids are an engine's forward, not generate()'s: no kind (a first pass is no prefill there)."""
    shapes = _embedding_shape(store, rows)
    if any(sh is not None and sh[0] == 0 and sh[1] > 0 for sh in shapes):
        return [StepTokens()] * len(rows)
    out = []
    for i, shape in enumerate(shapes):
        batch, toks, per_seq = shape if shape else (0, 0, 0)
        prefill = i == 0 and first_is_prefill and not (shape and per_seq == 1)
        out.append(StepTokens(batch, toks, 0, 0, True, fixed_kind=PREFILL) if prefill
                   else StepTokens(0, 0, batch, toks, True, fixed_kind=DECODE))
    return out


def steady_window(batch: np.ndarray, is_decode: np.ndarray, tol: float = STEADY_TOLERANCE) -> tuple[int, int] | None:
    """(first, last) step positions of the longest run of consecutive decode steps whose batch stays
    within ±tol of the run's median (ties: the earlier run); None under STEADY_MIN_STEPS.

    Exact: from each start the window grows while its max/min ratio could still fit a band
    ((1+tol)/(1−tol)); a start stops early when even the rest of its decode run is no longer than
    the best. A steady plateau is then found in one pass; a run over EXACT_LIMIT steps falls back
    to a sliding window (grow right, drop left), which can miss a longer window."""
    best: tuple[int, int] | None = None
    n = len(batch)
    i = 0
    while i < n:
        if not is_decode[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and is_decode[j + 1]:
            j += 1
        found = (_exact if j - i + 1 <= EXACT_LIMIT else _sliding)(batch, i, j, tol)
        if found is not None and (best is None or found[1] - found[0] > best[1] - best[0]):
            best = found
        i = j + 1
    return best


EXACT_LIMIT = 600  # beyond, a slowly drifting batch would make the exact search quadratic


def _exact(batch: np.ndarray, i: int, j: int, tol: float) -> tuple[int, int] | None:
    from bisect import insort

    run = batch[i:j + 1]
    med = float(np.median(run))
    if j - i + 1 >= STEADY_MIN_STEPS and run.min() >= (1 - tol) * med and run.max() <= (1 + tol) * med:
        return i, j  # the whole run is steady (the common case): no search
    best: tuple[int, int] | None = None
    ratio = (1 + tol) / (1 - tol)
    values = batch.tolist()
    for left in range(i, j + 1):
        if best is not None and j - left <= best[1] - best[0]:
            break  # nothing from here on can be longer
        window: list[float] = []
        for right in range(left, j + 1):
            insort(window, values[right])
            if window[-1] > ratio * window[0]:
                break  # no median puts both ends in its band, now or later
            if right - left + 1 >= STEADY_MIN_STEPS and _within(window, tol) and \
                    (best is None or right - left > best[1] - best[0]):
                best = (left, right)
    return best


def _sliding(batch: np.ndarray, i: int, j: int, tol: float) -> tuple[int, int] | None:
    from sortedcontainers import SortedList

    best: tuple[int, int] | None = None
    window: SortedList = SortedList()
    left = i
    for right in range(i, j + 1):
        window.add(float(batch[right]))
        while not _within(window, tol):
            window.remove(float(batch[left]))
            left += 1
        if right - left + 1 >= STEADY_MIN_STEPS and (best is None or right - left > best[1] - best[0]):
            best = (left, right)
    return best


def _median(sl) -> float:
    n = len(sl)
    return sl[n // 2] if n % 2 else (sl[n // 2 - 1] + sl[n // 2]) / 2


def _within(sl, tol: float) -> bool:
    med = _median(sl)
    return sl[0] >= (1 - tol) * med and sl[-1] <= (1 + tol) * med


def _busy(gpu: np.ndarray, span: np.ndarray) -> float | None:
    """Σ launched GPU time ÷ Σ its span; None when the steps launched no device work."""
    total = int(span.sum())
    return pct(float(gpu.sum()), float(total)) if total > 0 else None


def _rate(tokens: int, span_ns: int) -> float | None:
    return tokens * 1e9 / span_ns if tokens > 0 and span_ns > 0 else None


def step_tokens(store: TraceStore, st: StepReport) -> tuple[list[StepTokens], str]:
    """Per step of ``st`` (found, present): its kind, requests and tokens, and where they come from
    ("annotations", "transformers", "frames", or "steps" when nothing tells them)."""
    rows = st.rows
    tokens = _annotation_tokens(store, rows)
    if tokens is not None:
        return tokens, "annotations"
    frames = _frame_tokens(store, rows) if st.pattern == ENGINE_FRAME else None
    if st.pattern == TRANSFORMERS_FORWARD:
        return _forward_tokens(store, rows, first_is_prefill=st.run_start), "transformers"
    if frames is not None:
        return frames, "frames"
    return [StepTokens()] * len(rows), "steps"


def first_token_index(kinds: np.ndarray, run_start: bool) -> int | None:
    """The step whose end is the first token (the first with a prefill part), when the steps start the run."""
    first_prefill = np.flatnonzero((kinds == PREFILL) | (kinds == MIXED))
    return int(first_prefill[0]) if run_start and len(first_prefill) else None


def analyse_serving(store: TraceStore, st: StepReport) -> ServingReport:
    """Serving figures over the range's steps (those ``analyse_steps`` found)."""
    if not st.present or not st.count:
        return ServingReport(False)
    rows = st.rows
    tokens, source = step_tokens(store, st)
    starts, ends = st.starts, st.ends
    work = launched_work(store, rows)
    gpu, gspan = work.busy_ns, work.span_ns
    durs, cpu_durs = ends - starts, st.cpu_durations
    steps = [ServingStep(i, t.kind, t.prefill_requests, t.prefill_tokens, t.decode_requests, t.decode_tokens, a, d, g, r, c)
             for i, (t, a, d, g, r, c) in enumerate(zip(tokens, starts.tolist(), durs.tolist(), gpu.tolist(),
                                                        rows.tolist(), cpu_durs.tolist()))]
    out = ServingReport(True, source, steps)
    st.first_kind = steps[0].kind if out.kinds_known else ""  # the steps' own TTFT follows the kinds
    kinds = np.array([s.kind for s in steps])
    pre_tok = np.array([s.prefill_tokens for s in steps], dtype=np.int64)
    dec_tok = np.array([s.decode_tokens for s in steps], dtype=np.int64)
    first = first_token_index(kinds, st.run_start)
    if first is not None:
        out.ttft_ns = int(ends[first] - starts[0])
        out.ttft_cpu_ns = int(starts[first] + cpu_durs[first] - starts[0])
    decode = kinds == DECODE
    if decode.any():
        out.tpot_ns = float(np.median(durs[decode]))
    out.decode_tokens_per_s = _rate(int(dec_tok.sum()), int(ends.max() - starts[0]))
    kids, k_step = children_of(store, rows)  # one pass over the slices for every kind's phases
    is_py = python_mask(store)
    for kind in KINDS:
        sel = np.flatnonzero(kinds == kind)
        if not len(sel):
            continue
        trend = analyse_series(starts[sel], ends[sel])
        pos = np.full(len(rows), -1, dtype=np.int64)
        pos[sel] = np.arange(len(sel))
        mine = pos[k_step] >= 0
        if is_py[kids[mine]].any():  # vLLM with_stack: the direct children are frames; the ops lie below
            phases, _ = phases_below_frames(store, rows[sel])
        else:
            phases, _ = phases_from(store, rows[sel], kids[mine], pos[k_step[mine]])
        out.kinds.append(KindStats(kind, len(sel), _stats(durs[sel]), _busy(gpu[sel], gspan[sel]),
                                   int(pre_tok[sel].sum()), int(dec_tok[sel].sum()), phases, trend,
                                   [int(sel[k]) for k in trend.spikes]))
    out.slow_prefills = _slow_prefills(steps)
    batch = np.array([s.decode_requests for s in steps], dtype=np.float64)
    win = steady_window(batch, decode & (batch > 0))  # no batch written (frames): no steady batch to find
    if win is not None:
        a, b = win
        sel = np.arange(a, b + 1)
        dec_tokens = int(dec_tok[sel].sum())
        out.steady = Steady(a, b, len(sel), float(np.median([steps[i].decode_requests for i in sel.tolist()])),
                            _stats(durs[sel]), float(np.median(durs[sel])), dec_tokens,
                            _rate(dec_tokens, int(ends[b] - starts[a])), _busy(gpu[sel], gspan[sel]))
    return out


def _slow_prefills(steps: list[ServingStep]) -> list[int]:
    """Prefill steps slow *for their tokens*: time per prefill token ≥ SLOW_FIRST_RATIO × the median
    per-token time of the other prefill steps (needs two others; a long prefill of many tokens is not slow)."""
    pre = [s for s in steps if s.kind == PREFILL and s.prefill_tokens > 0]
    if len(pre) < 3:
        return []
    per = np.array([s.dur_ns / s.prefill_tokens for s in pre])
    out = []
    for k, s in enumerate(pre):
        others = np.delete(per, k)
        if per[k] >= SLOW_FIRST_RATIO * float(np.median(others)):
            out.append(s.index)
    return out


def _stats(durations: np.ndarray) -> Stats:
    """``Stats.of`` of a selection known to be non-empty (a kind's or the steady window's steps)."""
    stats = Stats.of(durations)
    if stats is None:
        raise ValueError("no steps")
    return stats
