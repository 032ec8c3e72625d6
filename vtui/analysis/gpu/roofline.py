"""Roofline per operator: FLOPs and bytes from the recorded shapes (``vtui.analysis.gpu.flops``), the GPU
time of the kernels each call launched, the device's peaks (``vtui.analysis.gpu.peaks``).

Candidates are CPU operators whose name has a rule (GEMM, attention, convolution, vector) and that
start in the range; a candidate inside another candidate (``aten::native_layer_norm`` under
``aten::layer_norm``) is left to its outermost one, so no work is counted twice. A GEMM that holds
another GEMM (``aten::matmul`` over ``aten::bmm``, ``aten::linear`` over ``aten::addmm``), or
``scaled_dot_product_attention`` over the backend op it chose, is a wrapper: the inner op, which launches the kernel, is costed
and timed, and the wrapper's other work (the ``contiguous`` copies it makes) is its own rows. Only the candidates' args are read (three keys,
interned by ``shapes.shape_ids``), and the cost is worked out once per distinct (name, shapes).
An op's GPU time is the device work launched by runtime calls inside it (flows, else
correlation ids); roofline time = max(FLOPs / peak of its precision, bytes / bandwidth);
``pct_of_roofline`` = roofline time / GPU time × 100.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field

import msgspec
import numpy as np

from vtui.analysis.base.launched import device_work_launches, launch_table
from vtui.analysis.base.shapes import raw_value, shape_ids
from vtui.analysis.gpu.flops import Cost, family, needs_concrete_inputs, op_cost
from vtui.analysis.gpu.peaks import DATASHEET, DeviceMatch, DevicePeaks, trace_device
from vtui.store.devices import cpu_op_mask
from vtui.store.grouping import distinct_ids
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore

try:
    from _vtui_fastcols import launched_sum as _launched_sum
except ImportError:  # pragma: no cover - depends on the install (an older build lacks it too)
    _launched_sum = None


@dataclass
class OpRoofline:
    name: str
    shape: str  # the tensor arguments' dims, e.g. "8944x1024 · 1024x1024"
    dtype: str
    family: str  # gemm / attention / conv / bytes (vector ops: judged against bandwidth)
    count: int
    flops: int  # all calls together
    bytes: int
    gpu_ns: int  # device work the calls launched
    cpu_ns: int  # the calls' own durations (the time basis of a trace without device work)
    tflops: float | None  # achieved, on the time basis
    tbps: float | None
    roofline_ns: float | None  # max(FLOPs / peak, bytes / bandwidth); None: device or precision unknown
    pct_of_roofline: float | None
    bound: str | None  # compute / memory (None without peaks)
    hint: str | None = None
    m: int = 0
    dims: tuple[int, ...] = ()
    types: tuple[str, ...] = ()  # every tensor argument's type (``dtype`` is the compute operand's)
    from_capture: bool = False  # graph-replayed kernels costed from the capture trace's shapes

    @property
    def lost_ns(self) -> float:
        """GPU time above the roofline: what the Insights screen ranks by."""
        if self.roofline_ns is None:
            return float(self.gpu_ns)
        return max(self.gpu_ns - self.roofline_ns, 0.0)


@dataclass
class RooflineReport:
    present: bool  # the range has operators with shapes that a rule covers
    device: DeviceMatch
    time_basis: str = "gpu"  # "gpu": launched device work; "cpu": no device work in the trace
    ops: list[OpRoofline] = field(default_factory=list)  # every (name, shape) group, most GPU time first
    calls: int = 0  # candidate calls counted
    without_shapes: int = 0  # candidate calls whose shapes did not say (no args, malformed)
    flops: int = 0
    bytes: int = 0
    why: str = ""  # why there is no percentage (device unknown), or why nothing at all
    capture: str = ""  # the capture trace whose shapes cost the graph-replayed kernels ("": none)


ATTENTION_DISPATCHER = "aten::scaled_dot_product_attention"  # picks a backend op (flash, efficient, math)
KEY_TABLE_PER_ROW = 4  # (name, shape) keys are counted in a table while it is this small per row, else sorted


def _family_codes(store: TraceStore) -> np.ndarray:
    """Per string id: 0 no rule, 1 GEMM, 2 attention, 3 vector (bytes), 4 convolution."""
    codes = {"gemm": 1, "attention": 2, "bytes": 3, "conv": 4}
    return store.memo("roofline_family", lambda: np.fromiter(
        (codes.get(family(s) or "", 0) for s in store.strings), dtype=np.int8, count=len(store.strings)))


def _wrappers(store: TraceStore, mask: np.ndarray, fam: np.ndarray) -> np.ndarray:
    """Per slice: a GEMM candidate with another GEMM candidate inside it (``matmul`` over ``bmm``),
    or ``scaled_dot_product_attention`` over the backend op it chose: a wrapper, left out so the
    op that launches the kernel is timed alone."""
    s = store.slices
    out = np.zeros(len(mask), dtype=bool)
    dispatcher = np.isin(s.name_id, store.string_ids(ATTENTION_DISPATCHER))
    for code in (1, 2):
        inner = mask & (fam[s.name_id] == code)
        outer = inner if code == 1 else inner & dispatcher  # the flash / efficient op, not its own inner call
        anc = s.parent[np.flatnonzero(inner)].astype(np.int64)
        for _ in range(512):  # one level per pass; nesting depth bounds it
            anc = anc[anc >= 0]
            if not len(anc):
                break
            out[anc[outer[anc]]] = True
            anc = s.parent[anc].astype(np.int64)
    return out


def _outermost(store: TraceStore, rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Of ``rows`` (all in ``mask``), those with no ancestor in ``mask``."""
    return rows[_outermost_mask(store, rows, mask)]


