"""The roofline per op and the critical path per step as text (``vtui insights`` and the app)."""

from __future__ import annotations

from vtui.analysis.gpu.roofline import RooflineReport, short_type, worst_first
from vtui.analysis.why.critical import CriticalReport
from vtui.safe_text import safe_field
from vtui.units import format_bytes
from vtui.units import format_duration as fd

MAX_STEPS = 12  # steps listed one per line; the rest are counted by verdict


def _num(v: float | None, fmt: str = "{:.1f}") -> str:
    return "—" if v is None else fmt.format(v)


def format_flops(n: float) -> str:
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} FLOP"


def device_lines(r: RooflineReport) -> list[str]:
    p = r.device.peaks
    if p is None:
        return [f"device: unknown — {safe_field(r.device.why or r.why, 200)}; FLOPs and rates only, no % of roofline"]
    peaks = ", ".join(f"{k} {v:g}" for k, v in p.tflops.items())
    head = p.headline_tflops
    ridge = next((f"{k} {p.ridge(k):.0f} FLOP/byte" for k in ("bf16", "fp16", "fp32") if k in p.tflops and head), "—")
    return [f"device: {safe_field(p.name, 60)} (trace: {safe_field(r.device.trace_name or '—', 60)}) · {p.kind} peaks "
            f"TFLOP/s {peaks} · {p.tbps:g} TB/s · ridge {ridge}", f"source: {safe_field(p.source, 300)}"] + (
        [f"note: {safe_field(r.device.note, 200)}"] if r.device.note else []) + (
        [f"not confirmed against the datasheet: {', '.join(p.unconfirmed)}"] if p.unconfirmed else [])


def roofline_lines(r: RooflineReport | None, top: int = 12) -> list[str]:
    if r is None or not r.present:
        return ["Roofline: no operator with recorded shapes in this range (profile with record_shapes=True)"]
    basis = "GPU time of the kernels each op launched" if r.time_basis == "gpu" else "the ops' CPU time"
    lines = [f"Roofline: {r.calls:,} calls in {len(r.ops)} (op, shape) groups · {format_flops(r.flops)} · "
             f"{format_bytes(r.bytes)} moved · rates over {basis}"] + ["  " + ln for ln in device_lines(r)]
    if r.why and r.why != r.device.why:
        lines.append(f"  note: {safe_field(r.why, 200)}")
    if r.capture:
        lines.append(f"  graph-replayed kernels costed from the capture trace {safe_field(r.capture, 80)} (rows marked ⟳)")
    lines.append(f"  {'op':<28} {'shape':<30} {'dtype':<11} {'calls':>6} {'time':>10} {'TFLOP/s':>8} {'TB/s':>6} "
                 f"{'% roof':>7} bound")
    for o in worst_first(r)[:top]:
        t = o.gpu_ns if r.time_basis == "gpu" else o.cpu_ns
        name = ("⟳ " if o.from_capture else "") + o.name
        lines.append(f"  {safe_field(name, 28):<28} {safe_field(o.shape, 30):<30} {safe_field(_dtype(o.dtype), 11):<11} "
                     f"{o.count:>6,} {fd(t):>10} {_num(o.tflops, '{:.3g}'):>8} {_num(o.tbps, '{:.3g}'):>6} "
                     f"{_num(o.pct_of_roofline):>7} {o.bound or '—'}")
        if o.hint:
            lines.append(f"      → {o.hint}")
    if len(r.ops) > top:
        lines.append(f"  … {len(r.ops) - top} more groups (vtui insights --json lists them)")
    return lines


def _dtype(name: str) -> str:
    return name if "←" in name else short_type(name)


def critical_lines(c: CriticalReport | None) -> list[str]:
    if c is None or not c.present:
        return ["Critical path: no steps in this range"]
    total = sum(c.by_bound_ns.values()) or 1
    split = " · ".join(f"{k} {100 * v / total:.0f}%" for k, v in sorted(c.by_bound_ns.items(), key=lambda kv: -kv[1]))
    sample = f"; {len(c.steps):,} of {c.steps_total:,} steps, evenly sampled" if c.steps_total > len(c.steps) else ""
    lines = [f"Critical path per step: {c.bound}-bound overall (share of step time: {split}{sample})"]
    for st in c.steps[:MAX_STEPS]:
        path = st.end - st.start
        # the step's time is its path's (it runs to the end of its GPU work); the annotation ends sooner
        longer = f" (annotation {fd(st.step_end - st.start)})" if st.end > st.step_end else ""
        comm = f" · comm {fd(st.comm_ns)}" if st.comm_ns else ""
        sync = f" · sync serialised {fd(st.sync_ns)}" if st.sync_ns else ""
        queue = f" (queued behind earlier work {fd(st.queue_ns)})" if st.queue_ns else ""
        lines.append(f"  #{st.index:<3} {st.bound:<4} path {fd(path)}{longer}: CPU {fd(st.cpu_ns)} · GPU {fd(st.gpu_ns)}"
                     f"{comm} · wait {fd(st.wait_ns)}{queue}{sync}")
        if st.top:
            lines.append("       on it: " + ", ".join(f"{safe_field(n, 40)} {fd(v)}" for _k, n, v in st.top[:3]))
    if len(c.steps) > MAX_STEPS:
        rest: dict[str, int] = {}
        for st in c.steps[MAX_STEPS:]:
            rest[st.bound] = rest.get(st.bound, 0) + 1
        lines.append(f"  … {len(c.steps) - MAX_STEPS} more steps: "
                     + ", ".join(f"{n} {k}" for k, n in sorted(rest.items(), key=lambda kv: -kv[1])))
    return lines
