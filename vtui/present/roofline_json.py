"""The ``roofline`` part of ``vtui insights --json``: the roofline report as typed msgspec Structs."""

from __future__ import annotations

import msgspec

from vtui.analysis.gpu.roofline import RooflineReport


# ---- JSON --------------------------------------------------------------------------------------
class RooflineDevice(msgspec.Struct):
    name: str  # the table's name for the device ("" when unknown)
    trace_name: str  # as deviceProperties writes it
    peak_tflops: float | None  # bf16 (else fp16, fp32) dense
    peak_tbps: float | None
    peaks_tflops: dict[str, float]
    source: str | None
    peaks: str | None  # the column the figures are from: datasheet / achievable / file
    peaks_note: str | None  # where that is not the column asked for (no achievable figures)
    ridge_flops_per_byte: dict[str, float]  # per precision: peak FLOP/s ÷ bandwidth (above: compute bound)


class RooflineOp(msgspec.Struct):
    name: str
    shape: str
    dtype: str
    family: str
    count: int
    flops: int
    bytes: int
    gpu_ns: int
    cpu_ns: int
    tflops: float | None
    tbps: float | None
    roofline_ns: float | None
    pct_of_roofline: float | None
    bound: str | None
    hint: str | None
    input_types: list[str]  # every tensor argument's type
    from_capture: bool  # graph-replayed kernels costed from the capture trace's shapes


class RooflineJson(msgspec.Struct):
    present: bool
    device: RooflineDevice
    time_basis: str
    calls: int
    calls_without_shapes: int
    flops: int
    bytes: int
    why: str | None
    groups: int  # (name, shape) groups in all; ``ops`` holds the first of them
    capture: str | None  # the capture trace that costed the graph-replayed kernels
    ops: list[RooflineOp]


def _r(v: float | None, nd: int = 4) -> float | None:
    return None if v is None else round(float(v), nd)


def roofline_json(r: RooflineReport, top: int | None = None) -> RooflineJson:
    p = r.device.peaks
    ridge = {k: round(v, 2) for k in (p.tflops if p else {}) if (v := p.ridge(k)) is not None} if p else {}
    dev = RooflineDevice(p.name if p else "", r.device.trace_name, p.headline_tflops if p else None,
                         p.tbps if p else None, dict(p.tflops) if p else {}, p.source if p else None,
                         p.kind if p else None, r.device.note or None, ridge)
    ops = r.ops if top is None else r.ops[:top]
    return RooflineJson(r.present, dev, r.time_basis, r.calls, r.without_shapes, r.flops, r.bytes, r.why or None, len(r.ops),
                        r.capture or None,
                        [RooflineOp(o.name, o.shape, o.dtype, o.family, o.count, o.flops, o.bytes, o.gpu_ns, o.cpu_ns,
                                    _r(o.tflops), _r(o.tbps), _r(o.roofline_ns, 1), _r(o.pct_of_roofline, 3), o.bound,
                                    o.hint, list(o.types), o.from_capture) for o in ops])