def _outermost_mask(store: TraceStore, rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
    parent = store.slices.parent
    keep = np.ones(len(rows), dtype=bool)
    anc = parent[rows].astype(np.int64)
    for _ in range(512):  # one level per pass over the candidates only; nesting depth bounds it
        live = anc >= 0
        if not live.any():
            break
        keep[live] &= ~mask[anc[live]]
        anc[live] = parent[anc[live]]
    return keep


def _shape_label(dims, types) -> str:
    parts = []
    for d, t in zip(dims if isinstance(dims, list) else [], types if isinstance(types, list) else []):
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d) and isinstance(t, str) and t not in ("Scalar", ""):
            parts.append("x".join(map(str, d)))
    return " · ".join(parts)


def _gpu_time(store: TraceStore, ops: np.ndarray, starts: np.ndarray | None = None,
              ends: np.ndarray | None = None, use_c: bool = True) -> np.ndarray:
    """Per op row (outermost candidates): the device time launched from inside it. ``starts`` /
    ``ends``: the ops' own, where the caller has them. The launches come from the store's one
    launch table (``launched.launch_table``: in memory, shared with the GPU analysis, in call
    start order); per thread, the C helper merges them with the ops (``launched_sum``: no
    temporaries), else numpy's binary searches (the reference)."""
    out = np.zeros(len(ops), dtype=np.int64)
    if not len(ops):
        return out
    table = launch_table(store)
    if not table.shape[1]:
        return out
    s = store.slices
    l_start, l_end, l_track, g_start, g_end = (np.ascontiguousarray(table[i]) for i in (2, 3, 4, 5, 6))  # rows of a sorted copy may not be
    o_track = np.asarray(s.track[ops])
    o_start = np.asarray(s.start_ns[ops]) if starts is None else starts
    o_end = np.asarray(s.end_ns[ops]) if ends is None else ends
    tracks = distinct_ids(o_track)
    for t in tracks:
        one = len(tracks) == 1
        mine = np.arange(len(ops)) if one else np.flatnonzero(o_track == t)
        st = o_start if one else o_start[mine]
        sort = len(st) > 1 and not (st[1:] >= st[:-1]).all()  # rows usually come in time order (not across lanes)
        if sort:
            order = np.argsort(st, kind="stable")
            mine, st = mine[order], st[order]
        en = o_end[mine] if sort or not one else o_end
        if use_c and _launched_sum is not None:
            direct = one and not sort
            got = out if direct else np.zeros(len(mine), dtype=np.int64)
            st_c, en_c = np.ascontiguousarray(st, dtype=np.int64), np.ascontiguousarray(en, dtype=np.int64)
            if _launched_sum(st_c, en_c, l_start, l_end, l_track, g_start, g_end, int(t), got):
                if not direct:
                    out[mine] += got
                continue
        sel = np.flatnonzero(l_track == t)
        k = np.searchsorted(st, l_start[sel], side="right") - 1
        hit = (k >= 0) & (en[np.maximum(k, 0)] >= l_end[sel])
        lit = sel[hit]
        out += np.bincount(mine[k[hit]], weights=g_end[lit] - g_start[lit], minlength=len(ops)).astype(np.int64)
    return out


