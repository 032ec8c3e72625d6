"""The serving and CUDA-graph parts of `vtui insights` as text (the app's Insights screen shows the
same lines, coloured by kind)."""

from __future__ import annotations

import numpy as np

from vtui.analysis.gpu.graphs import GraphReport
from vtui.analysis.steps.serving import ServingReport
from vtui.present.bars import sparkline, step_bars
from vtui.safe_text import safe_field
from vtui.units import counted
from vtui.units import format_duration as fd

KIND_MARK = {"prefill": "P", "decode": "D", "mixed": "M", "unknown": "?"}
MAX_STEP_ROWS = 40  # more steps: one sparkline per kind instead of a bar per step


def _opt(value, fmt=fd) -> str:
    return "—" if value is None else fmt(value)


def _rate(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f} tokens/s"


def _busy(v: float | None) -> str:
    return "no GPU work" if v is None else f"GPU busy {v:.1f}%"


def tokens_written(sv: ServingReport) -> bool:
    """Whether the steps carry token counts: a step of known kind always has a token, so none at all
    means the producer did not write them (vLLM's execute_new_…_cached_…, SGLang's frames)."""
    return any(s.prefill_tokens or s.decode_tokens for s in sv.steps) or not sv.kinds_known


def serving_head(sv: ServingReport) -> str:
    tokens = (f"{sv.tokens('prefill_tokens'):,} prefill / {sv.tokens('decode_tokens'):,} decode tokens"
              if tokens_written(sv) else "token counts not in the trace")
    return (f"Serving ({sv.source}): {sv.count('prefill')} prefill · {sv.count('decode')} decode · "
            f"{sv.count('mixed')} mixed · {sv.count('unknown')} unknown steps · {tokens}")


def serving_lines(sv: ServingReport, bar_width: int = 40) -> list[str]:
    if not sv.present:
        return ["Serving: no steps (see Steps)"]
    if not sv.kinds_known:
        return [f"Serving: {counted(len(sv.steps), 'step')} of unknown kind (no vLLM/SGLang step annotations, not "
                "generate()'s forward passes): no TTFT/TPOT by kind"]
    late = sum(1 for s in sv.steps if s.gpu_outlasts)
    cpu_ttft = f" (annotation alone {fd(sv.ttft_cpu_ns)})" if sv.ttft_cpu_ns is not None and sv.ttft_cpu_ns != sv.ttft_ns else ""
    lines = [serving_head(sv),
             f"  TTFT {_opt(sv.ttft_ns)}{cpu_ttft} (end of the first prefill step − start of the first step) · "
             f"TPOT {_opt(sv.tpot_ns)} (median decode step) · decode {_rate(sv.decode_tokens_per_s)}",
             f"  a step ends when its GPU work ends: the later of its annotation's end and the end of the device "
             f"work it launched ({late} of {counted(len(sv.steps), 'step')} end after the annotation)"]
    for k in sv.kinds:
        st = k.stats
        trend = k.trend.trend if k.trend else "n/a"
        spikes = ", ".join(f"#{i}" for i in k.spikes[:6]) or "none"
        lines.append(f"  {k.kind:<8} ×{k.count:<5} mean {fd(st.mean)} · median {fd(st.median)} · p90 {fd(st.p90)} · "
                     f"{_busy(k.gpu_busy_pct)} · trend {trend} · spikes {spikes}")
        if k.phases:
            lines.append("           phases: " + ", ".join(f"{safe_field(p.name, 32)} {p.pct:.0f}%" for p in k.phases[:4]))
    s = sv.steady
    if s is not None:
        lines.append(f"  steady state: steps #{s.first}–#{s.last} ({s.count} decode steps, batch ≈ {s.batch_median:g} "
                     f"±10%): TPOT {fd(s.tpot_ns)} · mean {fd(s.stats.mean)} · p90 {fd(s.stats.p90)} · "
                     f"decode {_rate(s.decode_tokens_per_s)} · {_busy(s.gpu_busy_pct)}")
    else:
        lines.append("  steady state: no run of 3+ decode steps with a steady batch")
    if sv.slow_prefills:
        lines.append("  prefill slow for its tokens: " + ", ".join(f"#{i}" for i in sv.slow_prefills[:8]))
    lines.extend(step_rows(sv, bar_width))
    return lines


def step_rows(sv: ServingReport, bar_width: int = 40) -> list[str]:
    """One row per step (kind, tokens, time, launched GPU time, bar); per-kind sparklines when many."""
    durs = np.array([s.dur_ns for s in sv.steps], dtype=np.int64)
    if len(durs) <= MAX_STEP_ROWS:
        out = ["  steps (P prefill · D decode · M mixed · ? unknown; tokens prefill+decode; GPU = launched work):"]
        written = tokens_written(sv)
        for s, bar in zip(sv.steps, step_bars(durs, bar_width)):
            toks = f"{s.prefill_tokens:>6}+{s.decode_tokens:<5}" if written else f"{'—':>6} {'':<5}"
            late = f"  ⟶ GPU ends {fd(s.dur_ns - s.cpu_dur_ns)} after the annotation" if s.gpu_outlasts else ""
            out.append(f"    #{s.index:<3} {KIND_MARK[s.kind]} {toks} "
                       f"{fd(s.dur_ns):>11}  GPU {fd(s.gpu_ns):>11} {bar}{late}")
        return out
    out = [f"  step time by kind ({len(durs)} steps, min {fd(durs.min())} … max {fd(durs.max())}):"]
    for k in sv.kinds:
        sel = np.array([s.dur_ns for s in sv.steps if s.kind == k.kind], dtype=np.int64)
        out.append(f"    {KIND_MARK[k.kind]} {sparkline(sel[:100])}")
    return out


def graph_lines(g: GraphReport) -> list[str]:
    if not g.present:
        return ["CUDA/HIP graphs: no graph launches"]
    if not g.launches:
        return ["CUDA/HIP graphs: no graph launch starts in this range"]
    d = g.launch_delay
    delay = (f" · launch delay (first kernel − launch call) median {fd(d.median)}, p90 {fd(d.p90)}, worst {fd(d.max)}"
             if d else "")
    lines = [f"CUDA/HIP graphs: {g.launches:,} launches · {g.kernels:,} kernels · {fd(g.kernel_ns)}{delay}"]
    with_graphs = [p for p in g.per_step if p.launches]
    if with_graphs:
        shown = ", ".join(f"#{p.index} {p.launches}×/{p.kernels} kernels/{fd(p.kernel_ns)}" for p in with_graphs[:6])
        more = f" … {len(with_graphs) - 6} more" if len(with_graphs) > 6 else ""
        lines.append(f"  per step: {shown}{more}")
    c = g.capture
    if c is not None:
        lines.append(f"  capture {safe_field(c.file, 80)}: {c.captures} capture(s) · {c.matched:,} of "
                     f"{c.replayed_kernels:,} replayed kernels matched (names in order)")
        for op, shapes, n, ns in c.by_op[:8]:
            lines.append(f"    {safe_field(op, 40):<40} {safe_field(shapes, 40):<40} ×{n:<5} {fd(ns):>11}")
    return lines
