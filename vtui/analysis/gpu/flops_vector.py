"""FLOPs and bytes of the vector operators (judged against bandwidth): elementwise forward and
backward, copies, softmax, norms and their backward, reductions, upsampling.

FLOPs are counted as TraceLens counts them: one per output element for elementwise ops and
copies, one per input element for reductions, TraceLens's normalisation formulas for norms.
Bytes are the tensors read plus the tensors written; an ``out=`` tensor (a tensor argument past
the op's own inputs, as ``aten::mul.out`` and Inductor's calls record it) is the write, not a read.
"""

from __future__ import annotations

from math import prod

from vtui.analysis.gpu.flops_base import (
    ELEM_SIZE,
    PRECISION,
    Cost,
    broadcast,
    concrete_flag,
    concrete_ints,
    shape,
    tensor,
)

# Elementwise ops and the number of their positional arguments before an ``out=`` tensor.
ELEMENTWISE: dict[str, int] = {
    **dict.fromkeys(("neg", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu", "abs", "cos", "sin",
                     "erf", "reciprocal", "clamp_min", "clamp_max"), 1),
    **dict.fromkeys(("mul", "div", "pow", "maximum", "minimum", "max", "min", "gelu", "sigmoid_backward", "tanh_backward",
                     "silu_backward"), 2),
    **dict.fromkeys(("add", "sub", "where", "clamp", "masked_fill", "threshold_backward", "gelu_backward"), 3),
}
INPLACE = frozenset({
    "add_", "sub_", "mul_", "div_", "relu_", "silu_", "gelu_", "clamp_", "masked_fill_", "neg_", "exp_",
    "tanh_", "sigmoid_", "pow_", "rsqrt_", "sqrt_", "reciprocal_", "clamp_min_", "clamp_max_",
})
LIKE_INPUT = frozenset({"softmax", "_softmax", "log_softmax", "_log_softmax", "clone", "contiguous"})
NORMS = frozenset({"layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm", "group_norm",
                   "native_group_norm", "batch_norm", "native_batch_norm", "_batch_norm_impl_index",
                   "cudnn_batch_norm"})
BATCH_NORM_BACKWARD = frozenset({"native_batch_norm_backward", "batch_norm_backward", "cudnn_batch_norm_backward"})
COPIES = frozenset({"copy_", "copy"})  # writes into its first input: bytes = source read + destination written
# Reductions: the index of their ``dim`` argument.
REDUCTIONS: dict[str, int] = {
    **dict.fromkeys(("sum", "mean", "max", "min", "amax", "amin", "prod", "std", "var", "logsumexp", "cumsum",
                     "cumprod"), 1),
    **dict.fromkeys(("norm", "linalg_vector_norm", "linalg_norm"), 2),
}
SCANS = frozenset({"cumsum", "cumprod"})  # one output per input element
UPSAMPLE_PREFIXES = ("upsample_", "_upsample_")
VECTOR = frozenset(ELEMENTWISE) | INPLACE | LIKE_INPUT | NORMS | BATCH_NORM_BACKWARD | COPIES | frozenset(REDUCTIONS)
NEEDS_CONCRETE = frozenset(REDUCTIONS) | frozenset({"batch_norm", "native_batch_norm", "_batch_norm_impl_index"})


def is_vector(op: str) -> bool:
    return op in VECTOR or op.startswith(UPSAMPLE_PREFIXES)


def needs_concrete(op: str) -> bool:
    """Whether the cost reads ``Concrete Inputs`` (reduced dims, output sizes, training flags)."""
    return op in NEEDS_CONCRETE or op.startswith(UPSAMPLE_PREFIXES)


def vector_cost(op: str, dims: list, types: list, concrete: list) -> Cost | None:
    if any(isinstance(d, list) and any(isinstance(x, list) for x in d) for d in dims):
        return None  # a tensor list: its element type is not written
    if op in ("max", "min") and len(dims) > 1 and tensor(dims[1], types[1]) and shape(dims, 1):
        return _elementwise(op, dims, types)  # max(a, b): elementwise, as maximum
    if op in REDUCTIONS:
        return _reduction(op, dims, types, concrete)
    if op.startswith(UPSAMPLE_PREFIXES):
        return _upsample(dims, types, concrete)
    if op in NORMS:
        return _norm(op, dims, types, concrete)
    if op in BATCH_NORM_BACKWARD:
        return _batch_norm_backward(op, dims, types)
    return _elementwise(op, dims, types)


def _tensors(dims: list, types: list) -> list[tuple[int, list[int], int]]:
    """(argument index, shape, element size) of each tensor argument of a known type."""
    out = []
    for i, (d, t) in enumerate(zip(dims, types)):
        got = tensor(d, t)
        if got:
            out.append((i, shape(dims, i) or [], got[1]))
    return out


def _typ(dims: list, types: list, i: int) -> str:
    return types[i] if tensor(dims[i], types[i]) else next(t for d, t in zip(dims, types) if tensor(d, t))


