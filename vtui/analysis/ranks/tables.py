"""Per rank, the few tables the cross-rank analysis needs: steps, collective kernels (with their
operator's args) and compute kernels, all on the rank's epoch clock (ns).

One store may hold one rank (a file loaded alone: the DuckDB path streams rank by rank) or a
folder of ranks (the app and the Python engine); either way each source file is one rank. Only
collective kernels, communication operators and the launches directly below them have their
args decoded: a few per collective, never per event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from vtui.analysis.base.comm import comm_names, is_comm
from vtui.analysis.steps.detect import KNOWN_STEP_PATTERNS, _best_track, _cpu_candidates, _outermost
from vtui.store.devices import KERNEL, device_work_kinds, name_mask, on_thread_track, runtime_mask
from vtui.store.grouping import group_key
from vtui.store.store import TraceStore

# NCCL's kernels (ncclKernel_…, ncclDevKernel_…) and RCCL's (rcclGenericKernel, ncclDevKernel_Generic):
# their kind is the word after the first "_". Other libraries' kernels (`vtui.analysis.base.comm`)
# name their kind anywhere in the name.
COLLECTIVE_KERNEL = re.compile(r"(?i)^(?:nccl|rccl)\w*kernel")
_KIND_IN_NAME = re.compile(r"(?i)all_?reduce|cross_device_reduce|quick_?reduce|all_?gather|reduce_?scatter|"
                           r"all_?to_?all|deep_?ep|broadcast|send_?recv")
# The host-side operators that carry a collective's args (record_param_comms) or name it (nccl:all_reduce).
COMM_OP = re.compile(r"^(?:record_param_comms$|nccl:|rccl:)")
# What the rank tables hold (which kernels are collectives, how a group's size is found): part of
# the name of the per-rank Parquet written beside the cache, so a change rewrites them.
TABLES_VERSION = 3
_RANK_IN_NAME = re.compile(r"(?i)(?:^|[^a-z0-9])rank[-_]?(\d+)(?=[^0-9]|$)")
_LEVELS = 3  # a launch sits directly under its nccl:* op (or one wrapper deeper)

# Element sizes of PyTorch's dtype names (record_param_comms' "dtype", nccl:*'s "Input type").
_DTYPE_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2, "c10::half": 2,
    "bfloat16": 2, "c10::bfloat16": 2, "int": 4, "int32": 4, "long": 8, "int64": 8, "long int": 8,
    "short": 2, "int16": 2, "byte": 1, "uint8": 1, "unsigned char": 1, "char": 1, "int8": 1,
    "signed char": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "c10::float8_e4m3fn": 1,
    "c10::float8_e5m2": 1, "complexfloat": 8, "c10::complex<float>": 8,
}
_KIND_ALIASES = {
    "allreduce": "all_reduce", "allreducecoalesced": "all_reduce",
    "allgather": "all_gather", "allgatherbase": "all_gather", "allgatherintotensor": "all_gather",
    "allgathercoalesced": "all_gather", "allgatherintotensorcoalesced": "all_gather",
    "reducescatter": "reduce_scatter", "reducescatterbase": "reduce_scatter",
    "reducescattertensor": "reduce_scatter", "reducescattertensorcoalesced": "reduce_scatter",
    "alltoall": "all_to_all", "alltoallbase": "all_to_all", "alltoallv": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "send_recv", "send": "send", "recv": "recv",
    "barrier": "barrier", "gather": "gather", "scatter": "scatter",
}


class _CommArgs(msgspec.Struct):
    """The args keys PyTorch writes on record_param_comms and (since 2024) on the NCCL kernel."""

    name: Any = msgspec.field(default=None, name="Collective name")
    in_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    dtype: Any = None
    group_size: Any = msgspec.field(default=None, name="Group size")
    pg_name: Any = msgspec.field(default=None, name="Process Group Name")
    pg_ranks: Any = msgspec.field(default=None, name="Process Group Ranks")
    pg_desc: Any = msgspec.field(default=None, name="Process Group Description")
    input_dims: Any = msgspec.field(default=None, name="Input Dims")
    input_type: Any = msgspec.field(default=None, name="Input type")
    correlation: Any = None


_DECODE = msgspec.json.Decoder(_CommArgs)


@dataclass
class RankTable:
    """One rank's steps, collectives and compute kernels; times are epoch ns (see ``epoch_ns``)."""

    rank: int
    file: str
    source: int  # the source index in the store it came from
    world_size: int | None
    step_names: list[str] = field(default_factory=list)
    step_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    step_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    coll_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # store slice row
    coll_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    coll_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    coll_device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    coll_kind: list[str] = field(default_factory=list)  # all_reduce, all_gather, ...
    coll_group: list[str] = field(default_factory=list)  # process group name ("" unknown)
    coll_size: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # group size (0 unknown)
    coll_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # -1 unknown
    coll_elems: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # elements moved, 0 unknown
    comp_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    comp_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    comp_device: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    epoch_ns: int = 0  # added to the store's relative ns to give these times


