"""How a load uses the process's memory: keep big temporary arrays in the heap while building,
then hand what is free back to the OS. (Linux/glibc and numpy knobs; no-ops elsewhere.)

Building the store of a 1 GB trace makes and frees hundreds of arrays of 10-40 MB. By default
glibc gives each one its own fresh mapping and the kernel zero-fills it page by page on first
touch — the build spent more time in page faults than computing (a 5M-element numpy pass: 85 ms
with fresh pages, 28 ms reusing heap memory). numpy's transparent-huge-page hint made that
worse and unsteady here (build 1.2-2.4 s). So during a load: arrays up to 1 GiB come from the
heap and are reused, the heap is not trimmed, numpy's huge-page hint is off; afterwards free
memory goes back to the OS once (``give_back_free_memory``).

Threads started during a load share that one heap: glibc gives a new thread its own arena, so
the build's helper thread (the nesting tree) faulted in ~200 MB of fresh pages of its own and
cost more than it saved (1 GB trace: +55k page faults, +0.3 s CPU, slower); with one arena its
arrays reuse the heap like the main thread's. glibc reads that limit once, when a thread first
needs an arena of its own, so once the build has started a thread it holds for the rest of the
process (setting it back does nothing). That costs little: Python threads allocate under the GIL,
and loads of big traces run in the loader or CLI process, which ends after them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import numpy as np

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8  # mallopt parameters (malloc.h)
_DURING_LOAD = 1 << 30
# After the load: glibc's own defaults can't be restored (setting them turns off its dynamic
# tuning), so its upper limits: arrays up to 32 MiB reuse heap memory, bigger ones are mapped.
_AFTER_MMAP, _AFTER_TRIM = 32 << 20, 64 << 20


@cache
def _libc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 — both must exist (glibc)
        return libc
    except (OSError, AttributeError):
        return None


def _hugepage_setter():
    core = getattr(np, "_core", None) or getattr(np, "core", None)  # numpy 2 / numpy 1
    return getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)


@contextmanager
def load_memory_settings() -> Iterator[None]:
    """The settings above for the duration of a load. Process-wide: two loads overlapping in
    threads may leave them on, which only costs the hint and keeps more freed memory around."""
    libc, hugepages = _libc(), _hugepage_setter()
    before = hugepages(False) if hugepages else None
    if libc:
        libc.mallopt(_M_MMAP_THRESHOLD, _DURING_LOAD)
        libc.mallopt(_M_TRIM_THRESHOLD, _DURING_LOAD)
        libc.mallopt(_M_ARENA_MAX, 1)  # threads that first allocate now use the main heap
    try:
        yield
    finally:
        if libc:
            libc.mallopt(_M_MMAP_THRESHOLD, _AFTER_MMAP)
            libc.mallopt(_M_TRIM_THRESHOLD, _AFTER_TRIM)
        if hugepages:
            hugepages(before)


def give_back_free_memory() -> None:
    """Return freed heap to the OS (glibc keeps it otherwise: the thousands of per-chunk arrays
    freed after merging left ~60 % of the resident memory behind, measured)."""
    libc = _libc()
    if libc:
        libc.malloc_trim(0)
