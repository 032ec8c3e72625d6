"""FLOPs and bytes of convolutions, forward and backward, from the recorded shapes and the
stride / padding / dilation / transposed / groups arguments in ``Concrete Inputs``.

Forward: 2 · output elements · (input channels / groups · kernel size), plus one add per output
element for a bias; bytes: input + weight + bias + output. Backward: the input gradient and the
weight gradient each cost what the forward costs, the bias gradient one add per output element,
each only where ``output_mask`` asks for it.
"""

from __future__ import annotations

from math import prod

from vtui.analysis.gpu.flops_base import ELEM_SIZE, PRECISION, Cost, concrete_ints, shape

# Per op: the argument index of (bias, stride, padding, dilation, transposed, output_padding);
# -1 where the op has no such argument (cudnn_convolution: no bias, not transposed).
# ``conv1d`` / ``conv2d`` / ``conv3d`` are not costed: they call ``aten::convolution``, whose
# subtree holds the bias add too (and which TraceLens reports).
FORWARD: dict[str, tuple[int, int, int, int, int, int]] = {
    "convolution": (2, 3, 4, 5, 6, 7),
    "_convolution": (2, 3, 4, 5, 6, 7),
    "cudnn_convolution": (-1, 3, 2, 4, -1, -1),
    "miopen_convolution": (2, 4, 3, 5, -1, -1),
}
BACKWARD = frozenset({"convolution_backward"})
CONV = frozenset(FORWARD) | BACKWARD


def _out_shape(x: list[int], w: list[int], stride: list[int], pad: list[int], dil: list[int],
               transposed: bool, out_pad: list[int]) -> list[int] | None:
    nd = len(x) - 2
    stride, pad, dil, out_pad = (v * nd if len(v) == 1 else v for v in (stride, pad, dil, out_pad))
    if min(len(stride), len(pad), len(dil), len(out_pad)) < nd:
        return None
    spatial = []
    for i in range(nd):
        k = dil[i] * (w[2 + i] - 1) + 1
        if transposed:
            spatial.append((x[2 + i] - 1) * stride[i] - 2 * pad[i] + k + out_pad[i])
        else:
            spatial.append((x[2 + i] + 2 * pad[i] - k) // stride[i] + 1)
    if any(s <= 0 for s in spatial):
        return None
    return [x[0], w[1] if transposed else w[0]] + spatial


def _arg(concrete: list, at: int, default: list[int]) -> list[int] | None:
    if at < 0 or at >= len(concrete) or concrete[at] in ("", None):
        return default
    return concrete_ints(concrete, at)


def conv_cost(op: str, dims: list, types: list, concrete: list) -> Cost | None:
    if op in BACKWARD:
        return _backward(dims, types, concrete)
    bias_at, s_at, p_at, d_at, t_at, op_at = FORWARD[op]
    x, w = shape(dims, 0), shape(dims, 1)
    if not x or not w or len(x) < 3 or len(w) != len(x) or types[0] not in ELEM_SIZE:
        return None
    transposed = t_at >= 0 and t_at < len(concrete) and concrete[t_at] == "True"
    got = _geometry(x, w, concrete, (s_at, p_at, d_at, op_at), transposed)
    if got is None:
        return None
    out = got
    bias = shape(dims, bias_at) if bias_at >= 0 else None
    has_bias = bool(bias) and bias_at < len(types) and types[bias_at] in ELEM_SIZE
    flops = (prod(x) if transposed else prod(out)) * 2 * prod(w[1:])  # per input element when transposed
    flops += prod(out) if has_bias else 0
    e = ELEM_SIZE[types[0]]
    nbytes = (prod(x) + prod(w) + (out[1] if has_bias else 0) + prod(out)) * e
    return Cost(flops, nbytes, PRECISION.get(types[0]), types[0], m=out[0], dims=tuple(out))


def _geometry(x: list[int], w: list[int], concrete: list, at: tuple[int, int, int, int],
              transposed: bool) -> list[int] | None:
    nd = len(x) - 2
    s_at, p_at, d_at, op_at = at
    stride, pad, dil = _arg(concrete, s_at, [1] * nd), _arg(concrete, p_at, [0] * nd), _arg(concrete, d_at, [1] * nd)
    out_pad = _arg(concrete, op_at, [0] * nd)
    if stride is None or pad is None or dil is None or out_pad is None or 0 in stride:
        return None  # e.g. padding='same' (a string): the output size is not written
    return _out_shape(x, w, stride, pad, dil, transposed, out_pad)


def _backward(dims: list, types: list, concrete: list) -> Cost | None:
    """convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask)."""
    g, x, w = shape(dims, 0), shape(dims, 1), shape(dims, 2)
    if not g or not x or not w or len(x) < 3 or types[1] not in ELEM_SIZE:
        return None
    mask = [f == "True" for f in str(concrete[10]).strip("[]").replace(" ", "").split(",")] \
        if len(concrete) > 10 and str(concrete[10]).startswith("[") else [True, True, True]
    mask = (mask + [True] * 3)[:3]
    bias_sizes = concrete_ints(concrete, 3)
    has_bias = mask[2] and bool(bias_sizes) and bias_sizes != [0]
    transposed = len(concrete) > 7 and concrete[7] == "True"
    fwd = (prod(x) if transposed else prod(g)) * 2 * prod(w[1:])
    flops = fwd * (int(mask[0]) + int(mask[1])) + (prod(g) if has_bias else 0)
    e = ELEM_SIZE[types[1]]
    nbytes = 0
    if mask[0]:
        nbytes += (prod(g) + prod(w) + prod(x)) * e  # grad_output and weight read, grad_input written
    if mask[1]:
        nbytes += (prod(g) + prod(x) + prod(w)) * e  # grad_output and input read, grad_weight written
    if has_bias:
        nbytes += (prod(g) + g[1]) * e
    return Cost(flops, nbytes, PRECISION.get(types[1]), types[1], m=x[0], dims=tuple(x))
