"""FLOPs and bytes of one operator call from its recorded shapes (``record_shapes``): plain rules
over ``Input Dims`` / ``Input type`` / ``Concrete Inputs``, one call per distinct shape.

GEMMs (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``matmul``, ``linear``, ``_scaled_mm``, and the
serving stacks' GEMMs whose operands are recorded: ``aiter::gemm_a16w16``, ``vllm::*``,
``sgl_kernel::*``): 2·M·N·K, plus M·N for a bias or added matrix, times the batch for batched
forms; bytes = the tensor inputs + the output (an ``out=`` tensor is the output, not an input).
Attention (``scaled_dot_product_attention`` and its flash / efficient / cuDNN variants):
2·B·H·Nq·Nkv·(dqk + dv), halved when causal; bytes = Q, K, V and O. Convolutions:
``flops_conv``. Vector ops (elementwise, copies, softmax, norms, reductions, upsampling):
``flops_vector``. Other namespaces' ops are not counted: their arguments say nothing reliable
about what they compute, the GEMMs named here excepted.
"""

from __future__ import annotations

from math import prod
from typing import Any

from vtui.analysis.gpu.flops_base import (
    ELEM_SIZE,
    PRECISION,
    SCALAR_TYPE_SIZE,
    Cost,
    broadcast,
    shape,
    tensor_bytes,
)
from vtui.analysis.gpu.flops_conv import CONV, conv_cost
from vtui.analysis.gpu.flops_vector import is_vector, needs_concrete, vector_cost

__all__ = ["ELEM_SIZE", "PRECISION", "Cost", "broadcast", "family", "op_cost", "needs_concrete_inputs"]

