"""Roofline per op: every FLOP and byte count equals a plain-Python computation from the raw
``Input Dims`` / ``Input type``; GPU time per op from correlation ids; device peaks as data."""

from __future__ import annotations

import json
import re
import tomllib
from math import prod
from pathlib import Path

import pytest

from tests.helpers import MI250, QWEN, STACK, raw_events, raw_origin, raw_span_ns
from vtui.analysis.gpu.peaks import device_table, match_device
from vtui.analysis.gpu.roofline import analyse_roofline
from vtui.load.trace import load_trace
from vtui.present.roofline_json import roofline_json

# ---- the plain-Python reference ----------------------------------------------------------------
SIZE = {"double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4, "short int": 2,
        "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1}
GEMM = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_scaled_mm"}
ATTN = {"scaled_dot_product_attention": 5, "_scaled_dot_product_flash_attention": 4,
        "_scaled_dot_product_efficient_attention": 6, "_flash_attention_forward": 8}
ELEMENTWISE = {"add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "rsqrt", "pow", "tanh", "sigmoid", "relu",
               "gelu", "silu", "where", "clamp", "masked_fill", "abs", "cos", "sin", "erf", "reciprocal", "maximum",
               "minimum"}
INPLACE = {n + "_" for n in ("add", "sub", "mul", "div", "relu", "silu", "gelu", "clamp", "masked_fill", "neg", "exp",
                             "tanh", "sigmoid", "pow", "rsqrt", "sqrt", "reciprocal")}
LIKE_INPUT = {"layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm", "group_norm", "native_group_norm",
              "batch_norm", "softmax", "_softmax", "log_softmax", "_log_softmax", "clone", "contiguous"}
REDUCE = {"sum": 1, "mean": 1, "amax": 1, "amin": 1, "prod": 1, "std": 1, "var": 1, "logsumexp": 1, "cumsum": 1,
          "cumprod": 1, "max": 1, "min": 1, "norm": 2, "linalg_vector_norm": 2, "linalg_norm": 2}
COUNTED = GEMM | set(ATTN) | ELEMENTWISE | INPLACE | LIKE_INPUT | {"copy_"} | set(REDUCE)


def tensors(args):
    """(shape, element size) of each argument that is a tensor of a known type."""
    out = []
    for d, t in zip(args["Input Dims"], args["Input type"]):
        if t in SIZE and isinstance(d, list) and all(isinstance(x, int) for x in d):
            out.append((d, SIZE[t]))
    return out


def nbytes(shape, size):
    return prod(shape) * size


def bcast(shapes):
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        s = [1] * (n - len(s)) + s
        out = [b if a == 1 else a for a, b in zip(out, s)]
    return out


def reference(name, args):
    """(flops, bytes) of one call, or None where the rules do not apply."""
    op = name[6:]
    dims, types = args["Input Dims"], args["Input type"]
    conc = args.get("Concrete Inputs", [])
    if any(isinstance(d, list) and any(isinstance(x, list) for x in d) for d in dims):
        return None
    ins = sum(nbytes(s, e) for s, e in tensors(args))
    if op == "linear":
        x, w = dims[0], dims[1]
        m, k, n = prod(x[:-1]), x[-1], w[0]
        bias = len(dims) > 2 and types[2] in SIZE and dims[2] != []
        return 2 * m * n * k + (m * n if bias else 0), ins + m * n * SIZE[types[0]]
    if op in ("mm", "addmm"):
        a, b = (dims[1], dims[2]) if op == "addmm" else (dims[0], dims[1])
        e = SIZE[types[1] if op == "addmm" else types[0]]
        m, k, n = a[0], a[1], b[1]
        return 2 * m * n * k + (m * n if op == "addmm" else 0), ins + m * n * e
    if op in ("bmm", "baddbmm"):
        a, b = (dims[1], dims[2]) if op == "baddbmm" else (dims[0], dims[1])
        e = SIZE[types[1] if op == "baddbmm" else types[0]]
        bt, m, k, n = a[0], a[1], a[2], b[2]
        return bt * (2 * m * n * k + (m * n if op == "baddbmm" else 0)), ins + bt * m * n * e
    if op == "matmul":
        a, b = dims[0], dims[1]
        a = [1] + a if len(a) == 1 else a
        b = b + [1] if len(b) == 1 else b
        bt = prod(bcast([a[:-2], b[:-2]])) if len(a) > 2 or len(b) > 2 else 1
        m, k, n = a[-2], a[-1], b[-1]
        return 2 * bt * m * n * k, ins + bt * m * n * SIZE[types[0]]
    if op in ATTN:
        q, k, v = dims[0], dims[1], dims[2]
        if op == "_flash_attention_forward":
            b, nq, nkv, d, dv = q[0] * q[2], q[1], k[1], q[3], v[3]
        else:
            b, nq, nkv, d, dv = prod(q[:-2]), q[-2], k[-2], q[-1], v[-1]
        flops = 2 * b * nq * nkv * (d + dv)
        if conc[ATTN[op]] == "True":
            flops //= 2
        return flops, ins + b * nq * dv * SIZE[types[0]]
    ts = tensors(args)
    if not ts:
        return None
    if op in REDUCE and not (op in ("max", "min") and len(ts) > 1):
        x, e = ts[0]
        if op.startswith("cum"):
            return prod(x), 2 * nbytes(x, e)
        dim = conc[REDUCE[op]] if len(conc) > REDUCE[op] else ""
        if not dim:
            return prod(x), nbytes(x, e) + e
        axes = {int(d) % len(x) for d in dim.strip("[]").split(",")}
        keep = "True" in conc[REDUCE[op] + 1:]
        out = prod(1 if i in axes else n for i, n in enumerate(x)) if keep else \
            prod(n for i, n in enumerate(x) if i not in axes)
        return prod(x), nbytes(x, e) + out * e + (out * 8 if op in ("max", "min") else 0)
    if op == "copy_":
        return prod(ts[0][0]), ins
    if op in LIKE_INPUT or op in INPLACE:
        return prod(ts[0][0]), ins + nbytes(*ts[0])
    out = bcast([s for s, _ in ts])
    size = max([e for s, e in ts if s] or [e for _, e in ts])
    return prod(out), ins + prod(out) * size


def reference_report(path: Path):
    """Per op name: [calls, flops, bytes, gpu ns] over the outermost counted calls."""
    events = raw_events(path)
    origin = raw_origin(events)
    cands = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"
             and str(e.get("name", "")).startswith("aten::") and e["name"][6:] in COUNTED
             and e.get("args", {}).get("Input Dims") is not None]
    by_thread: dict = {}
    for e in cands:
        by_thread.setdefault((e["pid"], e["tid"]), []).append((*raw_span_ns(origin, e), e))
    for key, items in by_thread.items():  # a GEMM (attention) holding another (matmul over bmm) is not counted
        for kind, outer in ((GEMM, GEMM), (set(ATTN), {"scaled_dot_product_attention"})):
            inner = [(s, t, id(e)) for s, t, e in items if e["name"][6:] in kind]
            items = [(s, t, e) for s, t, e in items if e["name"][6:] not in outer
                     or not any(i != id(e) and s <= s2 and t2 <= t for s2, t2, i in inner)]
        by_thread[key] = items
    outer = []
    for items in by_thread.values():
        items.sort(key=lambda it: (it[0], -it[1]))
        reach = None
        for start, end, e in items:
            if reach is not None and start >= reach[0] and end <= reach[1]:
                continue  # inside an earlier counted call
            reach = (start, end)
            outer.append((start, end, e))
    # GPU time: kernels whose correlation id is that of a runtime call inside the op.
    kernel_ns: dict = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            s, t = raw_span_ns(origin, e)
            kernel_ns[e["args"].get("correlation")] = kernel_ns.get(e["args"].get("correlation"), 0) + t - s
    calls: dict = {}
    for e in events:
        launch = e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
        if launch and e.get("args", {}).get("correlation") in kernel_ns:
            calls.setdefault((e["pid"], e["tid"]), []).append((*raw_span_ns(origin, e), e["args"]["correlation"]))
    out: dict = {}
    for start, end, e in outer:
        got = reference(e["name"], e["args"])
        if got is None:
            continue
        gpu = sum(kernel_ns[c] for s, t, c in calls.get((e["pid"], e["tid"]), []) if s >= start and t <= end)
        for key in (e["name"], (e["name"], shape_text(e["args"]))):  # per name, and per name and shape
            acc = out.setdefault(key, [0, 0, 0, 0])
            for i, v in enumerate((1, got[0], got[1], gpu)):
                acc[i] += v
    return out


