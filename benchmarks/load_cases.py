"""Load cases run by ``benchmarks/child.py`` whose peak RSS (and, for the cores, CPU) is the whole
process's: the msgspec floor (whole and in pieces), vtui's load with its phases, and the load's
phases timed for the cores model. Like ``whole_process.py`` this module imports only the standard
library at load, so the harness adds as little as it can to what these figures count.
"""

# No postponed annotations: the floor's Struct is made inside a function, where msgspec must
# read its field types as objects.
import resource
import threading
import time
from typing import Any


def _both() -> tuple[resource.struct_rusage, resource.struct_rusage]:
    return resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)


def usage() -> dict:
    """This process and its finished children: CPU split, page faults, context switches."""
    me, kids = _both()
    return {"user_s": me.ru_utime + kids.ru_utime, "sys_s": me.ru_stime + kids.ru_stime,
            "self_cpu_s": me.ru_utime + me.ru_stime, "minflt": me.ru_minflt + kids.ru_minflt,
            "majflt": me.ru_majflt + kids.ru_majflt, "nvcsw": me.ru_nvcsw + kids.ru_nvcsw,
            "nivcsw": me.ru_nivcsw + kids.ru_nivcsw,
            "read_mb": (me.ru_inblock + kids.ru_inblock) * 512 / 1e6}  # from the disk, not the page cache


def usage_since(before: dict) -> dict:
    now = usage()
    return {k: round(now[k] - before[k], 3) for k in now}


def cpu_s() -> float:
    """This process and its finished children (decoders, the app's loader), user + system."""
    return sum(r.ru_utime + r.ru_stime for r in _both())


def _event_type() -> Any:
    """The floor's minimal event: typed fields, args kept raw, no GC tracking."""
    import msgspec

    class Ev(msgspec.Struct, gc=False):
        ph: str = ""
        name: str = ""
        cat: str = ""
        ts: float = 0.0
        dur: float = 0.0
        pid: Any = None
        tid: Any = None
        args: msgspec.Raw = msgspec.Raw(b"")

    return Ev


def floor(path: str) -> dict:
    """Read (and gunzip) the file and decode every event into the minimal Struct, in one array."""
    import gzip

    import msgspec

    ev = _event_type()
    doc = msgspec.defstruct("Doc", [("traceEvents", list[ev])], gc=False)  # type: ignore[valid-type]
    u0 = usage()
    cpu0 = cpu_s()
    t = time.perf_counter()
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    decoded: Any = msgspec.json.decode(data, type=doc)
    events = decoded.traceEvents
    dt = time.perf_counter() - t
    cpu = cpu_s()
    return {"seconds": dt, "cpu_s": cpu - cpu0, "events": len(events),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **usage_since(u0)}


def chunked_floor(path: str) -> dict:
    """The floor 64 MiB of events at a time (one array of a 10 GB file's events cannot fit): the
    whole process's CPU-s, imports included; seconds from the read on."""
    import mmap

    import msgspec

    chunk = 64 << 20
    t = time.perf_counter()
    decode = msgspec.json.Decoder(list[_event_type()]).decode  # type: ignore[misc]
    with open(path, "rb") as fh:
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    # benchmarks/synth.py writes one event per line, each starting '{"ph"', the array closing with '\n]'
    pos = data.find(b"[", data.find(b'"traceEvents"')) + 1
    end = data.rfind(b"\n]")
    buf = bytearray(chunk + (1 << 20))
    events = 0
    while pos < end:
        cut = data.find(b'\n{"ph"', min(pos + chunk, end), end)
        cut = end if cut < 0 else cut
        last = data.rfind(b"}", pos, cut) + 1  # drop the comma between this piece and the next
        size = last - pos
        if len(buf) < size + 2:
            buf = bytearray(size + 2)
        buf[0:1] = b"["
        buf[1 : size + 1] = data[pos:last]
        buf[size + 1 : size + 2] = b"]"
        events += len(decode(memoryview(buf)[: size + 2]))
        pos = cut + 1
    r = resource.getrusage(resource.RUSAGE_SELF)
    return {"seconds": time.perf_counter() - t, "cpu_s": r.ru_utime + r.ru_stime, "events": events,
            "peak_rss_mb": r.ru_maxrss / 1024}


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        return int(next(line for line in fh if line.startswith("VmRSS")).split()[1]) / 1024