def launched_gpu_ns(store: TraceStore, rows: np.ndarray) -> np.ndarray:
    """Per CPU operator row, the device time of the work launched from inside it: the roofline's
    GPU time of an op. The rows must not nest in one another (a launch counts for one of them)."""
    return _gpu_time(store, np.asarray(rows, dtype=np.int64))


def analyse_roofline(store: TraceStore, rng: TimeRange | None = None, peaks: str = DATASHEET) -> RooflineReport:
    """The roofline of the ops starting in ``rng`` (its end excluded; the whole trace when None)
    against the peaks ``peaks`` (datasheet / achievable / a peak table file, ``peaks.trace_device``);
    once per store, range and peaks (the report is shared: callers do not change it)."""
    rng = over(store, rng)
    return store.memo(("roofline_report", rng.t0, rng.t1, peaks), lambda: _analyse(store, rng.t0, rng.t1, peaks))


def _candidates(store: TraceStore, fam: np.ndarray) -> np.ndarray:
    """Per slice: a CPU operator whose name has a rule, that has args and is no GEMM wrapper."""
    s = store.slices

    def build() -> np.ndarray:
        mask = cpu_op_mask(store) & (fam[s.name_id] > 0) & (s.args_len > 0)
        return mask & ~_wrappers(store, mask, fam)
    return store.memo("roofline_candidates", build)


@dataclass(frozen=True)
class GroupRoofline:
    """The roofline ops among one group of slices (an aggregation row): their calls together."""

    calls: int
    flops: int
    bytes: int
    gpu_ns: int
    roofline_ns: float | None  # None: some call's precision has no peak, or the device is unknown

    @property
    def tflops(self) -> float | None:
        return self.flops / self.gpu_ns / 1e3 if self.gpu_ns > 0 and self.flops else None

    @property
    def pct_of_roofline(self) -> float | None:
        return 100.0 * self.roofline_ns / self.gpu_ns if self.roofline_ns is not None and self.gpu_ns > 0 else None


GROUP_MEMO_SLOTS = 8  # the slice table's last few (range, tracks, grouping): going back costs nothing