def shape_text(args) -> str:
    """The dims of the tensor arguments as the report labels a shape: ``8x16 · 16x4``."""
    return " · ".join("x".join(str(x) for x in d) for d, t in zip(args["Input Dims"], args["Input type"])
                      if isinstance(d, list) and d and all(isinstance(x, int) for x in d) and t not in ("Scalar", ""))


def by_name(report):
    """Per name and per (name, shape): [calls, flops, bytes, gpu ns], as ``reference_report``."""
    out: dict = {}
    for o in report.ops:
        for key in (o.name, (o.name, o.shape)):
            acc = out.setdefault(key, [0, 0, 0, 0])
            for i, v in enumerate((o.count, o.flops, o.bytes, o.gpu_ns)):
                acc[i] += v
    return out


@pytest.mark.parametrize("path", [QWEN, STACK], ids=["qwen_h100", "hf_llama_stack"])
def test_flops_and_bytes_equal_the_plain_computation(path):
    report = analyse_roofline(load_trace(path))
    want = reference_report(path)
    got = by_name(report)
    assert got.keys() == want.keys()
    for name in want:
        assert got[name][:3] == want[name][:3], name
        if report.time_basis == "gpu":
            assert got[name][3] == want[name][3], name
    assert report.flops == sum(v[1] for k, v in want.items() if isinstance(k, str)) > 0