def _elementwise(op: str, dims: list, types: list) -> Cost | None:
    ts = _tensors(dims, types)
    if not ts:
        return None
    first_at, first_shape, first_size = ts[0]
    if op in COPIES:  # the destination (first) written, the source read
        return Cost(prod(first_shape), sum(prod(s) * e for _, s, e in ts), PRECISION.get(types[first_at]),
                    types[first_at])
    if op in LIKE_INPUT or op in INPLACE:
        n = prod(first_shape)
        return Cost(n, sum(prod(s) * e for _, s, e in ts) + n * first_size, PRECISION.get(types[first_at]),
                    types[first_at])
    arity = ELEMENTWISE.get(op, len(dims))
    ins = [t for t in ts if t[0] < arity]
    out = [t for t in ts if t[0] >= arity]
    if not ins:
        return None
    shape_out = broadcast([s for _, s, _ in ins])
    if shape_out is None:
        return None
    reads = sum(prod(s) * e for _, s, e in ins)
    if out:  # out=: the tensor written is recorded, with its own type
        write = prod(out[-1][1]) * out[-1][2]
    else:
        ranked = [e for _, s, e in ins if s] or [e for _, _, e in ins]
        write = prod(shape_out) * max(ranked)  # type promotion: the widest non-scalar input
    typ = types[ins[0][0]]
    return Cost(prod(shape_out), reads + write, PRECISION.get(typ), typ)


def _norm(op: str, dims: list, types: list, concrete: list) -> Cost | None:
    """TraceLens's normalisation FLOPs (2 per element to normalise, 3 per element for the
    statistics, 6 per channel); bytes: the tensors read + the output like the input."""
    ts = _tensors(dims, types)
    x = shape(dims, 0)
    if not ts or ts[0][0] != 0 or not x:
        return None
    n, e = prod(x), ts[0][2]
    reads = sum(prod(s) * sz for _, s, sz in ts)
    if op in ("rms_norm", "_fused_rms_norm"):  # TraceLens's RMSNorm: rows·(2C + 2) + (1 or 2)·N
        w = shape(dims, 2)  # (input, normalized_shape, weight, eps)
        c = prod(w) if w else (x[-1] if x else 1)
        rows = n // c if c else 0
        flops = rows * (2 * c + 2) + n * (2 if w else 1)
    else:
        if "batch_norm" in op or op.endswith("group_norm"):
            c = x[1] if len(x) > 1 else 1
        else:
            w = shape(dims, 2)
            c = prod(w) if w else (x[-1] if x else 1)
        training = True
        if "batch_norm" in op:
            training = concrete_flag(concrete, 5) is not False  # (input, weight, bias, mean, var, training, …)
        flops = 6 * c + 2 * n + (3 * n if training else 0)
    return Cost(flops, reads + n * e, PRECISION.get(types[0]), types[0])


def _batch_norm_backward(op: str, dims: list, types: list) -> Cost | None:
    """grad_input = f(grad_out, input, stats): 9 FLOPs per element (TraceLens, training);
    bytes: the tensors read + grad_input, grad_weight and grad_bias written."""
    at = 0 if op == "cudnn_batch_norm_backward" else 1
    x = shape(dims, at)
    ts = _tensors(dims, types)
    if not x or len(x) < 2 or not ts:
        return None
    n, c = prod(x), x[1]
    typ = _typ(dims, types, at)
    e = ELEM_SIZE[typ]
    return Cost(9 * n, sum(prod(s) * sz for _, s, sz in ts) + n * e + 2 * c * e, PRECISION.get(typ), typ)


def _reduction(op: str, dims: list, types: list, concrete: list) -> Cost | None:
    """One FLOP per input element (TraceLens); bytes: the input + the output, whose size follows
    the reduced dims and ``keepdim`` in ``Concrete Inputs`` (all dims when none is given)."""
    x = shape(dims, 0)
    got = tensor(dims[0], types[0]) if dims else None
    if x is None or not got:
        return None
    n, e = got
    if op in SCANS:
        out = n
    else:
        dim_at = REDUCTIONS[op]
        red = concrete_ints(concrete, dim_at)
        keep = next((f for f in (concrete_flag(concrete, i) for i in range(dim_at + 1, len(concrete)))
                     if f is not None), False) if red is not None else False
        if red is None or not x:
            out = 1
        else:
            axes = {d % len(x) for d in red if -len(x) <= d < len(x)}
            out = prod(1 if i in axes else s for i, s in enumerate(x)) if keep else \
                prod(s for i, s in enumerate(x) if i not in axes)
    write = out * e
    if op in ("max", "min") and concrete_ints(concrete, 1) is not None:  # max.dim: values and int64 indices
        write += out * 8
    return Cost(n, n * e + write, PRECISION.get(types[0]), types[0])


def _upsample(dims: list, types: list, concrete: list) -> Cost | None:
    """Output = the input's batch and channels × ``output_size`` (else the input's spatial dims ×
    ``scale_factors``); one FLOP per output element (TraceLens's nearest model)."""
    x = shape(dims, 0)
    got = tensor(dims[0], types[0]) if dims else None
    if not x or not got or len(x) < 3:
        return None
    size = concrete_ints(concrete, 1)
    if size is None or len(size) != len(x) - 2:
        # ``.vec`` overloads: scale_factors after output_size (and align_corners for the linear modes)
        scales = next((f for f in (_floats(concrete, i) for i in range(2, len(concrete)))
                       if f is not None and len(f) == len(x) - 2), None)
        if scales is None:
            return None
        size = [int(s * f) for s, f in zip(x[2:], scales)]
    out = prod(x[:2]) * prod(size)
    n, e = got
    return Cost(out, n * e + out * e, PRECISION.get(types[0]), types[0])


def _floats(concrete: list, i: int) -> list[float] | None:
    if i >= len(concrete) or not isinstance(concrete[i], str):
        return None
    text = concrete[i].strip()
    if not text.startswith("["):
        return None
    text = text.strip("[]")
    try:
        return [float(p) for p in text.split(",") if p.strip()] or None
    except ValueError:
        return None
