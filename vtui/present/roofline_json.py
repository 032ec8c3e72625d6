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
    ops: list[RooflineOp]


def _r(v: float | None, nd: int = 4) -> float | None:
    return None if v is None else round(float(v), nd)


def roofline_json(r: RooflineReport, top: int | None = None) -> RooflineJson:
    p = r.device.peaks
    dev = RooflineDevice(p.name if p else "", r.device.trace_name, p.headline_tflops if p else None,
                         p.tbps if p else None, dict(p.tflops) if p else {}, p.source if p else None)
    ops = r.ops if top is None else r.ops[:top]
    return RooflineJson(r.present, dev, r.time_basis, r.calls, r.without_shapes, r.flops, r.bytes, r.why or None, len(r.ops),
                        [RooflineOp(o.name, o.shape, o.dtype, o.family, o.count, o.flops, o.bytes, o.gpu_ns, o.cpu_ns,
                                    _r(o.tflops), _r(o.tbps), _r(o.roofline_ns, 1), _r(o.pct_of_roofline, 3), o.bound,
                                    o.hint) for o in ops])