def group_roofline(store: TraceStore, rows: np.ndarray, keys: np.ndarray,
                   starts_in: tuple[int, int] | None = None) -> dict[int, GroupRoofline]:
    """Per group of ``rows`` (``keys``: a group id per row), the FLOPs, bytes, launched GPU time and
    roofline time of its whole calls that are roofline ops (outermost candidates whose shapes say);
    groups with none are absent. The same rules and costs as ``analyse_roofline``; with
    ``starts_in`` = (t0, t1), its range rule too: only the calls starting in [t0, t1).

    Memoised per store on the content of (rows, keys, starts_in), the last ``GROUP_MEMO_SLOTS``
    kept: the slice table asks again on every refresh, mostly with inputs it had before."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    digest = hashlib.blake2b(rows.tobytes(), digest_size=16)
    digest.update(keys.tobytes())
    key = (len(rows), digest.digest(), None if starts_in is None else (int(starts_in[0]), int(starts_in[1])))
    slots: OrderedDict[tuple, dict[int, GroupRoofline]] = store.memo("group_roofline_slots", OrderedDict)
    got = slots.get(key)
    if got is None:
        got = _group_roofline_now(store, rows, keys, starts_in)
        slots[key] = got
        while len(slots) > GROUP_MEMO_SLOTS:
            slots.popitem(last=False)
    else:
        slots.move_to_end(key)
    return dict(got)  # the values are frozen; the dict is the caller's own


def _group_roofline_now(store: TraceStore, rows: np.ndarray, keys: np.ndarray,
                        starts_in: tuple[int, int] | None) -> dict[int, GroupRoofline]:
    if starts_in is not None:
        start = store.slices.start_ns[rows]
        keep = (start >= starts_in[0]) & (start < starts_in[1])
        rows, keys = rows[keep], keys[keep]
    fam = _family_codes(store)
    if not len(rows) or not fam.any():
        return {}
    mask = _candidates(store, fam)
    sel = np.flatnonzero(mask[rows])
    sel = sel[_outermost_mask(store, rows[sel], mask)]
    if not len(sel):
        return {}
    ops = rows[sel]
    _n, key_of, costs = _cost_groups(store, ops, fam)
    peaks = trace_device(store).peaks if len(device_work_launches(store)[0]) else None  # no GPU work: no roofline
    known = np.array([c is not None for *_, c in costs], dtype=bool)
    flops = np.array([c.flops if c else 0 for *_, c in costs], dtype=np.int64)
    nbytes = np.array([c.bytes if c else 0 for *_, c in costs], dtype=np.int64)
    times = [roofline_time(c.flops, c.bytes, c.precision, peaks, family(name) == "bytes")[0] if c and peaks else None
             for name, _d, _t, c in costs]
    roof = np.array([np.nan if t is None else t for t in times], dtype=np.float64)  # 0 ns (empty tensors) is a figure
    ok = known[key_of]
    group, key_of = keys[sel][ok].astype(np.int64), key_of[ok]
    gpu = _gpu_time(store, ops[ok])
    size = int(group.max()) + 1 if len(group) else 0
    sums = {name: np.zeros(size, dtype=np.int64) for name in ("calls", "flops", "bytes", "gpu")}
    for name, values in (("calls", 1), ("flops", flops[key_of]), ("bytes", nbytes[key_of]), ("gpu", gpu)):
        np.add.at(sums[name], group, values)  # exact int64 sums (FLOPs pass 2**53)
    r = roof[key_of]
    roof_sum = np.bincount(group, weights=np.nan_to_num(r), minlength=size)
    unknown = np.bincount(group, weights=np.isnan(r), minlength=size)
    return {g: GroupRoofline(int(sums["calls"][g]), int(sums["flops"][g]), int(sums["bytes"][g]), int(sums["gpu"][g]),
                             None if unknown[g] else float(roof_sum[g]))
            for g in np.flatnonzero(sums["calls"]).tolist()}


def _cost_groups(store: TraceStore, rows: np.ndarray, fam: np.ndarray) -> tuple[int, np.ndarray, list]:
    """Group ``rows`` by (name, shapes): the number of groups, per row its group (groups in
    (name id, shape) order), and per group (name, dims, types, Cost or None) worked out once.
    One gather per row: a small table over (distinct name, distinct shapes) holds each pair's key."""
    s = store.slices
    nid = np.asarray(s.name_id[rows])
    tid, triples = shape_ids(store, rows)
    # Concrete inputs matter to a few names (is_causal, out_dtype, reduced dims, conv strides):
    # others group by (dims, types), so a scalar argument that varies does not split their groups.
    pairs: dict[tuple[bytes, bytes], int] = {}
    pair_of = np.array([pairs.setdefault((d, t), len(pairs)) for d, t, _ in triples], dtype=np.int64)
    rep = np.zeros(len(pairs), dtype=np.int64)  # per pair, a triple holding it (the last: any has its dims and types)
    rep[pair_of] = np.arange(len(triples), dtype=np.int64)
    names = np.flatnonzero(np.bincount(nid)) if len(nid) else np.zeros(0, dtype=np.int64)  # distinct, ascending
    needs = np.array([needs_concrete_inputs(store.strings[n]) for n in names.tolist()], dtype=bool)
    width = len(pairs) + len(triples)  # shape keys: pairs first, then triples
    code = np.zeros(int(names[-1]) + 1 if len(names) else 0, dtype=np.int64)
    code[names] = np.arange(len(names), dtype=np.int64)
    space = len(names) * width
    if space <= KEY_TABLE_PER_ROW * len(rows) + 1024:  # the usual case: few names and shapes, one gather from a small table
        shape_key = np.where(needs[:, None], len(pairs) + np.arange(len(triples))[None, :], pair_of[None, :])
        table = np.arange(len(names), dtype=np.int64)[:, None] * width + shape_key
        keys = table[code[nid], tid] if len(nid) else np.zeros(0, dtype=np.int64)
        counts = np.bincount(keys, minlength=space)
        present = np.flatnonzero(counts)
        group = np.zeros(len(counts), dtype=np.int64)
        group[present] = np.arange(len(present), dtype=np.int64)
        key_of = group[keys]
    else:  # many distinct shapes (concrete inputs that vary): sort the keys
        c = code[nid]
        keys = c * width + np.where(needs[c], len(pairs) + tid, pair_of[tid])
        present, key_of = np.unique(keys, return_inverse=True)
        key_of = key_of.reshape(-1)
    costs = []
    for key in present.tolist():
        c, sk = divmod(key, width)
        n = int(names[c])
        name = store.strings[n]
        dims_raw, types_raw, conc_raw = triples[sk - len(pairs)] if sk >= len(pairs) else triples[int(rep[sk])]
        dims, types = raw_value(msgspec.Raw(dims_raw)), raw_value(msgspec.Raw(types_raw))
        conc = raw_value(msgspec.Raw(conc_raw)) if needs[c] else None
        costs.append((name, dims, types, op_cost(name, dims, types, conc)))
    return len(present), key_of, costs


