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



def measure(*cmd: str) -> dict:
    """Run ``cmd``: its wall time, CPU-s and peak RSS (of the biggest of its processes waited for:
    vtui's own, its decoders are smaller), the size of its output, its exit status."""
    import resource
    import subprocess

    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True)
    dt = time.perf_counter() - t
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"rc": p.returncode, "seconds": dt, "cpu_s": r.ru_utime + r.ru_stime, "peak_rss_mb": r.ru_maxrss / 1024,
            "out_bytes": len(p.stdout), "err": p.stderr[-400:].decode("utf-8", "replace")}


def cli_info(trace: str) -> dict:
    """``vtui info TRACE`` in this process: its whole CPU-s, start-up included."""
    import resource

    from vtui.cli import main

    main(["info", trace])
    r = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpu_s": r.ru_utime + r.ru_stime}


def app_first_frame(trace: str) -> dict:
    """The app headless on ``trace`` until its first frame with the trace (the end of the first
    screen update that drew timeline lines) and one pause later (``settled``): wall clock times
    (time.time, for the parent to subtract its start) and the CPU-s of this process and its
    children (loader, decoders), start-up included."""
    import asyncio
    import resource

    from textual.app import App
    from textual.strip import Strip

    from vtui.ui.app import VtuiApp
    from vtui.ui.timeline.lanes import Timeline

    def cpu_s() -> float:
        return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF,
                                                                              resource.RUSAGE_CHILDREN)))

    # App._display is where Textual hands each update to the terminal, headless too.
    drawn: list[int] = []
    frame: dict = {}
    result: dict = {}
    shown = asyncio.Event()
    line = Timeline.render_line

    def render_line(self: Timeline, y: int) -> Strip:
        drawn.append(1)
        return line(self, y)

    display = App._display

    def _display(self, screen, renderable):
        display(self, screen, renderable)
        if drawn and not frame:
            frame.update(done=time.time(), cpu_s=cpu_s())
            shown.set()

    Timeline.render_line = render_line  # type: ignore[method-assign]
    App._display = _display  # type: ignore[method-assign]

    async def first_frame(pilot):
        # Waits without polling the app (a pilot.pause every 10 ms cost ~0.15 CPU-s per second of a
        # cold load, which vtui TRACE never pays); a load error is looked for twice a second.
        app = pilot.app
        while not frame and app.load_error is None:
            try:
                await asyncio.wait_for(shown.wait(), 0.5)
            except TimeoutError:
                pass
        await pilot.pause()  # what comes right after the first frame (the memory rows, a second layout)
        result.update(frame, settled=time.time(), settled_cpu_s=cpu_s(), error=app.load_error)
        app.exit()

    VtuiApp(trace).run(headless=True, size=(200, 60), auto_pilot=first_frame)
    return result
