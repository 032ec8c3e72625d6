"""Memory from the profiler's ``[memory]`` instants (``Bytes``, ``Total Allocated``, ``Total Reserved``).

PyTorch writes one instant per allocation (Bytes > 0) and free (Bytes < 0), tagged with a device
(``Device Type`` 0 = CPU, 1 = CUDA; ``Device Id``). Newer traces also carry the allocator's running
totals; older ones (2021 Kineto) only ``Bytes``, so there the level is the running sum of Bytes
from the start of the profile (a level relative to whatever was allocated before profiling).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Annotated, Any

import msgspec
import numpy as np

from vtui.analysis.base.argsjson import args_json
from vtui.store.slicetime import TimeRange, over
from vtui.store.store import TraceStore

MEMORY_EVENT = "[memory]"
_DEVICE_TYPES = {0: "cpu", 1: "cuda", 2: "mkldnn", 3: "opengl", 4: "opencl", 5: "ideep", 6: "hip", 9: "xla",
                 13: "mps", 20: "xpu", 26: "privateuse1"}
CHURN_MIN_ALLOCS = 100
CHURN_FREED_SHARE = 0.9  # frees return >= 90% of the bytes allocated in the range...
CHURN_REPEAT_SHARE = 0.5  # ...and >= half the allocations share a size seen >= 10 times
GROWTH_SHARE = 0.5  # net growth >= half of the rise from the range's start to its peak


@dataclass
class DeviceMemory:
    device: str  # "cuda:0", "cpu"
    events: int
    allocs: int
    frees: int
    alloc_bytes: int
    free_bytes: int
    peak_allocated: int  # bytes; absolute when the trace has totals, else relative to the profile start
    peak_reserved: int | None
    start_allocated: int
    end_allocated: int
    absolute: bool  # levels come from Total Allocated (not a running sum of Bytes)
    repeated_size_share: float  # share of allocations whose size occurs >= 10 times
    verdict: str  # "churn", "growing", "steady"
    times_ns: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.int64))
    allocated: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass
class MemoryReport:
    present: bool
    devices: list[DeviceMemory] = field(default_factory=list)
    skipped: int = 0  # [memory] events whose Bytes or totals are beyond any real size (counted, not used)

    @property
    def main(self) -> DeviceMemory | None:
        """The accelerator with the most events, else the CPU."""
        if not self.devices:
            return None
        return max(self.devices, key=lambda d: (d.device != "cpu", d.events))


MAX_BYTES = 1 << 53  # 8 PiB: a larger Bytes / total is no real allocation (2^63, 1e300 from hostile traces)
_OUT_OF_RANGE = MAX_BYTES + 1


def _num(value) -> int | None:
    """An integer from an args value; None when there is none; ``_OUT_OF_RANGE`` for ±inf."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
    except OverflowError:
        return _OUT_OF_RANGE


def _usable(*values: int | None) -> bool:
    return all(v is None or -MAX_BYTES <= v <= MAX_BYTES for v in values)


def _device_name(dtype: int | None, did: int | None) -> str:
    name = _DEVICE_TYPES.get(dtype, f"device{dtype}") if dtype is not None else "?"
    return name if did is None or did < 0 else f"{name}:{did}"


class _MemoryArgs(msgspec.Struct, gc=False):
    """The args of a ``[memory]`` instant that matter here (any JSON value; checked by ``_num``)."""

    bytes: Any = msgspec.field(name="Bytes", default=None)
    total_allocated: Any = msgspec.field(name="Total Allocated", default=None)
    total_reserved: Any = msgspec.field(name="Total Reserved", default=None)
    device_type: Any = msgspec.field(name="Device Type", default=None)
    device_id: Any = msgspec.field(name="Device Id", default=None)


_BATCH = msgspec.json.Decoder(list[_MemoryArgs])

# The usual args: every value an integer that fits int64. Decoded straight into ints, a missing key
# reads ABSENT (so the type bars INT64_MIN itself); any other value (string, float, bool, null, a
# huge number) fails validation and the events take the general path above.
ABSENT = -(1 << 63)
_Int = Annotated[int, msgspec.Meta(ge=ABSENT + 1, le=(1 << 63) - 1)]


class _IntMemoryArgs(msgspec.Struct, gc=False):
    bytes: _Int = msgspec.field(name="Bytes", default=ABSENT)
    total_allocated: _Int = msgspec.field(name="Total Allocated", default=ABSENT)
    total_reserved: _Int = msgspec.field(name="Total Reserved", default=ABSENT)
    device_type: _Int = msgspec.field(name="Device Type", default=ABSENT)
    device_id: _Int = msgspec.field(name="Device Id", default=ABSENT)


_INT_BATCH = msgspec.json.Decoder(list[_IntMemoryArgs])
_FIELDS = ("bytes", "total_allocated", "total_reserved", "device_type", "device_id")