def _analyse(store: TraceStore, t0: int, t1: int, peaks: str) -> RooflineReport:
    device = trace_device(store, peaks)
    s = store.slices
    report = RooflineReport(False, device, why=device.why)
    if not len(s):
        return report
    fam = _family_codes(store)
    if not fam.any():
        return report
    mask = _candidates(store, fam)
    rows = np.flatnonzero(mask)
    rows = rows[(s.start_ns[rows] >= t0) & (s.start_ns[rows] < t1)]
    rows = _outermost(store, rows, mask)
    if not len(rows):
        return report
    has_device_work = bool(len(device_work_launches(store)[0]))
    report.time_basis = "gpu" if has_device_work else "cpu"
    starts, ends = np.asarray(s.start_ns[rows]), np.asarray(s.end_ns[rows])
    gpu = _gpu_time(store, rows, starts, ends)
    cpu = (ends - starts).astype(np.int64)
    n, key_of, costs = _cost_groups(store, rows, fam)
    count = np.bincount(key_of, minlength=n)
    gpu_sum = np.bincount(key_of, weights=gpu, minlength=n)
    cpu_sum = np.bincount(key_of, weights=cpu, minlength=n)
    for g, (name, dims, types, cost) in enumerate(costs):
        if cost is None:
            report.without_shapes += int(count[g])
            continue
        report.ops.append(_row(name, _shape_label(dims, types), cost, int(count[g]), int(gpu_sum[g]), int(cpu_sum[g]),
                               device, report.time_basis, _tensor_types(dims, types)))
    basis = (lambda o: o.gpu_ns) if report.time_basis == "gpu" else (lambda o: o.cpu_ns)
    label_types(report.ops)
    report.ops.sort(key=lambda o: (-basis(o), -o.flops, -o.bytes, o.name, o.shape, o.dtype))
    report.calls = int(sum(o.count for o in report.ops))
    report.flops = int(sum(o.flops for o in report.ops))
    report.bytes = int(sum(o.bytes for o in report.ops))
    report.present = bool(report.ops)
    if report.present and not has_device_work:
        report.why = "the trace has no GPU work: rates are over the operators' CPU time, with no peak to compare"
    return report


def _tensor_types(dims, types) -> tuple[str, ...]:
    if not isinstance(dims, list) or not isinstance(types, list):
        return ()
    return tuple(t for d, t in zip(dims, types) if isinstance(d, list) and isinstance(t, str) and t not in ("Scalar", "ScalarList", ""))


