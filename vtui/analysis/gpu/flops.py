"""FLOPs and bytes of one operator call from its recorded shapes (``record_shapes``): plain rules
over ``Input Dims`` / ``Input type`` / ``Concrete Inputs``, one call per distinct shape.

GEMMs (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``matmul``, ``linear``, ``_scaled_mm``): 2·M·N·K,
plus M·N for a bias or added matrix, times the batch for batched forms; bytes = the tensor
inputs + the output. Attention (``scaled_dot_product_attention`` and its flash / efficient /
cuDNN variants): 2·B·H·Nq·Nkv·(dqk + dv), halved when causal; bytes = Q, K, V and O.
Bytes-only ops (elementwise, norms, softmax, copies): the tensor inputs + the output (the
broadcast of the inputs, or the first input's shape), no FLOPs counted. Only ``aten::`` names:
a custom op's arguments say nothing reliable about what it computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

# Element size per ``Input type`` name (PyTorch's C++ type names as the profiler writes them).
ELEM_SIZE: dict[str, int] = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4, "short int": 2,
    "signed char": 1, "unsigned char": 1, "bool": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
    "c10::complex<c10::Half>": 4, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1, "c10::Float8_e8m0fnu": 1, "c10::Float4_e2m1fn_x2": 1, "unsigned short": 2,
    "unsigned int": 4, "unsigned long": 8,
}
# The precision class a peak is looked up under (devices.toml keys); other types have no peak.
PRECISION: dict[str, str] = {
    "c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8", "c10::Float8_e5m2fnuz": "fp8",
}
# c10::ScalarType codes (a ``dtype`` argument in ``Concrete Inputs``) -> element size.
SCALAR_TYPE_SIZE = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 15: 2, 23: 1, 24: 1, 25: 1, 26: 1}

GEMMS = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_scaled_mm"})
# Attention: the argument index of ``is_causal`` and the layout of Q/K/V ("bhnd" or "bnhd").
ATTENTION: dict[str, tuple[int, str]] = {
    "scaled_dot_product_attention": (5, "bhnd"),
    "_scaled_dot_product_flash_attention": (4, "bhnd"),
    "_scaled_dot_product_flash_attention_for_cpu": (4, "bhnd"),
    "_scaled_dot_product_efficient_attention": (6, "bhnd"),
    "_scaled_dot_product_cudnn_attention": (6, "bhnd"),
    "_flash_attention_forward": (8, "bnhd"),
    "_efficient_attention_forward": (9, "bnhd"),  # custom_mask_type: 0 none, 1/2 causal
}
ELEMENTWISE = frozenset({
    "add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "rsqrt", "pow", "tanh", "sigmoid", "relu", "gelu",
    "silu", "where", "clamp", "masked_fill", "abs", "cos", "sin", "erf", "reciprocal", "maximum", "minimum",
    "add_", "sub_", "mul_", "div_", "relu_", "silu_", "gelu_", "clamp_", "masked_fill_", "neg_", "exp_",
    "tanh_", "sigmoid_", "pow_", "rsqrt_", "sqrt_", "reciprocal_",
})
SAME_SHAPE = frozenset({  # one output shaped as the first input
    "layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm", "group_norm", "native_group_norm",
    "batch_norm", "softmax", "_softmax", "log_softmax", "_log_softmax", "clone", "contiguous",
})
COPIES = frozenset({"copy_"})  # writes into its first input: bytes = source read + destination written


def base_name(name: str) -> str | None:
    """The ATen op name without ``aten::``; None for other namespaces."""
    return name[6:] if name.startswith("aten::") else None


def family(name: str) -> str | None:
    """``gemm``, ``attention``, ``bytes`` or None (not counted) for an operator name."""
    op = base_name(name)
    if op is None:
        return None
    if op in GEMMS:
        return "gemm"
    if op in ATTENTION:
        return "attention"
    if op in ELEMENTWISE or op in SAME_SHAPE or op in COPIES:
        return "bytes"
    return None


@dataclass(frozen=True)
class Cost:
    flops: int
    bytes: int
    precision: str | None  # bf16 / fp16 / fp32 / fp8 (the peak to compare with), None: no peak
    dtype: str  # the compute operand's type name as written
    m: int = 0  # GEMM rows (tokens): tiny M in decode is memory bound
    dims: tuple[int, ...] = ()  # GEMM M, N, K (attention: Nq, Nkv, d) for the alignment hint


def _tensor(dims: Any, typ: Any) -> tuple[int, int] | None:
    """(elements, element size) of one argument when it is a tensor of a known type."""
    if not isinstance(typ, str) or typ not in ELEM_SIZE or not isinstance(dims, list):
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
        return None
    return prod(dims), ELEM_SIZE[typ]


def _shape(dims: list, i: int) -> list[int] | None:
    if i >= len(dims) or not isinstance(dims[i], list):
        return None
    d = dims[i]
    return d if all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in d) else None


def broadcast(shapes: list[list[int]]) -> list[int] | None:
    """NumPy / PyTorch broadcasting of shapes; None where they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s, ndim - len(s)):
            if d != 1:
                if out[i] not in (1, d):
                    return None
                out[i] = d
    return out