@pytest.mark.parametrize("rel", ["public/tracelens__graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
                                 "generated/hf_llama_kvcache.json.gz", "generated/hf_llama_big.json.gz"],
                         ids=["vllm_mi300x", "hf_llama_kvcache", "hf_llama_big"])
def test_shared_traces_with_shapes(shared_traces, rel):
    path = shared_traces / rel
    report = analyse_roofline(load_trace(path))
    want = reference_report(path)
    got = by_name(report)
    assert got.keys() == want.keys()
    for name in want:
        assert got[name][:3] == want[name][:3], name
    if "mi300x" in rel or "graph_capture" in rel:  # deviceProperties name is "": matched by CUs and memory
        assert report.device.peaks is not None and report.device.peaks.name == "AMD Instinct MI300X"


def test_qwen_h100_rates_and_percentages():
    report = analyse_roofline(load_trace(QWEN))
    assert report.device.peaks.name == "NVIDIA H100 SXM" and report.time_basis == "gpu"
    top = report.ops[0]
    assert top.name == "aten::mm" and top.bound == "compute"  # the GEMM under aten::linear
    # 16 × 559 tokens through a 1024 → 2816 projection: 2·M·N·K per call, 48 calls.
    assert top.flops == 48 * 2 * (16 * 559) * 2816 * 1024
    assert top.tflops == pytest.approx(top.flops / top.gpu_ns / 1e3)
    assert top.pct_of_roofline == pytest.approx(100 * top.flops / (989.5e3 * top.gpu_ns))
    for o in report.ops:
        if o.pct_of_roofline is not None:
            assert 0 < o.pct_of_roofline <= 100, o  # measured kernels never beat the datasheet
    j = roofline_json(report)
    assert j.device.peak_tflops == 989.5 and j.device.peak_tbps == 3.35


def _trace(tmp_path, device: str, events: list[dict]):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"deviceProperties": [{"id": 0, "name": device}], "traceEvents": events}))
    return load_trace(path, cache=False)


def _mm_trace(tmp_path, device: str, m: int = 1024, dtype: str = "c10::BFloat16"):
    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 20,
         "args": {"Input Dims": [[m, 1024], [1024, 1024]], "Input type": [dtype, dtype]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 4,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 10, "dur": 10,
         "args": {"correlation": 7}},
    ]
    return _trace(tmp_path, device, ev)