def _args_json(store: TraceStore, rows: np.ndarray) -> bytes | np.ndarray:
    """The instants' args as one JSON array (``{}`` where an event has none), for one batch decode."""
    inst = store.instants
    return args_json(store.args_blob, inst.args_off[rows], inst.args_len[rows])


def _memory_args(store: TraceStore, rows: np.ndarray) -> list[_MemoryArgs]:
    """The instants' args (any JSON values), decoded in one batch; event by event only when the
    batch does not decode (an args value that is not an object)."""
    try:
        args = _BATCH.decode(_args_json(store, rows))  # type: ignore[arg-type]  # a uint8 ndarray is a buffer; numpy's stubs do not say so
        if len(args) == len(rows):
            return args
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        pass
    return memory_args_one_by_one(store, rows)


def memory_args_one_by_one(store: TraceStore, rows: np.ndarray) -> list[_MemoryArgs]:
    """The plain path (and the reference the batch paths are tested against): each event's args
    decoded on its own."""
    out = []
    for r in rows.tolist():
        a = store.instant_args(r)
        out.append(_MemoryArgs(a.get("Bytes"), a.get("Total Allocated"), a.get("Total Reserved"),
                               a.get("Device Type"), a.get("Device Id")))
    return out


_CHUNK = 16384  # events per batch: a ~2 MB grid and its decoded objects, reused chunk after chunk