def rank_number(metadata: dict[str, Any], path: str) -> int | None:
    """Kineto's ``distributedInfo.rank``, else a number in the file name (``…_rank3.…``,
    ``…-rank-3…``, ``rank-34.``); None when neither says."""
    info = metadata.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int) and not isinstance(info.get("rank"), bool):
        return int(info["rank"])
    found = _RANK_IN_NAME.findall(Path(path).name)
    return int(found[-1]) if found else None


def world_size(metadata: dict[str, Any]) -> int | None:
    info = metadata.get("distributedInfo")
    size = info.get("world_size") if isinstance(info, dict) else None
    return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None


def collective_kind(text: str) -> str:
    """``nccl:_all_gather_base`` / ``allgather`` / ``ncclDevKernel_AllGather_RING…`` → ``all_gather``."""
    t = text.strip()
    low = t.lower()
    if low.startswith(("nccl:", "rccl:")):
        t = t[5:]
    elif COLLECTIVE_KERNEL.match(t):  # kernel name: ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)
        part = t.split("(")[0].split("_")
        t = part[1] if len(part) > 1 else ""
    elif is_comm(t):  # vllm::cross_device_reduce_1stage<…>, multimem_all_reduce_kernel, deep_ep::…
        m = _KIND_IN_NAME.search(t.split("(")[0])
        word = m.group(0).lower() if m else ""
        t = ("allreduce" if "reduce" in word and "scatter" not in word else "alltoall" if "deep" in word else word)
    key = re.sub(r"[^a-z0-9]", "", t.lower())
    return _KIND_ALIASES.get(key, key or "unknown")


def _dtype_bytes(value: Any) -> int:
    if isinstance(value, list):
        value = value[0] if value else None
    return _DTYPE_BYTES.get(str(value).strip().lower(), 0) if isinstance(value, str) else 0


def _nelems(args: _CommArgs) -> int:
    """Elements moved: the larger of In/Out msg nelems (NCCL's buffer size: all-gather's output,
    reduce-scatter's input), else the largest tensor of the op's Input Dims."""
    best = 0
    for v in (args.in_nelems, args.out_nelems):
        if isinstance(v, int) and not isinstance(v, bool):
            best = max(best, v)
    if not best and isinstance(args.input_dims, list):
        for dims in args.input_dims:
            if isinstance(dims, list) and dims and all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
                best = max(best, int(np.prod(dims, dtype=np.int64)))
    return best


def _bytes(args: _CommArgs) -> int:
    elem = _dtype_bytes(args.dtype) or _dtype_bytes(args.input_type)
    count = _nelems(args)
    return count * elem if count and elem else -1


def _decode_args(store: TraceStore, rows: list[int]) -> list[_CommArgs]:
    out = []
    for r in rows:  # collective kernels and their ops only: a few per collective
        n = int(store.slices.args_len[r])
        raw = store.args_blob[int(store.slices.args_off[r]): int(store.slices.args_off[r]) + n] if n > 0 else b"{}"
        try:
            out.append(_DECODE.decode(raw))
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            out.append(_CommArgs())
    return out


def _ancestor_in(parent: np.ndarray, mask: np.ndarray, rows: np.ndarray, levels: int) -> np.ndarray:
    """The nearest ancestor of each row within ``levels`` that is in ``mask``; -1 where none."""
    found = np.full(len(rows), -1, dtype=np.int64)
    anc = parent[rows].astype(np.int64)
    for _ in range(levels):
        live = (anc >= 0) & (found < 0)
        hit = np.zeros(len(rows), dtype=bool)
        hit[live] = mask[anc[live]]
        found[hit] = anc[hit]
        anc = np.where(anc >= 0, parent[np.maximum(anc, 0)], -1)
    return found


