"""Communication kernels: the one rule the GPU breakdown, precision, outliers, the critical path
and the ranks analysis share.

A kernel is communication when its name is one of the collective libraries' or an engine's own
collective kernel: NCCL / RCCL, MSCCL++, NVSHMEM, oneCCL, DeepEP and other all-to-all kernels,
vLLM's / SGLang's custom all-reduce (``cross_device_reduce``, ``quick_all_reduce``) and PyTorch's
symmetric-memory all-reduce (``multimem_all_reduce``, ``one_shot_all_reduce``). Its time is
waiting on and moving data between devices: never compute, never a kernel outlier.

The patterns are plain alternations of literals (no nested repetition): matching is linear in the
name, and each interned name is matched once per store.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from vtui.store.devices import string_mask

if TYPE_CHECKING:
    from vtui.store.store import TraceStore

# (family, pattern): the first that matches names the library. Order matters: a library's own
# all-reduce is that library's before it is a generic "collective".
COMM_FAMILIES: list[tuple[str, str]] = [
    ("rccl", r"rccl"),  # before NCCL: RCCL's kernels take ncclDevComm* arguments
    ("nccl", r"nccl"),
    ("msccl++", r"msccl"),
    ("nvshmem", r"nvshmem"),
    ("deepep", r"deep_?ep"),
    ("oneccl", r"oneccl|(?:^|[^a-z0-9])ccl[_:]"),
    ("custom all-reduce", r"cross_device_reduce|custom_?all_?reduce|quick_?all_?reduce|quick_?reduce"),
    ("symmetric memory", r"multimem|symm_?mem|one_shot_all_reduce|two_shot_all_reduce"),
    ("collective", r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv"),
]
_FAMILIES = [(label, re.compile(p, re.IGNORECASE)) for label, p in COMM_FAMILIES]
COMM_KERNEL = re.compile("|".join(f"(?:{p})" for _, p in COMM_FAMILIES), re.IGNORECASE)


def is_comm(name: str) -> bool:
    """A communication kernel's name."""
    return COMM_KERNEL.search(name) is not None


def comm_family(name: str) -> str | None:
    """The library a communication kernel belongs to ("nccl", "custom all-reduce", ...); None
    when the name is not communication."""
    for label, regex in _FAMILIES:
        if regex.search(name):
            return label
    return None


def comm_names(store: TraceStore) -> np.ndarray:
    """Per interned string: a communication kernel name (memoised per store)."""
    return store.memo(("comm_names", COMM_KERNEL.pattern), lambda: string_mask(store, COMM_KERNEL.search))


def comm_rows(store: TraceStore, rows: np.ndarray) -> np.ndarray:
    """Per given slice row: its name is a communication kernel's."""
    named = comm_names(store)
    if not named.any():
        return np.zeros(len(rows), dtype=bool)
    return named[store.slices.name_id[np.asarray(rows, dtype=np.int64)]]