GEMMS = frozenset({"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "_scaled_mm"})
# GEMMs: the number of positional arguments before an ``out=`` tensor (``aten::mm.out`` records
# (self, mat2, out); Inductor's ``extern_kernels.mm(a, b, out=buf)`` the same).
GEMM_OUT_AT = {"mm": 2, "bmm": 2, "matmul": 2, "addmm": 5, "baddbmm": 5, "linear": 3, "_scaled_mm": 8}
# Serving stacks' GEMM ops whose first two tensor arguments are the operands: x[M, K] and w[N, K]
# ("nk", as F.linear) or b[K, N] ("kn"); "out_kn": out[M, N] first, then a[M, K], b[K, N].
CUSTOM_GEMMS: dict[str, str] = {
    "aiter::gemm_a16w16": "nk", "aiter::gemm_a8w8": "nk", "aiter::gemm_a8w8_bpreshuffle": "nk",
    "aiter::gemm_a8w8_blockscale": "nk", "aiter::tuned_gemm": "nk", "vllm::rocm_unquantized_gemm": "nk",
    "vllm::rocm_unquantized_gemm_impl": "nk", "vllm::cutlass_scaled_mm": "out_kn", "_C::cutlass_scaled_mm": "out_kn",
    "sgl_kernel::fp8_scaled_mm": "kn", "sgl_kernel::int8_scaled_mm": "kn", "sgl_kernel::fp8_blockwise_scaled_mm": "kn",
}
CUSTOM_GEMM_SPACES = frozenset({"aiter", "vllm", "sgl_kernel", "_C"})
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


def base_name(name: str) -> str | None:
    """The ATen op name without ``aten::``; None for other namespaces."""
    return name[6:] if name.startswith("aten::") else None


def custom_gemm_layout(name: str) -> str | None:
    """The operand layout of a serving stack's GEMM op, None for other names."""
    got = CUSTOM_GEMMS.get(name)
    if got is None:
        space, sep, op = name.partition("::")
        if sep and space in CUSTOM_GEMM_SPACES and ("gemm" in op or op.endswith("_mm") or "_mm_" in op) \
                and "moe" not in op and "group" not in op:
            return "nk"  # the common layout (F.linear's); a shape that does not fit it is not counted
    return got


def family(name: str) -> str | None:
    """``gemm``, ``attention``, ``conv``, ``bytes`` (vector ops, judged against bandwidth) or None
    (not counted) for an operator name."""
    op = base_name(name)
    if op is None:
        return "gemm" if custom_gemm_layout(name) else None
    if op in GEMMS:
        return "gemm"
    if op in ATTENTION:
        return "attention"
    if op in CONV:
        return "conv"
    if is_vector(op):
        return "bytes"
    return None


def needs_concrete_inputs(name: str) -> bool:
    """Whether the cost of ``name`` reads ``Concrete Inputs`` (else calls group by dims and types)."""
    op = base_name(name)
    if op is None:
        return False
    return op in ATTENTION or op == "_scaled_mm" or op in CONV or needs_concrete(op)


def op_cost(name: str, dims: Any, types: Any, concrete: Any = None) -> Cost | None:
    """FLOPs and bytes of one call; None where the shapes do not say (missing, malformed, unknown op)."""
    if not isinstance(dims, list) or not isinstance(types, list) or len(types) < len(dims):
        return None
    concrete = concrete if isinstance(concrete, list) else []
    op = base_name(name)
    try:
        if op is None:
            layout = custom_gemm_layout(name)
            return _custom_gemm(layout, dims, types) if layout else None
        if op in GEMMS:
            return _gemm(op, dims, types, concrete)
        if op in ATTENTION:
            return _attention(op, dims, types, concrete)
        if op in CONV:
            return conv_cost(op, dims, types, concrete)
        if is_vector(op):
            return vector_cost(op, dims, types, concrete)
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return None
    return None


def _custom_gemm(layout: str, dims: list, types: list) -> Cost | None:
    """A serving stack's GEMM: M, N, K from its operands (``CUSTOM_GEMMS``); bytes = every tensor
    argument (scales, bias) + the output, which is written in bf16 where the operands are 8-bit
    and in the operands' type otherwise (unless recorded as an argument)."""
    mats = [i for i, d in enumerate(dims) if isinstance(d, list) and len(d) == 2 and types[i] in ELEM_SIZE
            and all(isinstance(x, int) and not isinstance(x, bool) for x in d)]
    out_at = None
    if layout == "out_kn":
        if len(mats) < 3:
            return None
        out_at, mats = mats[0], mats[1:]
    if len(mats) < 2:
        return None
    a, b = dims[mats[0]], dims[mats[1]]
    if layout == "nk":
        if a[1] != b[1]:
            return None
        m, k, n = a[0], a[1], b[0]
    else:
        if a[1] != b[0]:
            return None
        m, k, n = a[0], a[1], b[1]
    if out_at is not None and dims[out_at] != [m, n]:
        return None
    typ = types[mats[0]]
    e_out = ELEM_SIZE[types[out_at]] if out_at is not None else (2 if ELEM_SIZE[typ] == 1 else ELEM_SIZE[typ])
    skip = frozenset({out_at}) if out_at is not None else frozenset()
    bias = [i for i, d in enumerate(dims) if i not in mats[:2] and i != out_at and isinstance(d, list)
            and d == [n] and types[i] in ELEM_SIZE]
    flops = 2 * m * n * k + (m * n if bias else 0)
    return Cost(flops, tensor_bytes(dims, types, skip) + m * n * e_out, PRECISION.get(typ), typ, m=m, dims=(m, n, k))


def _out_tensor(op: str, dims: list, types: list, out_shape: list[int]) -> int | None:
    """The index of a GEMM's ``out=`` tensor (past its own arguments, shaped as the output)."""
    at = GEMM_OUT_AT.get(op, len(dims))
    for i in range(at, len(dims)):
        d = shape(dims, i)
        if d is not None and types[i] in ELEM_SIZE and prod(d) == prod(out_shape) and d:
            return i
    return None


def _gemm(op: str, dims: list, types: list, concrete: list) -> Cost | None:
    a_at = {"addmm": 1, "baddbmm": 1}.get(op, 0)
    a, b = shape(dims, a_at), shape(dims, a_at + 1)
    if a is None or b is None or types[a_at] not in ELEM_SIZE or not a or not b:
        return None
    ea = ELEM_SIZE[types[a_at]]
    add = 0  # elements of a bias / added matrix (one add per output element)
    if op == "linear":  # x[..., K] · w[N, K]ᵀ (+ bias[N])
        if len(b) != 2 or a[-1] != b[1]:
            return None
        batch, m, k, n = 1, prod(a[:-1]), a[-1], b[0]
        bias = shape(dims, 2)
        add = 1 if bias is not None and len(types) > 2 and types[2] in ELEM_SIZE and bias else 0
    elif op in ("mm", "addmm", "_scaled_mm"):
        if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
            return None
        batch, m, k, n = 1, a[0], a[1], b[1]
        if op == "addmm":
            add = 1
        elif op == "_scaled_mm":
            bias = shape(dims, 4)
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
    out_at = _out_tensor(op, dims, types, [batch, m, n])
    if out_at is not None:  # out=: written with its own type, not read
        nbytes = tensor_bytes(dims, types, frozenset({out_at})) + out_elems * ELEM_SIZE[types[out_at]]
    else:
        nbytes = tensor_bytes(dims, types) + out_elems * e_out
    return Cost(flops, nbytes, PRECISION.get(types[a_at]), types[a_at], m=m, dims=(m, n, k))


def _attention(op: str, dims: list, types: list, concrete: list) -> Cost | None:
    causal_at, layout = ATTENTION[op]
    q, k, v = shape(dims, 0), shape(dims, 1), shape(dims, 2)
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
