"""What every FLOP / byte rule reads: element sizes and precision classes of ``Input type`` names,
the cost of one call (``Cost``), and safe readers of ``Input Dims`` / ``Concrete Inputs`` items."""

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


@dataclass(frozen=True)
class Cost:
    flops: int
    bytes: int
    precision: str | None  # bf16 / fp16 / fp32 / fp8 (the peak to compare with), None: no peak
    dtype: str  # the compute operand's type name as written
    m: int = 0  # GEMM rows (tokens): tiny M in decode is memory bound
    dims: tuple[int, ...] = ()  # GEMM M, N, K (attention: Nq, Nkv, d) for the alignment hint


def tensor(dims: Any, typ: Any) -> tuple[int, int] | None:
    """(elements, element size) of one argument when it is a tensor of a known type."""
    if not isinstance(typ, str) or typ not in ELEM_SIZE or not isinstance(dims, list):
        return None
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
        return None
    return prod(dims), ELEM_SIZE[typ]


def shape(dims: list, i: int) -> list[int] | None:
    if i >= len(dims) or not isinstance(dims[i], list):
        return None
    d = dims[i]
    return d if all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in d) else None


def tensor_bytes(dims: list, types: list, skip: frozenset[int] = frozenset()) -> int:
    """Bytes of the tensor arguments, those at ``skip`` left out."""
    total = 0
    for i, (d, t) in enumerate(zip(dims, types)):
        got = None if i in skip else tensor(d, t)
        if got:
            total += got[0] * got[1]
    return total


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


def concrete_ints(concrete: list, i: int) -> list[int] | None:
    """A ``Concrete Inputs`` item as a list of ints ('[1, 2]' or '3'); None when it is not one."""
    if i >= len(concrete) or not isinstance(concrete[i], str):
        return None
    text = concrete[i].strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.lstrip("-").isdigit() for p in parts):
        return None
    return [int(p) for p in parts]


def concrete_flag(concrete: list, i: int) -> bool | None:
    """A ``Concrete Inputs`` item as a bool ('True' / 'False'); None when it is not one."""
    v = concrete[i] if i < len(concrete) else None
    return {"True": True, "False": False, "1": True, "0": False}.get(v) if isinstance(v, str) else None
