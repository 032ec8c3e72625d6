"""CUDA / HIP graphs: each ``cudaGraphLaunch`` / ``hipGraphLaunch`` call and the kernels it replayed
(they carry the launch's correlation id; vtui.analysis.launched pairs them), per step; the launch
delay of a graph (its first kernel's start − the launch call's start); and, given vLLM's capture
trace of the same graphs, the captured call stack and shapes of each replayed kernel, found by
matching the kernel names of each capture to each replay in order.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vtui.analysis.basics import Stats
from vtui.analysis.launched import launch_of, owners
from vtui.store.devices import device_work_kinds, name_mask, python_mask, runtime_mask
from vtui.store.store import TraceStore

GRAPH_LAUNCH = re.compile(r"^(cuda|hip|cu)GraphLaunch")
CAPTURE_REGION = re.compile(r"^capture_\d+")  # vLLM / TraceLens: capture_{batch}_{mode}
KERNEL_LAUNCH = re.compile(r"(?i)launch.*kernel|kernel.*launch|^cuLaunch|^cudaLaunch|memcpy|memset")
CAPTURE_DIR = "capture_traces"


@dataclass
class GraphStep:
    index: int
    launches: int
    kernels: int
    kernel_ns: int


@dataclass
class Capture:
    """One captured graph: its region and, per launch call inside it in order, the kernel name,
    the call stack (outermost first) and the shapes of the nearest operator that launched it."""

    name: str
    kernel_names: list[str]
    stacks: list[tuple[str, ...]]
    shapes: list[object]
    ops: list[str]


@dataclass
class CaptureMatch:
    file: str
    captures: int
    replayed_kernels: int  # graph kernels in the replay trace (the range)
    matched: int  # of those, given a captured stack
    by_op: list[tuple[str, str, int, int]] = field(default_factory=list)  # (op, shapes, kernels, kernel_ns)
    origin: dict[int, tuple[int, int]] = field(default_factory=dict)  # replay kernel row -> (capture, position)


@dataclass
class GraphReport:
    present: bool
    launches: int = 0
    kernels: int = 0
    kernel_ns: int = 0  # Σ duration of the work the graph launches replayed
    launch_delay: Stats | None = None  # first kernel start − launch call start, per launch
    per_step: list[GraphStep] = field(default_factory=list)
    launch_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    kernel_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    kernel_launch: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    capture: CaptureMatch | None = None


def graph_launch_mask(store: TraceStore) -> np.ndarray:
    """Per slice: a graph-launch runtime call."""
    if not len(store.slices):
        return np.zeros(0, dtype=bool)
    return runtime_mask(store) & name_mask(store, GRAPH_LAUNCH)


def graph_kernels(store: TraceStore) -> tuple[np.ndarray, np.ndarray]:
    """(device-work rows replayed by a graph launch, in start order; the launch row of each)."""
    is_launch = graph_launch_mask(store)
    if not is_launch.any():
        z = np.zeros(0, dtype=np.int64)
        return z, z
    launch = launch_of(store)
    rows = np.flatnonzero((launch >= 0) & is_launch[np.maximum(launch, 0)] & (device_work_kinds(store) > 0))
    rows = rows[np.argsort(store.slices.start_ns[rows], kind="stable")]
    return rows, launch[rows]


def analyse_graphs(store: TraceStore, t0: int = 0, t1: int | None = None, step_rows: np.ndarray | None = None,
                   capture: TraceStore | None = None, capture_name: str = "") -> GraphReport:
    """Graph launches whose call starts in [t0, t1), their kernels, per step (``step_rows``) and
    matched to ``capture`` when given."""
    t1 = int(store.span_ns) if t1 is None else int(t1)
    is_launch = graph_launch_mask(store)
    if not is_launch.any():
        return GraphReport(False)
    s = store.slices
    calls = np.flatnonzero(is_launch)
    calls = calls[(s.start_ns[calls] >= t0) & (s.start_ns[calls] < t1)]
    calls = calls[np.argsort(s.start_ns[calls], kind="stable")]
    k_rows, k_launch = graph_kernels(store)
    keep = np.isin(k_launch, calls)
    k_rows, k_launch = k_rows[keep], k_launch[keep]
    out = GraphReport(True, len(calls), len(k_rows), int(s.dur_ns[k_rows].sum()),
                      launch_rows=calls, kernel_rows=k_rows, kernel_launch=k_launch)
    if len(k_rows):
        # k_rows are in start order: the first row per launch is its first kernel
        first_of = {}
        for r, lr in zip(k_rows.tolist(), k_launch.tolist()):
            first_of.setdefault(lr, r)
        delays = [int(s.start_ns[r]) - int(s.start_ns[lr]) for lr, r in first_of.items()]
        out.launch_delay = Stats.of(delays)
    if step_rows is not None and len(step_rows):
        own_call = owners(store, step_rows, calls)
        pos = {int(c): int(o) for c, o in zip(calls.tolist(), own_call.tolist())}
        k_own = np.array([pos[int(lr)] for lr in k_launch.tolist()], dtype=np.int64) if len(k_launch) else k_launch
        n = len(step_rows)
        launches = np.bincount(own_call[own_call >= 0], minlength=n)
        kernels = np.bincount(k_own[k_own >= 0], minlength=n)
        k_ns = np.bincount(k_own[k_own >= 0], weights=s.dur_ns[k_rows][k_own >= 0], minlength=n)
        out.per_step = [GraphStep(i, int(launches[i]), int(kernels[i]), int(round(k_ns[i]))) for i in range(n)]
    if capture is not None:
        out.capture = match_capture(store, out, captures_of(capture), capture_name)
    return out


# ---- capture <-> replay ---------------------------------------------------------------------------
def captures_of(cap: TraceStore) -> list[Capture]:
    """The captures in a capture trace: each outermost ``capture_*`` region on a CPU thread (vLLM),
    else the whole trace as one; per launch call inside it (in order) the kernel it launched."""
    s = cap.slices
    if not len(s):
        return []
    launches = np.flatnonzero(runtime_mask(cap) & name_mask(cap, KERNEL_LAUNCH))
    launches = launches[np.argsort(s.start_ns[launches], kind="stable")]
    regions = np.flatnonzero(name_mask(cap, CAPTURE_REGION) & (device_work_kinds(cap) == 0))
    regions = regions[np.isin(s.track[regions], np.unique(s.track[launches]))] if len(launches) else regions[:0]
    if len(regions):
        regions = regions[np.argsort(s.start_ns[regions], kind="stable")]
        own = owners(cap, regions, launches)
    else:
        own = np.zeros(len(launches), dtype=np.int64)
    names_of = [cap.name(int(r)) for r in regions] or ["capture"]
    py = python_mask(cap)
    out = []
    for k, region_name in enumerate(names_of):
        rows = launches[own == k]
        kn, stacks, shapes, ops = [], [], [], []
        for r in rows.tolist():
            args = cap.slice_args(r)
            kernel = args.get("kernel")
            kn.append(kernel if isinstance(kernel, str) else cap.name(r))
            chain, op, shape = [], "", None
            p = int(s.parent[r])
            while p >= 0:
                chain.append(cap.name(p))
                if not op and not py[p] and cap.strings[int(s.cat_id[p])] == "cpu_op":
                    op = cap.name(p)
                    shape = cap.slice_args(p).get("Input Dims")
                p = int(s.parent[p])
            stacks.append(tuple(reversed(chain)))
            shapes.append(shape)
            ops.append(op)
        out.append(Capture(region_name, kn, stacks, shapes, ops))
    return out


def _norm(name: str) -> str:
    return name.strip()


def match_capture(store: TraceStore, rep: GraphReport, caps: list[Capture], file: str = "") -> CaptureMatch:
    """Per graph launch: the capture whose kernel names best match its kernels in order (difflib's
    longest matching blocks); replays with the same name sequence are matched once."""
    s = store.slices
    out = CaptureMatch(file, len(caps), len(rep.kernel_rows), 0)
    if not caps or not len(rep.kernel_rows):
        return out
    cap_names = [[_norm(n) for n in c.kernel_names] for c in caps]
    done: dict[tuple[int, ...], tuple[int, list[tuple[int, int]]]] = {}
    by_op: dict[tuple[str, str], list[int]] = {}
    for lr in rep.launch_rows.tolist():
        rows = rep.kernel_rows[rep.kernel_launch == lr]
        key = tuple(s.name_id[rows].tolist())
        if key not in done:
            names = [_norm(store.strings[i]) for i in key]
            best: tuple[int, list[tuple[int, int]]] = (-1, [])
            for ci, cn in enumerate(cap_names):
                sm = difflib.SequenceMatcher(None, cn, names, autojunk=False)
                pairs = [(a + k, b + k) for a, b, size in sm.get_matching_blocks() for k in range(size)]
                if len(pairs) > len(best[1]):
                    best = (ci, pairs)
            done[key] = best
        ci, pairs = done[key]
        for cpos, rpos in pairs:
            row = int(rows[rpos])
            out.origin[row] = (ci, cpos)
            c = caps[ci]
            acc = by_op.setdefault((c.ops[cpos] or "(no operator)", _shape_text(c.shapes[cpos])), [0, 0])
            acc[0] += 1
            acc[1] += int(s.dur_ns[row])
    out.matched = len(out.origin)
    out.by_op = sorted(((op, sh, v[0], v[1]) for (op, sh), v in by_op.items()), key=lambda x: -x[3])
    return out


def _shape_text(shape: object) -> str:
    return "" if shape is None else str(shape)


def find_capture_traces(trace: Path) -> list[Path]:
    """vLLM's ``capture_traces/`` folder beside a trace (TraceLens's layout): its trace files."""
    folder = (trace if trace.is_dir() else trace.parent) / CAPTURE_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz")))
