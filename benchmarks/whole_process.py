"""Cases whose whole process is measured from outside (CPU-s and peak RSS of the child, start-up
included), run by ``benchmarks/child.py``. This module imports only what it needs at load, so the
harness adds as little as it can to what these figures count."""

from __future__ import annotations

import time
from pathlib import Path


def read_files(folder: str) -> dict:
    """The read floor: every file's bytes."""
    for f in sorted(Path(folder).iterdir()):
        f.read_bytes()
    return {}


def decode_files(folder: str) -> dict:
    """Every file decoded to Python objects by msgspec (what a dict-building reader pays)."""
    import msgspec

    for f in sorted(Path(folder).iterdir()):
        msgspec.json.decode(f.read_bytes())
    return {}


def reopen(trace: str) -> dict:
    """Import vtui and open ``trace`` (from its cache entry when there is one)."""
    from vtui.load.trace import load_trace

    return {"events": load_trace(trace).event_count}


def export(trace: str, frac: str, out: str, cache: str) -> dict:
    """Open ``trace``'s cache entry in ``cache`` and export the middle ``frac`` of its span."""
    from vtui.export.trace import export_range
    from vtui.load.trace import load_trace
    from vtui.options import LoadOptions

    c0 = time.process_time()
    store = load_trace(trace, options=LoadOptions(cache_dir=Path(cache)))
    c1, w1 = time.process_time(), time.perf_counter()
    span = store.span_ns
    t0, t1 = int(span * (0.5 - float(frac) / 2)), int(span * (0.5 + float(frac) / 2))
    plan = export_range(store, out, t0, t1, overwrite=True)
    c2, w2 = time.process_time(), time.perf_counter()
    return {"open_cpu": c1 - c0, "export_cpu": c2 - c1, "export_wall": w2 - w1, "events": plan.events}


def cold_load(trace: str) -> dict:
    """Import vtui and load ``trace`` without the cache, with one decoder (the pftrace reader is
    serial): the process's own wall, CPU-s (start-up included) and peak RSS."""
    import resource

    from vtui.load.trace import load_trace

    t = time.perf_counter()
    store = load_trace(trace, cache=False, jobs=1)
    wall = time.perf_counter() - t
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "slices": len(store.slices), "rss_mb": ru.ru_maxrss / 1024}

