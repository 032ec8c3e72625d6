"""Cache-like events: anything whose name says ``cache``, split into hits, misses and evictions
where the name or the args say so. GPU work is not one: a kernel named for a cache
(``reshape_and_cache_flash``, ``store_kvcache``: writing the KV cache) is compute, not a hit or miss;
nor is a Python frame, named by its source path (``…/mem_cache/memory_pool.py(…): set_kv_buffer``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from vtui.analysis.base.selection import instant_rows
from vtui.analysis.steps.step_names import parse_step_name
from vtui.store.devices import device_work_kinds, python_mask
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore

CACHE = re.compile(r"(?i)cache")
_KINDS = [("evict", re.compile(r"(?i)evict")), ("miss", re.compile(r"(?i)miss")), ("hit", re.compile(r"(?i)\bhits?\b|_hit|hit_"))]


@dataclass
class CacheReport:
    present: bool
    events: int = 0
    slice_time_ns: int = 0
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    by_name: list[tuple[str, int]] = field(default_factory=list)  # (name, count), most first

    @property
    def hit_rate(self) -> float | None:
        seen = self.hits + self.misses
        return 100.0 * self.hits / seen if seen else None


def _kind(text: str) -> str | None:
    for kind, regex in _KINDS:
        if regex.search(text):
            return kind
    return None


def analyse_caches(store: TraceStore, rng: TimeRange | None = None) -> CacheReport:
    """Cache events in ``rng`` (the whole trace when None)."""
    rng = over(store, rng)
    # An engine's step annotation is no cache event though it may say "cached" (vLLM's
    # execute_new_{n}_cached_{m} counts the requests already running).
    is_cache = np.fromiter((bool(CACHE.search(s)) and parse_step_name(s) is None for s in store.strings), dtype=bool,
                           count=len(store.strings))
    s, inst = store.slices, store.instants
    rs = rng.slices  # the one range rule; time clipped to the range
    pos = np.flatnonzero(is_cache[s.name_id[rs.rows]]) if len(s) else np.zeros(0, dtype=np.int64)
    srows = rs.rows[pos]
    if len(srows):
        srows = srows[(device_work_kinds(store)[srows] == 0) & ~python_mask(store)[srows]]
    irows = instant_rows(store, rng.t0, rng.t1)
    irows = irows[is_cache[inst.name_id[irows]]] if len(irows) else irows
    out = CacheReport(bool(len(srows) or len(irows)))
    counts: dict[str, int] = {}
    items = [(store.name(r), store.slice_args, r) for r in np.asarray(srows).tolist()]
    items += [(store.strings[inst.name_id[r]], store.instant_args, r) for r in np.asarray(irows).tolist()]
    for name, args_of, r in items:
        counts[name] = counts.get(name, 0) + 1
        kind = _kind(name)
        if kind is None:
            args = args_of(r)
            # String values ("result": "miss") and true flags ("cache_hit": true) say what happened.
            words = [f"{k}={v}" for k, v in args.items() if isinstance(v, str)] + [k for k, v in args.items() if v is True]
            kind = _kind(" ".join(words)) if words else None
        if kind == "hit":
            out.hits += 1
        elif kind == "miss":
            out.misses += 1
        elif kind == "evict":
            out.evictions += 1
    out.events = len(items)
    out.slice_time_ns = int(rs.clip[pos].sum())
    out.by_name = sorted(counts.items(), key=lambda kv: -kv[1])
    return out
