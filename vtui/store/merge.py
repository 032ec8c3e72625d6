"""Merge the columns of several source files into one set with global string/thread ids."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from vtui.io.columns import ns_from_doubles
from vtui.io.exactts import NO_NS
from vtui.store.source_part import SourcePart
from vtui.store.tracks import normalise_pid


@dataclass
class Merged:
    ph: np.ndarray
    ts: np.ndarray  # float64 µs, shifted onto a common clock across sources (only to tell numbers; see ts_ns)
    name: np.ndarray  # int32 into strings
    cat: np.ndarray
    thread: np.ndarray  # int32 into thread_keys
    args_off: np.ndarray  # int64 into args_blob
    args_len: np.ndarray
    id_kind: np.ndarray  # int8: 0 no id, 1 integer id (id_val), 2 other id (id_val indexes the interned ids)
    id_val: np.ndarray  # int64; ids are compared together with the source, so ranks never mix
    scope: np.ndarray
    bp_enclosing: np.ndarray
    ordinal: np.ndarray  # int32 position in the source file
    source: np.ndarray  # int16
    flow_v2: list[tuple[int, int, bool, bool]]  # (row, global bind id, flow_in, flow_out)
    ids: list[Any]  # the interned non-integer ids of every source, in order (see id_val)
    strings: list[str]
    named: np.ndarray  # bool per string: a real (non-empty) name
    thread_keys: list[tuple[int, Any, Any]]  # (source, pid, tid), normalised
    args_blob: bytes
    by_phase: dict[str, int]
    ts_ns: np.ndarray  # int64 absolute ns from the text (NO_NS: none), shifted like ts: the times used
    dur_ns: np.ndarray  # int64 ns (NO_NS: no number; FAR_NS: a number past int64 ns)


def text_of(value: Any) -> str:
    """Display text of an interned JSON value (names may be missing or not strings)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = str(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: invalid UTF-8 in the file, or a "\ud800" escape
        try:
            value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def _text_id(value: Any) -> Any:
    """String pids/tids get the same clean-up as names (they are shown and printed)."""
    return text_of(value) if isinstance(value, str) else value


def thread_key(src: int, pid: Any, tid: Any) -> tuple[int, Any, Any]:
    """The (source, pid, tid) an event's thread is keyed by, as Perfetto keys them: a string pid
    stays a string ("7" and 7 are two processes); a missing tid is the process's main thread
    (tid = pid: Perfetto's ``opt_tid.value_or(pid)``). tid 0 stays thread 0, as in Perfetto's
    parser: on Kineto's GPU processes it is stream 0, which must not merge with stream <pid>.
    A digit-only string tid is the int (old Kineto wrote its slices' tids as strings and its
    flows' as ints: TRACE-FORMAT 5.4)."""
    pid = normalise_pid(_text_id(pid), strings=False)
    tid = normalise_pid(_text_id(tid))
    if tid is None and pid is not None:
        tid = pid
    return (src, pid, tid)


def _thread_map(src: int, keys: list[tuple[Any, Any]], threads: dict[tuple[int, Any, Any], int]) -> np.ndarray:
    """A source's (pid, tid) keys -> global thread ids, adding new ones to ``threads``. Plain ints
    (a usual trace) are keys already and each one new (the key holds the source): no call per
    thread, which a trace of a million threads would feel."""
    base = len(threads)
    if set(map(type, itertools.chain.from_iterable(keys))) <= {int}:
        threads.update(zip([(src, p, t) for p, t in keys], range(base, base + len(keys))))
        return np.arange(base, base + len(keys), dtype=np.int32) if keys else np.zeros(1, dtype=np.int32)
    return np.array([threads.setdefault(thread_key(src, p, t), len(threads)) for p, t in keys] or [0], dtype=np.int32)


def merge_sources(parts: list[SourcePart], args_blob=None) -> Merged:
    """``args_blob``: the shared args file, when the parts' args offsets already point into it."""
    strings: dict[str, int] = {}
    threads: dict[tuple[int, Any, Any], int] = {}
    bind_ids: dict[tuple[int, Any], int] = {}
    other_ids = 0
    id_list: list[Any] = []
    cols: dict[str, list[np.ndarray]] = {}
    flow_v2: list[tuple[int, int, bool, bool]] = []
    blobs: list[bytes] = []
    blob_size = 0
    row_base = 0
    by_phase: dict[str, int] = {}
    shifts = _clock_shifts(parts)
    exact = _exact_times(parts)
    durs = [_dur_ns_of(p.cols().dur_ns, p.cols().dur) for p in parts]

    for src, (part, shift) in enumerate(zip(parts, shifts)):
        c = part.cols()
        n = len(c)
        s_map = np.array([strings.setdefault(text_of(v), len(strings)) for v in c.strings] or [0], dtype=np.int32)
        t_map = _thread_map(src, c.thread_keys, threads)
        id_val = c.id_val
        if c.ids and src:  # non-integer ids: renumbered after the earlier sources' ones
            id_val = np.where(c.id_kind == 2, id_val + other_ids, id_val)
        other_ids += len(c.ids)
        id_list.extend(c.ids)
        add = cols.setdefault
        add("ph", []).append(c.ph)
        add("ts", []).append(c.ts + shift if shift else c.ts)
        add("name", []).append(_remap(s_map, c.name))
        add("cat", []).append(_remap(s_map, c.cat))
        add("thread", []).append(_remap(t_map, c.thread))
        add("args_off", []).append(c.args_off + blob_size if blob_size else c.args_off)
        add("args_len", []).append(c.args_len)
        add("id_kind", []).append(c.id_kind)
        add("id_val", []).append(id_val)
        add("scope", []).append(c.scope)
        add("bp", []).append(c.bp_enclosing)
        add("ordinal", []).append(np.arange(n, dtype=np.int32))
        add("source", []).append(np.full(n, src, dtype=np.int16))
        for row, key, fin, fout in c.flow_v2:
            flow_v2.append((row + row_base, bind_ids.setdefault((src, key), len(bind_ids)), fin, fout))
        blobs.append(c.args_blob)
        blob_size += len(c.args_blob)
        row_base += n
        for ph, count in c.by_phase.items():
            by_phase[ph] = by_phase.get(ph, 0) + count
        part.columns = None  # merged: let the per-source arrays go

    def cat(key: str, dtype) -> np.ndarray:
        arrays = cols.get(key)
        if arrays and len(arrays) == 1:
            return arrays[0]  # one source: no copy
        return np.concatenate(arrays) if arrays else np.zeros(0, dtype=dtype)

    string_list = list(strings) or [""]
    ts_ns = exact[0] if len(exact) == 1 else np.concatenate(exact)
    dur_ns = durs[0] if len(durs) == 1 else np.concatenate(durs)
    return Merged(
        ph=cat("ph", np.int8), ts=cat("ts", np.float64),
        name=cat("name", np.int32), cat=cat("cat", np.int32), thread=cat("thread", np.int32),
        args_off=cat("args_off", np.int64), args_len=cat("args_len", np.int32),
        id_kind=cat("id_kind", np.int8), id_val=cat("id_val", np.int64), scope=cat("scope", np.int8), bp_enclosing=cat("bp", bool),
        ordinal=cat("ordinal", np.int32), source=cat("source", np.int16), flow_v2=flow_v2,
        ids=id_list, strings=string_list, named=np.array([bool(s) for s in string_list], dtype=bool),
        thread_keys=list(threads), by_phase=by_phase, ts_ns=ts_ns, dur_ns=dur_ns,
        args_blob=args_blob if args_blob is not None else blobs[0] if len(blobs) == 1 else b"".join(blobs),
    )


def _remap(new_of: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``new_of[ids]``, without the copy when the map changes nothing (the first source)."""
    if not len(ids) or np.array_equal(new_of, np.arange(len(new_of))):
        return ids
    return new_of[ids]


def _exact_times(parts: list[SourcePart]) -> list[np.ndarray]:
    """Per source, its ns column shifted onto the common clock (NO_NS where it has none). Read
    before the merge lets the per-source columns go."""
    out = []
    for part, shift_ns in zip(parts, _clock_shifts_ns(parts)):
        col = _ns_of(part.cols().ts_ns, part.cols().ts)
        out.append(np.where(col != NO_NS, col + shift_ns, NO_NS) if shift_ns else col)
    return out


def _clock_shifts_ns(parts: list[SourcePart]) -> list[int]:
    bases: list[Any] = [p.metadata.get("baseTimeNanoseconds") for p in parts]
    if len(parts) < 2 or not all(isinstance(b, int) for b in bases):
        return [0] * len(parts)
    return [b - min(bases) for b in bases]


def _clock_shifts(parts: list[SourcePart]) -> list[float]:
    """µs to add per source so ranks written against different Kineto base times line up."""
    bases: list[Any] = [p.metadata.get("baseTimeNanoseconds") for p in parts]
    if len(parts) < 2 or not all(isinstance(b, int) for b in bases):
        return [0.0] * len(parts)
    low = min(bases)
    return [(b - low) / 1000.0 for b in bases]


FAR_NS = int(NO_NS) + 1  # a dur that is a number, but none int64 ns hold (1e300, inf): not "no dur"


def _dur_ns_of(ns: np.ndarray | None, us: np.ndarray) -> np.ndarray:
    """A source's dur ns column, NO_NS only where the dur is no number at all (missing, text):
    a number out of range (1e300, inf, -inf) is FAR_NS, so the build can tell an X still open
    when tracing stopped (no dur) from one with a dur it cannot use."""
    out = _ns_of(ns, us)
    none = np.flatnonzero(out == NO_NS)  # one pass; the NaN test only over these
    far = none[~np.isnan(us[none])]
    if len(far):
        out = out.copy()
        out[far] = FAR_NS
    return out


def _ns_of(ns: np.ndarray | None, us: np.ndarray) -> np.ndarray:
    """A source's ns column; one read from doubles (nsys) gets it from them."""
    return ns if ns is not None else ns_from_doubles(us)