def label_types(ops: list[OpRoofline]) -> None:
    """Where rows share (name, shape, dtype) but not their tensor types (a ``copy_`` bf16 ← fp32
    beside a bf16 ← bf16), their dtype says every tensor's type: ``bf16←fp32``."""
    seen: dict[tuple[str, str, str], set[tuple[str, ...]]] = {}
    for o in ops:
        seen.setdefault((o.name, o.shape, o.dtype), set()).add(o.types)
    for o in ops:
        if len(seen[(o.name, o.shape, o.dtype)]) > 1 and o.types:
            o.dtype = "←".join(short_type(t) for t in o.types)


def short_type(name: str) -> str:
    return {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64", "long int": "i64",
            "int": "i32", "short int": "i16"}.get(name, name.replace("c10::", ""))


def _row(name: str, shape: str, cost: Cost, count: int, gpu_ns: int, cpu_ns: int, device: DeviceMatch,
         basis: str, types: tuple[str, ...] = (), from_capture: bool = False) -> OpRoofline:
    flops, nbytes = cost.flops * count, cost.bytes * count
    t = gpu_ns if basis == "gpu" else cpu_ns
    tflops = flops / t / 1e3 if t > 0 and flops else None  # FLOP per ns = GFLOP/s; bytes-only ops: none
    tbps = nbytes / t / 1e3 if t > 0 else None
    roof = pct = bound = None
    if device.peaks is not None and basis == "gpu":
        roof, bound = roofline_time(flops, nbytes, cost.precision, device.peaks, family(name) == "bytes")
        if roof is not None and gpu_ns > 0:
            pct = 100.0 * roof / gpu_ns
    op = OpRoofline(name, shape, cost.dtype, family(name) or "", count, flops, nbytes, gpu_ns, cpu_ns, tflops, tbps,
                    roof, pct, bound, m=cost.m, dims=cost.dims, types=types, from_capture=from_capture)
    op.hint = roofline_hint(op, device)
    return op


def roofline_time(flops: int, nbytes: int, precision: str | None, peaks: DevicePeaks,
                  vector: bool = False) -> tuple[float | None, str | None]:
    """(max(FLOPs / peak, bytes / bandwidth) in ns, compute / memory); (None, None) where the
    precision has no peak on the device. ``vector`` ops (elementwise, norms, reductions) are
    judged against bandwidth alone: the table's peaks are the matrix units'."""
    mem_ns = nbytes / (peaks.tbps * 1e3)
    if flops == 0 or vector:
        return mem_ns, "memory"
    peak = peaks.tflops.get(precision) if precision else None
    if not peak:
        return None, None
    compute_ns = flops / (peak * 1e3)
    return max(compute_ns, mem_ns), "compute" if compute_ns >= mem_ns else "memory"


def roofline_hint(op: OpRoofline, device: DeviceMatch) -> str | None:
    """One line on why an op sits below its roofline, from its shape and type."""
    if op.family == "gemm" and op.dims:
        if op.dtype == "float" and device.peaks is not None and "bf16" in device.peaks.tflops:
            return "fp32 GEMM: in bf16/fp16 it would run on the tensor cores (autocast, or the model's dtype)"
        if op.m and op.m <= 16:
            return f"M = {op.m} rows (tokens, as in decode): a GEMM this thin is memory bound; batch more tokens per step"
        align = 16 if "Float8" in op.dtype else 8
        odd = [d for d in op.dims if d % align]
        if odd:
            return f"dims {', '.join(map(str, odd))} are not a multiple of {align}: pad them for the tensor-core kernels"
    if op.family == "attention" and op.dims and op.dims[2] % 8:
        return f"head dim {op.dims[2]} is not a multiple of 8: the flash kernels need it"
    if op.bound == "memory" and op.pct_of_roofline is not None and op.pct_of_roofline < 30 and op.family == "bytes":
        return "memory bound and far from the bandwidth: small tensors (launch-bound) or a strided layout; fuse it"
    return None


def worst_first(r: RooflineReport) -> list[OpRoofline]:
    """The ops by GPU time above their roofline, most first (all the time where no roofline is known)."""
    key = (lambda o: o.lost_ns) if r.time_basis == "gpu" else (lambda o: float(o.cpu_ns))
    return sorted(r.ops, key=lambda o: (-key(o), o.name, o.shape))
