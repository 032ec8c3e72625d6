"""The ``serving`` and ``graphs`` parts of ``vtui insights --json`` as typed msgspec Structs (the
keys the README documents), built from `vtui.analysis.steps.serving` and `vtui.analysis.gpu.graphs`."""

from __future__ import annotations

from typing import Any

import msgspec

from vtui.analysis.base.stats import Stats
from vtui.analysis.gpu.graphs import GraphReport
from vtui.analysis.steps.serving import ServingReport
from vtui.analysis.steps.step_names import DECODE, MIXED, PREFILL, UNKNOWN


class StepOut(msgspec.Struct):
    index: int
    kind: str
    prefill_requests: int
    prefill_tokens: int
    decode_requests: int
    decode_tokens: int
    start_ns: int
    dur_ns: int  # its own time: to the end of its device work when later than the annotation, from its start or the previous steps' end
    cpu_dur_ns: int  # the annotation alone
    gpu_outlasts: bool  # its device work ends after the annotation
    gpu_ns: int
    queued_ns: int = 0  # began this long before the previous steps' device work ended (their time: not in dur_ns)


class KindPhaseOut(msgspec.Struct):
    name: str
    total_ns: int
    count: int
    pct: float


class KindOut(msgspec.Struct):
    kind: str
    count: int
    mean_ns: float
    median_ns: float
    p90_ns: float
    gpu_busy_pct: float | None
    prefill_tokens: int
    decode_tokens: int
    trend: str
    spikes: list[int]
    phases: list[KindPhaseOut]


class SteadyOut(msgspec.Struct):
    first_step: int
    last_step: int
    count: int
    batch_median: float
    mean_ns: float
    median_ns: float
    p90_ns: float
    tpot_ns: float
    decode_tokens: int
    decode_tokens_per_s: float | None
    gpu_busy_pct: float | None


class ServingOut(msgspec.Struct):
    present: bool
    source: str
    steps: list[StepOut]
    prefill_steps: int
    decode_steps: int
    mixed_steps: int
    unknown_steps: int
    prefill_tokens: int
    decode_tokens: int
    ttft_ns: int | None
    ttft_cpu_ns: int | None
    tpot_ns: float | None
    decode_tokens_per_s: float | None
    steady: SteadyOut | None
    kinds: list[KindOut]
    slow_prefills: list[int]


class DelayOut(msgspec.Struct):
    count: int
    mean_ns: float
    median_ns: float
    p90_ns: float
    max_ns: float


class GraphStepOut(msgspec.Struct):
    index: int
    launches: int
    kernels: int
    kernel_ns: int


class CaptureOpOut(msgspec.Struct):
    op: str
    shapes: str
    kernels: int
    kernel_ns: int


class CaptureOut(msgspec.Struct):
    file: str
    captures: int
    replayed_kernels: int
    matched: int
    by_op: list[CaptureOpOut]


class GraphsOut(msgspec.Struct):
    present: bool
    launches: int
    kernels: int
    kernel_ns: int
    launch_delay: DelayOut | None
    per_step: list[GraphStepOut]
    capture: CaptureOut | None


def _delay(s: Stats | None) -> DelayOut | None:
    return None if s is None else DelayOut(s.count, s.mean, s.median, s.p90, s.max)


def serving_out(sv: ServingReport) -> ServingOut:
    steps = [StepOut(s.index, s.kind, s.prefill_requests, s.prefill_tokens, s.decode_requests, s.decode_tokens,
                     s.start_ns, s.dur_ns, s.cpu_dur_ns, s.gpu_outlasts, s.gpu_ns, s.queued_ns) for s in sv.steps]
    kinds = [KindOut(k.kind, k.count, k.stats.mean, k.stats.median, k.stats.p90, k.gpu_busy_pct, k.prefill_tokens,
                     k.decode_tokens, k.trend.trend if k.trend else "n/a", k.spikes,
                     [KindPhaseOut(p.name, p.total_ns, p.count, p.pct) for p in k.phases]) for k in sv.kinds]
    st = sv.steady
    steady = None if st is None else SteadyOut(st.first, st.last, st.count, st.batch_median, st.stats.mean,
                                               st.stats.median, st.stats.p90, st.tpot_ns, st.decode_tokens,
                                               st.decode_tokens_per_s, st.gpu_busy_pct)
    return ServingOut(sv.present, sv.source, steps, sv.count(PREFILL), sv.count(DECODE), sv.count(MIXED),
                      sv.count(UNKNOWN), sv.tokens("prefill_tokens"), sv.tokens("decode_tokens"), sv.ttft_ns,
                      sv.ttft_cpu_ns, sv.tpot_ns, sv.decode_tokens_per_s, steady, kinds, sv.slow_prefills)


def graphs_out(g: GraphReport) -> GraphsOut:
    c = g.capture
    cap = None if c is None else CaptureOut(c.file, c.captures, c.replayed_kernels, c.matched,
                                            [CaptureOpOut(op, sh, n, ns) for op, sh, n, ns in c.by_op])
    return GraphsOut(g.present, g.launches, g.kernels, g.kernel_ns, _delay(g.launch_delay),
                     [GraphStepOut(p.index, p.launches, p.kernels, p.kernel_ns) for p in g.per_step], cap)


def to_plain(value: msgspec.Struct) -> Any:
    """Builtins for the JSON writer (``json_text``)."""
    return msgspec.to_builtins(value)
