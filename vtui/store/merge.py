"""Merge the columns of several source files into one set with global string/thread ids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from vtui.store.tracks import normalise_pid

if TYPE_CHECKING:
    from vtui.store.build import SourcePart


@dataclass
class Merged:
    ph: np.ndarray
    ts: np.ndarray  # float64 µs, shifted onto a common clock across sources
    dur: np.ndarray
    name: np.ndarray  # int32 into strings
    cat: np.ndarray
    thread: np.ndarray  # int32 into thread_keys
    args_off: np.ndarray  # int64 into args_blob
    args_len: np.ndarray
    id_key: np.ndarray  # int32 global id (per source), -1 if none
    scope: np.ndarray
    bp_enclosing: np.ndarray
    ordinal: np.ndarray  # int32 position in the source file
    source: np.ndarray  # int16
    flow_v2: list[tuple[int, int, bool, bool]]  # (row, global id, flow_in, flow_out)
    strings: list[str]
    named: np.ndarray  # bool per string: a real (non-empty) name
    thread_keys: list[tuple[int, Any, Any]]  # (source, pid, tid), normalised
    args_blob: bytes
    by_phase: dict[str, int]


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


def merge_sources(parts: list[SourcePart], args_blob=None) -> Merged:
    """``args_blob``: the shared args file, when the parts' args offsets already point into it."""
    strings: dict[str, int] = {}
    threads: dict[tuple[int, Any, Any], int] = {}
    ids: dict[tuple[int, Any], int] = {}
    cols: dict[str, list[np.ndarray]] = {}
    flow_v2: list[tuple[int, int, bool, bool]] = []
    blobs: list[bytes] = []
    blob_size = 0
    row_base = 0
    by_phase: dict[str, int] = {}
    shifts = _clock_shifts(parts)

    for src, (part, shift) in enumerate(zip(parts, shifts)):
        c = part.columns
        n = len(c)
        s_map = np.array([strings.setdefault(text_of(v), len(strings)) for v in c.strings] or [0], dtype=np.int32)
        t_map = np.array(
            [threads.setdefault((src, normalise_pid(_text_id(p)), normalise_pid(_text_id(t))), len(threads))
             for p, t in c.thread_keys] or [0],
            dtype=np.int32,
        )
        if len(parts) == 1 and not c.flow_v2:  # ids are unique per source: the map is the identity
            i_map = np.append(np.arange(len(c.ids), dtype=np.int32), np.int32(-1))
        else:
            i_map = np.array([ids.setdefault((src, k), len(ids)) for k in c.ids] + [-1], dtype=np.int32)
        add = cols.setdefault
        add("ph", []).append(c.ph)
        add("ts", []).append(c.ts + shift if shift else c.ts)
        add("dur", []).append(c.dur)
        add("name", []).append(s_map[c.name] if n else c.name)
        add("cat", []).append(s_map[c.cat] if n else c.cat)
        add("thread", []).append(t_map[c.thread] if n else c.thread)
        add("args_off", []).append(c.args_off + blob_size)
        add("args_len", []).append(c.args_len)
        add("id_key", []).append(i_map[c.id_key])  # -1 maps to the trailing -1
        add("scope", []).append(c.scope)
        add("bp", []).append(c.bp_enclosing)
        add("ordinal", []).append(np.arange(n, dtype=np.int32))
        add("source", []).append(np.full(n, src, dtype=np.int16))
        for row, key, fin, fout in c.flow_v2:
            flow_v2.append((row + row_base, ids.setdefault((src, ("bind", key)), len(ids)), fin, fout))
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
    return Merged(
        ph=cat("ph", np.int8), ts=cat("ts", np.float64), dur=cat("dur", np.float64),
        name=cat("name", np.int32), cat=cat("cat", np.int32), thread=cat("thread", np.int32),
        args_off=cat("args_off", np.int64), args_len=cat("args_len", np.int32),
        id_key=cat("id_key", np.int32), scope=cat("scope", np.int8), bp_enclosing=cat("bp", bool),
        ordinal=cat("ordinal", np.int32), source=cat("source", np.int16), flow_v2=flow_v2,
        strings=string_list, named=np.array([bool(s) for s in string_list], dtype=bool),
        thread_keys=list(threads), by_phase=by_phase,
        args_blob=args_blob if args_blob is not None else blobs[0] if len(blobs) == 1 else b"".join(blobs),
    )


def _clock_shifts(parts: list[SourcePart]) -> list[float]:
    """µs to add per source so ranks written against different Kineto base times line up."""
    bases = [p.metadata.get("baseTimeNanoseconds") for p in parts]
    if len(parts) < 2 or not all(isinstance(b, int) for b in bases):
        return [0.0] * len(parts)
    low = min(bases)
    return [(b - low) / 1000.0 for b in bases]