def _int_columns(store: TraceStore, rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """(values, present) per field of ``_IntMemoryArgs`` when every value decodes as an int64;
    else None. Decoded in chunks: one 40 MB grid and 290k objects at once cost more in fresh
    memory (page faults) than the decoding itself."""
    values = np.empty((len(_FIELDS), len(rows)), dtype=np.int64)
    for lo in range(0, len(rows), _CHUNK):
        part = rows[lo : lo + _CHUNK]
        try:
            args = _INT_BATCH.decode(_args_json(store, part))  # type: ignore[arg-type]  # (as above)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
        if len(args) != len(part):
            return None
        for k, name in enumerate(_FIELDS):
            values[k, lo : lo + len(part)] = np.fromiter(map(attrgetter(name), args), dtype=np.int64, count=len(part))
    return [(v, v != ABSENT) for v in values]  # an absent value is never read


# Per device: (times, Bytes, Total Allocated or None, Total Reserved or None), in time order; a
# total is None unless every event of the device has it.
_Series = tuple[np.ndarray, np.ndarray, "np.ndarray | None", "np.ndarray | None"]


def _by_device(times: np.ndarray, args: list[_MemoryArgs]) -> tuple[dict[str, _Series], int]:
    """Event by event, for any JSON values (numeric strings, floats, bools, huge numbers)."""
    per: dict[str, list[tuple[int, int, int | None, int | None]]] = {}
    skipped = 0
    for ts, a in zip(times.tolist(), args):
        b = _num(a.bytes)
        if b is None:
            continue
        total_allocated, total_reserved = _num(a.total_allocated), _num(a.total_reserved)
        if not _usable(b, total_allocated, total_reserved):
            skipped += 1
            continue
        per.setdefault(_device_name(_num(a.device_type), _num(a.device_id)), []).append(
            (ts, b, total_allocated, total_reserved))
    out: dict[str, _Series] = {}
    for dev, evs in per.items():
        totals = [e[2] for e in evs]
        reserved = [e[3] for e in evs]
        out[dev] = (np.array([e[0] for e in evs], dtype=np.int64), np.array([e[1] for e in evs], dtype=np.int64),
                    np.array(totals, dtype=np.int64) if None not in totals else None,
                    np.array(reserved, dtype=np.int64) if None not in reserved else None)
    return out, skipped


def _int_column(values: list[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, present) with None as 0; None unless every value is None or an int64."""
    if not set(map(type, values)) <= {int, type(None)}:
        return None
    present = np.frombuffer(bytes([v is not None for v in values]), dtype=bool)
    try:
        return np.fromiter([0 if v is None else v for v in values], dtype=np.int64, count=len(values)), present
    except OverflowError:
        return None


def _by_device_vectorised(times: np.ndarray, args: list[_MemoryArgs]) -> tuple[dict[str, _Series], int] | None:
    """``_by_device`` at numpy speed for the usual case, every value an integer (or absent);
    None otherwise. (A trace holds one [memory] instant per allocation and free: 290k at 1 GB.)"""
    cols = [_int_column(v) for v in ([a.bytes for a in args], [a.total_allocated for a in args],
                                     [a.total_reserved for a in args], [a.device_type for a in args],
                                     [a.device_id for a in args])]
    if any(c is None for c in cols):
        return None
    return _by_device_columns(times, cols)  # type: ignore[arg-type]


def _by_device_columns(times: np.ndarray, cols: list[tuple[np.ndarray, np.ndarray]]) -> tuple[dict[str, _Series], int]:
    """``_by_device`` over int64 columns: (values, present) for Bytes, the two totals, device type and id."""
    (b, has_b), (ta, has_ta), (tr, has_tr), (dt, has_dt), (di, has_di) = cols
    usable = np.ones(len(b), dtype=bool)
    for v, has in ((b, has_b), (ta, has_ta), (tr, has_tr)):
        usable &= ~has | ((v >= -MAX_BYTES) & (v <= MAX_BYTES))
    skipped = int((has_b & ~usable).sum())
    keep = has_b & usable
    # Device names from the distinct (type, id) pairs; pairs that read alike share a device.
    # (A lexsort, not np.unique(axis=0): that sorts rows as structured values, ~5x slower.)
    cols4 = [c[keep] for c in (has_dt, dt, has_di, di)]
    order = np.lexsort(cols4[::-1])
    new_pair = np.zeros(len(order), dtype=bool)
    new_pair[:1] = True
    for c in cols4:
        new_pair[1:] |= c[order][1:] != c[order][:-1]
    firsts = order[new_pair]
    which = np.empty(len(order), dtype=np.int64)
    which[order] = np.cumsum(new_pair) - 1
    names = [_device_name(int(dt_) if ht else None, int(di_) if hi else None)
             for ht, dt_, hi, di_ in zip(*(c[firsts].tolist() for c in cols4))]
    times, b, ta, has_ta, tr, has_tr = times[keep], b[keep], ta[keep], has_ta[keep], tr[keep], has_tr[keep]
    out: dict[str, _Series] = {}
    for dev in sorted(set(names)):
        sel = np.isin(which, [k for k, n in enumerate(names) if n == dev])
        out[dev] = (times[sel], b[sel], ta[sel] if has_ta[sel].all() else None, tr[sel] if has_tr[sel].all() else None)
    return out, skipped


def analyse_memory(store: TraceStore, rng: TimeRange | None = None) -> MemoryReport:
    """PyTorch's memory events in ``rng`` (the whole trace when None), per device."""
    rng = over(store, rng)
    t0, t1 = rng.t0, rng.t1
    ids = store.string_ids(MEMORY_EVENT)
    inst = store.instants
    rows = np.flatnonzero(np.isin(inst.name_id, ids)) if ids else np.zeros(0, dtype=np.int64)
    if not len(rows):
        return MemoryReport(False)
    rows = rows[np.argsort(inst.ts_ns[rows], kind="stable")]
    times = inst.ts_ns[rows]
    cols = _int_columns(store, rows)
    if cols is not None:
        per, skipped = _by_device_columns(times, cols)
    else:  # some value is not a plain integer
        args = _memory_args(store, rows)
        got = _by_device_vectorised(times, args)
        per, skipped = got if got is not None else _by_device(times, args)
    out = MemoryReport(False, skipped=skipped)
    for dev, (ts, nbytes, totals, res) in sorted(per.items()):
        absolute = totals is not None
        level = totals if totals is not None else np.cumsum(nbytes)
        inside = (ts >= t0) & (ts <= t1)
        if not inside.any():
            continue
        b, lv = nbytes[inside], level[inside]
        # The level just before the range opens (what was allocated when it started).
        before = np.flatnonzero(ts < t0)
        start = int(level[before[-1]]) if len(before) else int(lv[0] - b[0])
        allocs, frees = b[b > 0], b[b < 0]
        sizes, counts = np.unique(allocs, return_counts=True)
        repeated = float(counts[counts >= 10].sum() / len(allocs)) if len(allocs) else 0.0
        peak = int(lv.max())
        verdict = "steady"
        if len(allocs) >= CHURN_MIN_ALLOCS and -frees.sum() >= CHURN_FREED_SHARE * allocs.sum() \
                and repeated >= CHURN_REPEAT_SHARE:
            verdict = "churn"
        if int(lv[-1]) - start > 0 and int(lv[-1]) - start >= GROWTH_SHARE * (peak - start):
            verdict = "growing"
        out.devices.append(DeviceMemory(
            dev, int(inside.sum()), len(allocs), len(frees), int(allocs.sum()), int(-frees.sum()), peak,
            int(res[inside].max()) if res is not None else None, start, int(lv[-1]), absolute, repeated, verdict,
            ts[inside], lv))
    out.present = bool(out.devices)
    return out


def sparkline_series(dev: DeviceMemory, t0: int, t1: int, buckets: int) -> np.ndarray:
    """Max allocated level per time bucket (carried forward through empty buckets)."""
    if not len(dev.times_ns) or t1 <= t0 or buckets < 1:
        return np.zeros(max(buckets, 0), dtype=np.int64)
    idx = np.clip(((dev.times_ns - t0) * buckets) // max(t1 - t0, 1), 0, buckets - 1)
    out = np.full(buckets, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(out, idx, dev.allocated)
    seen = np.zeros(buckets, dtype=bool)
    seen[idx] = True
    last = dev.start_allocated
    for i in range(buckets):  # levels are relative and may be negative: track emptiness apart
        if seen[i]:
            last = int(out[i])
        else:
            out[i] = last
    return out