def vtui_load(path: str, mode: str) -> dict:
    """vtui's load in ``mode`` (cold, cold1, cold2: no cache with the decoders vtui picks, 1, 2;
    first: writing the cache; warm: reopening it; app: as the app opens a trace), with the CPU
    before the build (read + decode), of the build, and the whole process's peak RSS."""
    import vtui.load.trace as trace

    phases: dict = {}
    build = trace.build_store

    def build_store(*a: Any, **k: Any) -> Any:  # the CPU before the build, the build's, and after
        phases["decode"] = usage_since(u0)
        b0 = usage()
        try:
            return build(*a, **k)
        finally:
            phases["build"] = usage_since(b0)

    trace.build_store = build_store
    u0 = usage()
    cpu0 = cpu_s()
    t = time.perf_counter()
    if mode == "app":  # loader process, decoders, cache, mapped entry
        from pathlib import Path

        from vtui.load.background import load_in_background

        store = load_in_background(Path(path), lambda _: None, cache=True)
    else:
        kw = {"cold": dict(cache=False), "cold1": dict(cache=False, jobs=1), "cold2": dict(cache=False, jobs=2),
              "first": dict(cache=True), "warm": dict(cache=True)}[mode]
        store = trace.load_trace(path, **kw)  # type: ignore[arg-type]
    dt = time.perf_counter() - t
    cpu = cpu_s() - cpu0
    return {"seconds": dt, "cpu_s": cpu, "events": store.event_count, "slices": len(store.slices),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "child_peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "resident_mb": _rss_mb(),
            "store_bytes_per_event": store.nbytes / max(store.event_count, 1),
            "args_mb": sum(int(t.args_len.sum()) for t in (store.slices, store.instants)) / 1e6,
            **usage_since(u0), "phases": phases}


def cores_load(path: str, jobs: str) -> dict:
    """A cold load with ``jobs`` decoders, each phase's wall and CPU marked in process: whole phases
    the process's CPU (all its threads), pieces run on a thread that thread's CPU. ``cpu_s`` is the
    whole process's and its children's, start-up included."""
    import os

    import vtui.io.columns as columns
    import vtui.load.parallel as parallel
    import vtui.load.trace as trace
    import vtui.store.build as build
    import vtui.store.flows as flows
    import vtui.store.nesting as nesting

    marks: dict[str, tuple[float, float]] = {}
    lock = threading.Lock()

    def timed(owner: Any, name: str, key: str, clock: Any) -> None:
        fn = getattr(owner, name)

        def wrapper(*a: Any, **k: Any) -> Any:
            t, c = time.perf_counter(), clock()
            try:
                return fn(*a, **k)
            finally:
                with lock:  # (pieces finish on several threads)
                    wall, cpu = marks.get(key, (0.0, 0.0))
                    marks[key] = (wall + time.perf_counter() - t, cpu + clock() - c)

        setattr(owner, name, wrapper)

    timed(trace, "scan_trace", "decode", time.process_time)
    timed(trace, "build_store", "build", time.process_time)
    timed(parallel, "_join_in_order", "join", time.thread_time)
    timed(columns.ColumnSink, "absorb", "absorb", time.thread_time)
    timed(nesting, "_lane_depths", "lanes", time.thread_time)
    timed(nesting, "_tree_depth", "tree", time.thread_time)
    timed(nesting, "_tree_piece", "tree", time.thread_time)
    timed(build, "_gathers", "gathers", time.thread_time)
    timed(build, "_times", "times", time.thread_time)
    timed(build, "_complete_slices", "x_slices", time.thread_time)
    timed(flows, "_enclose", "bind", time.thread_time)
    timed(build, "_flow_chains", "flow_chains", time.thread_time)
    timed(build, "build_flows", "flows", time.thread_time)
    timed(build, "order_by", "sorts", time.thread_time)
    t = time.perf_counter()
    store = trace.load_trace(path, cache=False, jobs=int(jobs))
    load = time.perf_counter() - t
    me, kids = _both()
    out = {"load_s": load, "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
           "self_cpu_s": me.ru_utime + me.ru_stime, "events": store.event_count, "cpus": len(os.sched_getaffinity(0))}
    for key, (wall, cpu) in marks.items():
        out[key], out[key + "_cpu"] = wall, cpu
    return out