def test_one_gemm_by_hand(tmp_path):
    o = analyse_roofline(_mm_trace(tmp_path, "NVIDIA H100 80GB HBM3")).ops[0]
    assert (o.flops, o.bytes, o.gpu_ns) == (2 * 1024**3, 3 * 1024 * 1024 * 2, 10_000)
    assert o.tflops == pytest.approx(2 * 1024**3 / 10_000 / 1e3)
    compute_ns, memory_ns = 2 * 1024**3 / 989.5e3, 3 * 1024 * 1024 * 2 / 3.35e3
    assert o.roofline_ns == pytest.approx(max(compute_ns, memory_ns))
    assert o.pct_of_roofline == pytest.approx(100 * compute_ns / 10_000) and o.bound == "compute"


def test_hints(tmp_path):
    assert "M = 2" in analyse_roofline(_mm_trace(tmp_path, "NVIDIA H100 80GB HBM3", m=2)).ops[0].hint
    assert analyse_roofline(_mm_trace(tmp_path, "NVIDIA H100 80GB HBM3", m=1001)).ops[0].hint.startswith("dims 1001")
    fp32 = analyse_roofline(_mm_trace(tmp_path, "NVIDIA H100 80GB HBM3", dtype="float")).ops[0]
    assert fp32.hint.startswith("fp32 GEMM") and fp32.pct_of_roofline == pytest.approx(
        100 * 2 * 1024**3 / 67e3 / 10_000)


def test_unknown_device_has_rates_but_no_percentage(tmp_path):
    report = analyse_roofline(_mm_trace(tmp_path, "Imaginary Accelerator 9000"))
    o = report.ops[0]
    assert o.tflops is not None and o.pct_of_roofline is None and o.bound is None
    assert "Imaginary Accelerator 9000" in report.why and "not in vtui's peak table" in report.why
    real = analyse_roofline(load_trace(MI250))  # 'AMD Radeon Graphics' (an MI250 GCD): not in the table
    assert real.device.peaks is None and real.present and all(o.pct_of_roofline is None for o in real.ops)


def test_device_table_is_data_with_sources():
    text = (Path(__file__).resolve().parents[2] / "vtui" / "data" / "devices.toml").read_text()
    entries = tomllib.loads(text)["device"]
    assert len(entries) == len(device_table())
    for d in entries:
        assert re.search(r"https://(www\.|images\.|resources\.)?(nvidia|amd)\.com/", d["source"]), d["name"]
        assert d["tbps"] > 0 and ("bf16" in d or "fp16" in d) and "fp32" in d
        # Each entry says how it was checked; figures that check could not confirm are named.
        assert d["checked"].startswith("2026-12-02") and set(d.get("unconfirmed", [])) <= set(d) - {"name", "match", "source"}
    by_name = {d.name: d for d in device_table()}
    assert by_name["NVIDIA H100 PCIe"].tflops["bf16"] == 756.5  # 1,513 with sparsity / 2
    assert by_name["NVIDIA B200"].tbps == 7.7 and by_name["NVIDIA B200"].tflops["tf32"] == 1100.0
    assert "tf32" in by_name["AMD Instinct MI300X"].unconfirmed and not by_name["NVIDIA H100 SXM"].unconfirmed
    names = {
        "Tesla V100-SXM2-32GB": "NVIDIA V100 SXM2", "Tesla T4": "NVIDIA T4", "NVIDIA A10": "NVIDIA A10",
        "NVIDIA A100-SXM4-40GB": "NVIDIA A100 40GB", "NVIDIA A100-SXM4-80GB": "NVIDIA A100 80GB", "NVIDIA L4": "NVIDIA L4",
        "NVIDIA L40S": "NVIDIA L40S", "NVIDIA H100 80GB HBM3": "NVIDIA H100 SXM", "NVIDIA H100 PCIe": "NVIDIA H100 PCIe",
        "NVIDIA H200": "NVIDIA H200", "NVIDIA B200": "NVIDIA B200", "NVIDIA GB200": "NVIDIA GB200 (per Blackwell GPU)",
        "AMD Instinct MI250X": "AMD Instinct MI250X (one GCD)", "AMD Instinct MI300X": "AMD Instinct MI300X",
        "AMD Instinct MI325X": "AMD Instinct MI325X", "AMD Instinct MI355X": "AMD Instinct MI355X",
    }
    for trace_name, table_name in names.items():
        assert match_device({"name": trace_name}).name == table_name
    assert match_device({"name": "", "numSms": 304, "totalGlobalMem": 206141652992}).name == "AMD Instinct MI300X"
    assert match_device({"name": "", "numSms": 304, "totalGlobalMem": 256 * 2**30}).name == "AMD Instinct MI325X"
    assert match_device({"name": "", "numSms": 12}) is None


