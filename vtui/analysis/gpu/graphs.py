"""CUDA / HIP graphs: each ``cudaGraphLaunch`` / ``hipGraphLaunch`` call and the kernels it replayed
(they carry the launch's correlation id; vtui.analysis.base.launched pairs them), per step; the launch
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

from vtui.analysis.base.launched import launch_of, owners
from vtui.analysis.base.stats import Stats
from vtui.store.devices import cpu_op_mask, device_work_kinds, name_mask, python_mask, runtime_mask
from vtui.store.slicetime import TimeRange, over
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
    # per launch: the nearest enclosing operator with a roofline rule (its row in the capture
    # trace, -1: none), its name and its recorded shapes (dims, types, concrete inputs)
    cost_rows: list[int] = field(default_factory=list)
    cost_ops: list[str] = field(default_factory=list)
    cost_args: list[tuple[object, object, object]] = field(default_factory=list)


@dataclass
class CaptureMatch:
    file: str
    captures: int
    replayed_kernels: int  # graph kernels in the replay trace (the range)
    matched: int  # of those, given a captured stack
    by_op: list[tuple[str, str, int, int]] = field(default_factory=list)  # (op, shapes, kernels, kernel_ns)
    # per matched replay kernel: its row, the capture and the position in it (see replay_origin)
    origin_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    origin_capture: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    origin_pos: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    caps: list[Capture] = field(default_factory=list, repr=False)
    # per graph launch whose replay skipped captured kernels inside the part it replayed (a while
    # node's missing iterations, kernels the profiler dropped): (launch row, captured kernels not replayed)
    holes: list[tuple[int, int]] = field(default_factory=list, repr=False)


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


def analyse_graphs(store: TraceStore, rng: TimeRange | None = None, step_rows: np.ndarray | None = None,
                   capture: TraceStore | None = None, capture_name: str = "") -> GraphReport:
    """Graph launches whose call starts in ``rng`` (its end excluded; the whole trace when None),
    their kernels, per step (``step_rows``) and matched to ``capture`` when given."""
    rng = over(store, rng)
    t0, t1 = rng.t0, rng.t1
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
        # per launch: its first kernel (k_rows are in start order, so the first row of each launch)
        order = np.argsort(k_launch, kind="stable")
        kl = k_launch[order]
        heads = order[np.concatenate(([0], np.flatnonzero(np.diff(kl)) + 1))]
        out.launch_delay = Stats.of(s.start_ns[k_rows[heads]].astype(np.int64) - s.start_ns[k_launch[heads]].astype(np.int64))
    if step_rows is not None and len(step_rows):
        own_call = owners(store, step_rows, calls)
        by_row = np.argsort(calls, kind="stable")  # a kernel's launch -> that call's position, by binary search
        k_own = own_call[by_row[np.searchsorted(calls[by_row], k_launch)]] if len(k_launch) else k_launch
        n = len(step_rows)
        launches = np.bincount(own_call[own_call >= 0], minlength=n)
        kernels = np.bincount(k_own[k_own >= 0], minlength=n)
        k_ns = np.bincount(k_own[k_own >= 0], weights=s.dur_ns[k_rows][k_own >= 0], minlength=n)
        out.per_step = [GraphStep(i, int(a), int(b), int(round(c)))
                        for i, (a, b, c) in enumerate(zip(launches.tolist(), kernels.tolist(), k_ns.tolist()))]
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
    has_rule = _rule_mask(cap)
    out = []
    for k, region_name in enumerate(names_of):
        rows = launches[own == k]
        kn, stacks, shapes, ops = [], [], [], []
        c_rows: list[int] = []
        c_ops: list[str] = []
        c_args: list[tuple[object, object, object]] = []
        for r in rows.tolist():
            args = cap.slice_args(r)
            kernel = args.get("kernel")
            kn.append(kernel if isinstance(kernel, str) else cap.name(r))
            chain, op, shape, costed = [], "", None, -1
            p = int(s.parent[r])
            while p >= 0:
                chain.append(cap.name(p))
                if not op and not py[p] and cap.strings[int(s.cat_id[p])] == "cpu_op":
                    op = cap.name(p)
                    shape = cap.slice_args(p).get("Input Dims")
                if costed < 0 and has_rule[p]:
                    costed = p
                p = int(s.parent[p])
            stacks.append(tuple(reversed(chain)))
            shapes.append(shape)
            ops.append(op)
            c_rows.append(costed)
            c_ops.append(cap.name(costed) if costed >= 0 else "")
            a = cap.slice_args(costed) if costed >= 0 else {}
            c_args.append((a.get("Input Dims"), a.get("Input type"), a.get("Concrete Inputs")))
        out.append(Capture(region_name, kn, stacks, shapes, ops, c_rows, c_ops, c_args))
    return out


def _rule_mask(cap: TraceStore) -> np.ndarray:
    """Per slice of a capture trace: a CPU operator whose name has a roofline rule."""
    from vtui.analysis.gpu.flops import family  # noqa: PLC0415 - the rules, only where a capture is read

    rule = np.fromiter((family(n) is not None for n in cap.strings), dtype=bool, count=len(cap.strings))
    return rule[cap.slices.name_id] & cpu_op_mask(cap) & (cap.slices.args_len > 0)


def _norm(name: str) -> str:
    return name.strip()


def match_capture(store: TraceStore, rep: GraphReport, caps: list[Capture], file: str = "") -> CaptureMatch:
    """Per graph launch: the capture whose kernel names best match its kernels in order (difflib's
    longest matching blocks); replays with the same name sequence are matched once, and the
    replayed time is summed per captured kernel with numpy (a long run has thousands of replays)."""
    s = store.slices
    out = CaptureMatch(file, len(caps), len(rep.kernel_rows), 0, caps=caps)
    if not caps or not len(rep.kernel_rows):
        return out
    cap_names = [[_norm(n) for n in c.kernel_names] for c in caps]
    done: dict[tuple[int, ...], tuple[int, np.ndarray, np.ndarray]] = {}
    per_ns = [np.zeros(len(c.kernel_names), dtype=np.int64) for c in caps]
    per_n = [np.zeros(len(c.kernel_names), dtype=np.int64) for c in caps]
    order = np.argsort(rep.kernel_launch, kind="stable")  # by launch; start order kept inside each
    kl = rep.kernel_launch[order]
    cuts = np.concatenate(([0], np.flatnonzero(np.diff(kl)) + 1, [len(kl)]))
    o_rows, o_cap, o_pos = [], [], []
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        rows = rep.kernel_rows[order[a:b]]
        key = tuple(s.name_id[rows].tolist())
        if key not in done:
            names = [_norm(store.strings[i]) for i in key]
            best: tuple[int, list[tuple[int, int]]] = (-1, [])
            for ci, cn in enumerate(cap_names):
                sm = difflib.SequenceMatcher(None, cn, names, autojunk=False)
                pairs = [(x + k, y + k) for x, y, size in sm.get_matching_blocks() for k in range(size)]
                if len(pairs) > len(best[1]):
                    best = (ci, pairs)
            ci, pairs = best
            done[key] = (ci, np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64))
        ci, cpos, rpos = done[key]
        if ci < 0 or not len(cpos):
            continue
        # The replayed part of the capture is cpos[0]..cpos[-1]; a piecewise graph replays one such
        # part, so only what is missing inside it is a hole (its ends are where the piece ends).
        missing = int(cpos[-1] - cpos[0] + 1 - len(cpos))
        if missing > 0:
            out.holes.append((int(kl[a]), missing))
        matched = rows[rpos]
        np.add.at(per_ns[ci], cpos, s.dur_ns[matched].astype(np.int64))
        np.add.at(per_n[ci], cpos, 1)
        o_rows.append(matched)
        o_cap.append(np.full(len(matched), ci, dtype=np.int64))
        o_pos.append(cpos)
    if o_rows:
        out.origin_rows, out.origin_capture, out.origin_pos = (np.concatenate(o_rows), np.concatenate(o_cap),
                                                               np.concatenate(o_pos))
    out.matched = len(out.origin_rows)
    by_op: dict[tuple[str, str], list[int]] = {}
    for ci, c in enumerate(caps):
        for k in np.flatnonzero(per_n[ci]).tolist():
            acc = by_op.setdefault((c.ops[k] or "(no operator)", _shape_text(c.shapes[k])), [0, 0])
            acc[0] += int(per_n[ci][k])
            acc[1] += int(per_ns[ci][k])
    out.by_op = sorted(((op, sh, v[0], v[1]) for (op, sh), v in by_op.items()), key=lambda x: -x[3])
    return out


def replay_origin(match: CaptureMatch, row: int) -> tuple[tuple[str, ...], object] | None:
    """The captured call stack (outermost first) and shapes of a replayed kernel row; None when it
    was not matched."""
    hit = np.flatnonzero(match.origin_rows == row)
    if not len(hit):
        return None
    c, pos = match.caps[int(match.origin_capture[hit[0]])], int(match.origin_pos[hit[0]])
    return c.stacks[pos], c.shapes[pos]


def _shape_text(shape: object) -> str:
    return "" if shape is None else str(shape)


def find_capture_traces(trace: Path) -> list[Path]:
    """vLLM's ``capture_traces/`` folder beside a trace (TraceLens's layout): its trace files."""
    folder = (trace if trace.is_dir() else trace.parent) / CAPTURE_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz")))