def _launches(store: TraceStore, kernels: np.ndarray, comm_op: np.ndarray) -> np.ndarray:
    """The CPU launch row of each collective kernel (-1 unknown): an ac2g flow, else the runtime
    call under a communication op with the kernel's ``correlation``."""
    s, f = store.slices, store.flows
    launch = np.full(len(kernels), -1, dtype=np.int64)
    if len(f):
        ok = (f.src_slice >= 0) & (f.dst_slice >= 0)
        src, dst = f.src_slice[ok].astype(np.int64), f.dst_slice[ok].astype(np.int64)
        is_kernel = np.zeros(len(s), dtype=bool)
        is_kernel[kernels] = True
        use = is_kernel[dst] & runtime_mask(store)[src]
        pos = np.full(len(s), -1, dtype=np.int64)
        pos[kernels] = np.arange(len(kernels))
        launch[pos[dst[use]]] = src[use]
    missing = np.flatnonzero(launch < 0)
    if len(missing):
        runtime = np.flatnonzero(runtime_mask(store))
        runtime = runtime[_ancestor_in(s.parent, comm_op, runtime, _LEVELS) >= 0]
        if len(runtime):
            key = {}
            for r, a in zip(runtime.tolist(), _decode_args(store, runtime.tolist())):
                if isinstance(a.correlation, (int, str)):
                    key[(int(s.source[r]), a.correlation)] = r
            kargs = _decode_args(store, kernels[missing].tolist())
            for i, a in zip(missing.tolist(), kargs):
                hit = key.get((int(s.source[kernels[i]]), a.correlation)) if isinstance(a.correlation, (int, str)) else None
                if hit is not None:
                    launch[i] = hit
    return launch


def _merge(into: _CommArgs, more: _CommArgs) -> None:
    for name in _CommArgs.__struct_fields__:
        if getattr(into, name) is None and getattr(more, name) is not None:
            setattr(into, name, getattr(more, name))


def _collectives(store: TraceStore, kernels: np.ndarray, world: int | None = None,
                 ) -> tuple[list[str], list[str], list[int], list[int], list[int]]:
    """Per collective kernel: (kind, group, group size, bytes) from its own args, else those of
    the record_param_comms / nccl:* operators above its launch. The group size is the args'
    ``Group size``, else the count of ``Process Group Ranks``, else ``world`` (the file's
    ``distributedInfo.world_size``) for PyTorch's world group (name "0", "default_pg"); 0 unknown."""
    s = store.slices
    comm_op = on_thread_track(store) & name_mask(store, COMM_OP)
    launch = _launches(store, kernels, comm_op)
    own = _decode_args(store, kernels.tolist())
    kinds, groups, sizes, nbytes, nelems = [], [], [], [], []
    for k, args, lrow in zip(kernels.tolist(), own, launch.tolist()):  # one pass per collective
        op_name = ""
        p = int(s.parent[lrow]) if lrow >= 0 else -1
        ops = []
        for _ in range(_LEVELS + 1):
            if p < 0:
                break
            if comm_op[p]:
                ops.append(p)
            p = int(s.parent[p])
        # record_param_comms first (it carries the args), then the nccl:* op (it names the collective).
        ops.sort(key=lambda r: store.name(r) != "record_param_comms")
        found = [args, *_decode_args(store, ops)]
        for r in ops:
            if store.name(r).startswith(("nccl:", "rccl:")) and not op_name:
                op_name = store.name(r)
        merged = _CommArgs()
        for more in found:
            _merge(merged, more)
        name = merged.name if isinstance(merged.name, str) and merged.name else op_name or store.name(k)
        kinds.append(collective_kind(name))
        groups.append(str(merged.pg_name) if isinstance(merged.pg_name, (str, int)) else "")
        size = merged.group_size if isinstance(merged.group_size, int) and not isinstance(merged.group_size, bool) else 0
        if not size and isinstance(merged.pg_ranks, str):
            size = len([x for x in re.split(r"[^0-9]+", merged.pg_ranks) if x])
        if not size and isinstance(merged.pg_ranks, list):
            size = len(merged.pg_ranks)
        if not size and world and (str(merged.pg_name) == "0" or merged.pg_desc == "default_pg"):
            size = world
        sizes.append(size)
        # The size from the first that gives one: record_param_comms' Input Dims is [[], …] with
        # "TensorList" in older traces, where the nccl:* op's holds the tensor.
        nbytes.append(next((b for b in map(_bytes, found) if b > 0), -1))
        nelems.append(next((n for n in map(_nelems, found) if n > 0), 0))
    return kinds, groups, sizes, nbytes, nelems