def op_cost(name: str, dims: Any, types: Any, concrete: Any = None) -> Cost | None:
    """FLOPs and bytes of one call; None where the shapes do not say (missing, malformed, unknown op)."""
    op = base_name(name)
    if op is None or not isinstance(dims, list) or not isinstance(types, list) or len(types) < len(dims):
        return None
    concrete = concrete if isinstance(concrete, list) else []
    try:
        if op in GEMMS:
            return _gemm(op, dims, types, concrete)
        if op in ATTENTION:
            return _attention(op, dims, types, concrete)
        if op in ELEMENTWISE or op in SAME_SHAPE or op in COPIES:
            return _bytes_only(op, dims, types)
    except (TypeError, ValueError, IndexError):
        return None
    return None


def _in_bytes(dims: list, types: list) -> int:
    total = 0
    for d, t in zip(dims, types):
        got = _tensor(d, t)
        if got:
            total += got[0] * got[1]
    return total


def _gemm(op: str, dims: list, types: list, concrete: list) -> Cost | None:
    a_at = {"addmm": 1, "baddbmm": 1}.get(op, 0)
    a, b = _shape(dims, a_at), _shape(dims, a_at + 1)
    if a is None or b is None or types[a_at] not in ELEM_SIZE or not a or not b:
        return None
    ea = ELEM_SIZE[types[a_at]]
    add = 0  # elements of a bias / added matrix (one add per output element)
    if op == "linear":  # x[..., K] · w[N, K]ᵀ (+ bias[N])
        if len(b) != 2 or a[-1] != b[1]:
            return None
        batch, m, k, n = 1, prod(a[:-1]), a[-1], b[0]
        bias = _shape(dims, 2)
        add = 1 if bias is not None and len(types) > 2 and types[2] in ELEM_SIZE and bias else 0
    elif op in ("mm", "addmm", "_scaled_mm"):
        if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
            return None
        batch, m, k, n = 1, a[0], a[1], b[1]
        if op == "addmm":
            add = 1
        elif op == "_scaled_mm":
            bias = _shape(dims, 4)
            add = 1 if bias and len(types) > 4 and types[4] in ELEM_SIZE else 0
    elif op in ("bmm", "baddbmm"):
        if len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1]:
            return None
        batch, m, k, n = a[0], a[1], a[2], b[2]
        add = 1 if op == "baddbmm" else 0
    else:  # matmul: 1-D operands get a dimension added (and dropped), batch dims broadcast
        a2 = [1] + a if len(a) == 1 else a
        b2 = b + [1] if len(b) == 1 else b
        if a2[-1] != b2[-2]:
            return None
        lead = broadcast([a2[:-2], b2[:-2]])
        if lead is None:
            return None
        batch, m, k, n = prod(lead), a2[-2], a2[-1], b2[-1]
    out_elems = batch * m * n
    flops = 2 * batch * m * n * k + add * out_elems
    e_out = ea
    if op == "_scaled_mm" and len(concrete) > 6 and str(concrete[6]).isdigit():
        e_out = SCALAR_TYPE_SIZE.get(int(concrete[6]), ea)
    nbytes = _in_bytes(dims, types) + out_elems * e_out
    return Cost(flops, nbytes, PRECISION.get(types[a_at]), types[a_at], m=m, dims=(m, n, k))


def _attention(op: str, dims: list, types: list, concrete: list) -> Cost | None:
    causal_at, layout = ATTENTION[op]
    q, k, v = _shape(dims, 0), _shape(dims, 1), _shape(dims, 2)
    if q is None or k is None or v is None or types[0] not in ELEM_SIZE:
        return None
    if layout == "bnhd":  # [B, N, H, d]
        if len(q) != 4 or len(k) != 4 or len(v) != 4:
            return None
        batch, nq, nkv, dqk, dv = q[0] * q[2], q[1], k[1], q[3], v[3]
    else:  # [..., N, d]
        if len(q) < 2 or len(k) < 2 or len(v) < 2:
            return None
        batch, nq, nkv, dqk, dv = prod(q[:-2]), q[-2], k[-2], q[-1], v[-1]
    flops = 2 * batch * nq * nkv * (dqk + dv)
    flag = str(concrete[causal_at]) if len(concrete) > causal_at else ""
    causal = flag in ("1", "2") if op == "_efficient_attention_forward" else flag == "True"
    if causal:
        flops //= 2
    eq = ELEM_SIZE[types[0]]
    nbytes = sum(prod(s) * ELEM_SIZE.get(types[i], eq) for i, s in enumerate((q, k, v))) + batch * nq * dv * eq
    return Cost(flops, nbytes, PRECISION.get(types[0]), types[0], m=nq, dims=(nq, nkv, dqk))


def _bytes_only(op: str, dims: list, types: list) -> Cost | None:
    tensors: list[tuple[list[int], int]] = []
    for i, (d, t) in enumerate(zip(dims, types)):
        if isinstance(d, list) and any(isinstance(x, list) for x in d):
            return None  # a tensor list: its element type is not written
        got = _tensor(d, t)
        if got:
            tensors.append((_shape(dims, i) or [], got[1]))
    if not tensors:
        return None
    first_shape, first_size = tensors[0]
    reads = sum(prod(s) * e for s, e in tensors)
    if op in COPIES:
        nbytes = reads  # the destination (first) written, the source read
    elif op in SAME_SHAPE or op.endswith("_"):
        nbytes = reads + prod(first_shape) * first_size  # in place, or one output like the input
    else:
        shape = broadcast([s for s, _ in tensors])
        if shape is None:
            return None
        ranked = [e for s, e in tensors if s] or [e for _, e in tensors]
        nbytes = reads + prod(shape) * max(ranked)  # type promotion: the widest non-scalar input
    typ = next(t for d, t in zip(dims, types) if _tensor(d, t))
    return Cost(0, nbytes, PRECISION.get(typ), typ)