def test_cpu_only_trace_uses_cpu_time_and_says_so():
    report = analyse_roofline(load_trace(STACK))
    assert report.time_basis == "cpu" and "no GPU work" in report.why
    assert all(o.gpu_ns == 0 and o.pct_of_roofline is None for o in report.ops)
    linear = [o for o in report.ops if o.name == "aten::addmm"]  # the GEMMs under aten::linear
    assert linear and all(o.tflops == pytest.approx(o.flops / o.cpu_ns / 1e3) for o in linear)


def test_group_roofline_keeps_a_zero_roofline_time(tmp_path):
    """Empty tensors cost 0 bytes: a roofline time of 0 ns is a figure (the report says 0 %), not unknown."""
    from vtui.analysis.gpu.roofline import group_roofline
    from vtui.analysis.slices.aggregate import aggregate

    ev = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1, "tid": 1, "ts": 0, "dur": 20,
         "args": {"Input Dims": [[0], [0]], "Input type": ["float", "float"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 4,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "copy_kernel", "pid": 0, "tid": 7, "ts": 10, "dur": 10,
         "args": {"correlation": 7}},
    ]
    store = _trace(tmp_path, "NVIDIA H100 80GB HBM3", ev)
    op = analyse_roofline(store).ops[0]
    assert (op.bytes, op.pct_of_roofline) == (0, 0.0)
    agg = aggregate(store, None, None)
    [g] = group_roofline(store, agg.selected, agg.keys).values()
    assert (g.calls, g.bytes, g.gpu_ns, g.roofline_ns, g.pct_of_roofline) == (1, 0, 10_000, 0.0, 0.0)


def test_group_roofline_is_memoised_on_its_inputs_content(monkeypatch):
    """The slice table asks on every refresh: the same rows, keys and range rule (equal arrays, not
    the same objects) are worked out once; other inputs are worked out anew; the last few are kept."""
    import numpy as np

    from vtui.analysis.gpu import roofline
    from vtui.analysis.slices.aggregate import aggregate

    store = load_trace(QWEN, cache=False)
    calls: list[int] = []
    real = roofline._group_roofline_now

    def counted(st, rows, keys, starts_in):
        calls.append(len(rows))
        return real(st, rows, keys, starts_in)

    monkeypatch.setattr(roofline, "_group_roofline_now", counted)
    agg = aggregate(store, None, None, by="name")
    span = (agg.t0, agg.t1)
    first = roofline.group_roofline(store, agg.selected, agg.keys, span)
    assert first and len(calls) == 1
    again = aggregate(store, None, None, by="name")  # a refresh: new arrays, the same content
    assert again.selected is not agg.selected
    assert roofline.group_roofline(store, again.selected, again.keys, span) == first and len(calls) == 1
    assert roofline.group_roofline(store, agg.selected, agg.keys, span) == real(store, agg.selected, agg.keys, span)
    # Another grouping, range rule or row set is its own entry.
    by_cat = aggregate(store, None, None, by="cat")
    roofline.group_roofline(store, by_cat.selected, by_cat.keys, span)
    roofline.group_roofline(store, agg.selected, agg.keys, None)
    roofline.group_roofline(store, agg.selected[1:], agg.keys[1:], span)
    assert len(calls) == 4
    # Slots: the oldest goes once more than GROUP_MEMO_SLOTS were asked for.
    for k in range(roofline.GROUP_MEMO_SLOTS):
        roofline.group_roofline(store, agg.selected, np.zeros(len(agg.keys), dtype=np.int64) + k, span)
    assert len(calls) == 4 + roofline.GROUP_MEMO_SLOTS
    roofline.group_roofline(store, agg.selected, agg.keys, span)  # pushed out: worked out again
    assert len(calls) == 5 + roofline.GROUP_MEMO_SLOTS