def _epoch_ns(store: TraceStore, source: int) -> int:
    """What to add to the store's relative ns for epoch ns: the origin, and Kineto's
    ``baseTimeNanoseconds`` (the merge already shifted each rank by its base minus the lowest)."""
    origin = round(Fraction(store.origin_us) * 1000)  # exact: epoch ns overflow a double's 53 bits
    bases = [src.metadata.get("baseTimeNanoseconds") for src in store.sources]
    ints = [b for b in bases if isinstance(b, int) and not isinstance(b, bool)]
    if len(ints) == len(bases):
        return origin + (min(ints) if len(ints) > 1 else ints[source])
    return origin


def _steps(store: TraceStore, source: int) -> np.ndarray:
    """Step rows of one source (the known step names, outermost, on its busiest thread)."""
    s = store.slices
    allowed = _cpu_candidates(store) & (s.source == source)
    best = np.zeros(0, dtype=np.int64)
    for _label, pat in KNOWN_STEP_PATTERNS:
        mask = name_mask(store, re.compile(pat)) & allowed
        if mask.any():
            rows = _best_track(store, _outermost(store, mask))
            if len(rows) > len(best):
                best = rows
    return best[np.argsort(s.start_ns[best], kind="stable")]


def device_of_track(store: TraceStore) -> np.ndarray:
    """Per track its device number: a GPU is its (source, pid) (Kineto's device id), the pid as text
    (7 and "7" are one), numbered in track order; [0] for a store without tracks. From the track
    columns: the text of each distinct pid once, no ``Track`` made."""
    t = store.tracks
    if not len(t):
        return np.zeros(1, dtype=np.int64)
    used, pid = np.unique(t.columns["pid"], return_inverse=True)  # the pids only: not every tid's text
    texts: dict[str, int] = {}
    pid_text = np.array([texts.setdefault(str(t.ids[i]), len(texts)) for i in used.tolist()], dtype=np.int64)
    key = group_key(t.columns["source"], pid_text[pid.reshape(-1)])
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def rank_tables(store: TraceStore) -> list[RankTable]:
    """One table per source file of the store, in source order (ranks numbered by `rank_number`)."""
    s = store.slices
    kinds = device_work_kinds(store)
    is_kernel = kinds == KERNEL
    coll = is_kernel & comm_names(store)[s.name_id] if len(s) else np.zeros(0, dtype=bool)
    device_of = device_of_track(store)
    out = []
    for src_i, src in enumerate(store.sources):
        epoch = _epoch_ns(store, src_i)
        mine = s.source == src_i
        table = RankTable(rank=-1, file=Path(src.path).name, source=src_i, world_size=world_size(src.metadata),
                          epoch_ns=epoch)
        number = rank_number(src.metadata, src.path)
        table.rank = -1 if number is None else number
        steps = _steps(store, src_i)
        table.step_names = [store.name(int(r)) for r in steps]
        table.step_start = s.start_ns[steps].astype(np.int64) + epoch
        table.step_end = s.end_ns[steps].astype(np.int64) + epoch
        krows = np.flatnonzero(coll & mine)
        krows = krows[np.argsort(s.start_ns[krows], kind="stable")]
        table.coll_row = krows
        table.coll_start = s.start_ns[krows].astype(np.int64) + epoch
        table.coll_end = s.end_ns[krows].astype(np.int64) + epoch
        table.coll_device = device_of[s.track[krows]]
        k, g, z, b, e = _collectives(store, krows, table.world_size) if len(krows) else ([], [], [], [], [])
        table.coll_kind, table.coll_group = k, g
        table.coll_size = np.array(z, dtype=np.int64)
        table.coll_bytes = np.array(b, dtype=np.int64)
        table.coll_elems = np.array(e, dtype=np.int64)
        comp = np.flatnonzero(is_kernel & ~coll & mine)
        table.comp_start = s.start_ns[comp].astype(np.int64) + epoch
        table.comp_end = s.end_ns[comp].astype(np.int64) + epoch
        table.comp_device = device_of[s.track[comp]]
        out.append(table)
    return out
