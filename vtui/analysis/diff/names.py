"""Kernel names as the aligner compares them, at three levels of likeness.

- ``exact_key``: the name with what changes from build to build off: hash suffixes (a Triton
  kernel's ``_0``, a hex id) — two kernels with equal exact keys are the same kernel.
- ``base_key``: also without template arguments, the parameter list and the return type; an
  Itanium-mangled name reduced to its qualified name (``_ZN5aiter24add_rmsnorm…`` →
  ``aiter::add_rmsnorm_quant_kernel``), plus the first name inside its template arguments where
  the outer one is a generic entry (``ck_tile::kentry`` → ``…::Rmsnorm2dFwd``).
- ``family``: the vendor-neutral kind where known (``Cijk_*`` hipBLASLt/Tensile ≈
  ``sm90_xmma_gemm_*`` cuBLAS ≈ ``nvjet_*`` ≈ CUTLASS GEMMs: ``gemm``; flash / fmha / paged
  attention: ``attention``; RMS/layer norm: ``norm``; memcpy/memset), else "".

Every pattern here is linear-time (no nested quantifiers) and runs once per distinct name.
"""

from __future__ import annotations

import re

_HASH_SUFFIX = re.compile(r"(?:_[0-9a-f]{8,}|_\d{1,4})$")  # triton_poi_fused_add_0, kernel_3f2a9c1e
_MANGLED_LEN = re.compile(r"\d+")
_INNER_NAME = re.compile(r"(?<=[A-Z_])(\d+)")
_GENERIC_ENTRIES = ("kentry", "kernel", "entry", "trampoline_kernel")

FAMILIES: list[tuple[str, re.Pattern[str]]] = [
    ("memcpy", re.compile(r"(?i)^memcpy\b|^\[?memcpy")),
    ("memset", re.compile(r"(?i)^memset\b|^\[?memset")),
    ("gemm", re.compile(r"(?i)^Cijk_|xmma_gemm|^nvjet|gemm|^ampere_\w*(?:gemm|sgemm)|matmul|cutlass\w*(?:gemm|tensorop)")),
    ("attention", re.compile(r"(?i)flash|fmha|paged_?attention|attn|attention")),
    ("norm", re.compile(r"(?i)rms_?norm|layer_?norm")),
    ("allreduce", re.compile(r"(?i)all_?reduce|nccl|rccl")),
]


def exact_key(name: str) -> str:
    return _HASH_SUFFIX.sub("", name.strip())


def _demangle_prefix(name: str) -> str:
    """The nested name of an Itanium-mangled symbol (``_ZN5aiter3fooI…`` → ``aiter::foo``); for a
    generic entry point, with the first name inside its template arguments."""
    i = 3 if name.startswith("_ZN") else 2
    parts: list[str] = []
    while i < len(name):
        m = _MANGLED_LEN.match(name, i)
        if not m:
            break
        n = int(m.group())
        i = m.end()
        if n <= 0 or i + n > len(name):
            break
        parts.append(name[i:i + n])
        i += n
    if parts and parts[-1] in _GENERIC_ENTRIES and i < len(name):
        for m in _INNER_NAME.finditer(name, i):
            n, j = int(m.group(1)), m.end()
            word = name[j:j + n]
            if n >= 4 and len(word) == n and word[0].isalpha() and word.replace("_", "a").isalnum():
                parts.append(word)
                break
    return "::".join(parts) if parts else name


def _strip_templates(text: str) -> str:
    """``text`` without ``<…>`` blocks (nested), one pass."""
    out, depth = [], 0
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


def base_key(name: str) -> str:
    text = exact_key(name)
    if text.startswith("_Z"):
        return _demangle_prefix(text)
    text = _strip_templates(text.replace("(anonymous namespace)", "(anon)").replace("(anon)::", ""))
    cut = text.find("(")
    if cut > 0:  # the parameter list (and anything after it)
        text = text[:cut]
    if text.startswith("void "):
        text = text[5:]
    return text.strip() or exact_key(name)


def family(name: str) -> str:
    base = base_key(name)
    for label, pat in FAMILIES:
        if pat.search(base):
            return label
    return ""
