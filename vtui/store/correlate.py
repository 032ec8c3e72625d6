"""Check flow edges against the ``correlation`` id both of their slices carry.

Kineto writes the same ``correlation`` arg on a CUDA/HIP runtime call and on the GPU work it
launched, and an ``ac2g`` flow between them. When consecutive kernels overlap on a stream, the
flow end at a kernel's start lies inside the previous kernel too; the ids say which one is
meant. ``External id`` is not used: it is shared by an operator and everything it launched,
and PyTorch's ``fwdbwd`` flows join operators whose ``External id`` differ by design.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from vtui.store.index import IntervalIndex
from vtui.store.tables import SliceTable


class _Correlation(msgspec.Struct):
    correlation: Any = None


_BATCH = msgspec.json.Decoder(list[_Correlation])
_ONE = msgspec.json.Decoder(_Correlation)


def correlation_ids(slices: SliceTable, blob, rows: np.ndarray) -> list[Any]:
    """The ``correlation`` arg of each slice row; None where absent, not a plain value, or the
    args do not decode. One decoder call for all rows (only that key is built)."""
    spans = zip(slices.args_off[rows].tolist(), slices.args_len[rows].tolist())
    parts = [blob[o : o + n] if n > 0 else b"{}" for o, n in spans]
    try:
        found = [c.correlation for c in _BATCH.decode(b"[" + b",".join(parts) + b"]")]
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        found = [_one(p) for p in parts]  # some args are not an object, or not JSON: one by one
    return [v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else None for v in found]


def _one(raw: bytes) -> Any:
    try:
        return _ONE.decode(raw).correlation
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def reconcile(slices: SliceTable, index: IntervalIndex, blob, src: np.ndarray, dst: np.ndarray,
              src_at: tuple[np.ndarray, np.ndarray], dst_at: tuple[np.ndarray, np.ndarray],
              check: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Edges (``src`` → ``dst`` slice rows) whose two slices both carry a correlation id must agree.

    Only the edges in the ``check`` mask are looked at (decoding every launch's and kernel's args
    would cost seconds on a big trace; an end exactly at the start of the one slice starting
    there is taken as bound). ``src_at``/``dst_at``: (track, ts) of each edge's flow events. Where the ids differ, the end is
    moved to another slice at the same point (on the same track) that carries the other end's
    id: the destination first, else the source. Returns the new rows and counts: ``rebound``
    (fixed by the ids) and ``disagree`` (no slice there carries the id: kept as the flow says).
    """
    stats = {"flows_rebound_by_correlation": 0, "flows_correlation_disagree": 0}
    both = (src >= 0) & (dst >= 0) & check
    if not both.any():
        return src, dst, stats
    rows = np.unique(np.concatenate([src[both], dst[both]]))
    values = correlation_ids(slices, blob, rows)
    codes: dict[Any, int] = {}
    code = np.array([-1 if v is None else codes.setdefault(v, len(codes)) for v in values], dtype=np.int64)
    last = len(rows) - 1  # rows of the edges not checked may lie past it: clipped, then masked
    src_code = np.where(both, code[np.minimum(np.searchsorted(rows, src), last)], -1)
    dst_code = np.where(both, code[np.minimum(np.searchsorted(rows, dst), last)], -1)
    bad = np.flatnonzero((src_code >= 0) & (dst_code >= 0) & (src_code != dst_code))
    if not len(bad):
        return src, dst, stats
    src, dst = src.copy(), dst.copy()
    for e in bad.tolist():  # only the edges that disagree: few
        want_dst = values[int(np.searchsorted(rows, src[e]))]
        want_src = values[int(np.searchsorted(rows, dst[e]))]
        hit = _slice_with(slices, index, blob, int(dst_at[0][e]), int(dst_at[1][e]), int(dst[e]), want_dst)
        if hit >= 0:
            dst[e] = hit
        else:
            hit = _slice_with(slices, index, blob, int(src_at[0][e]), int(src_at[1][e]), int(src[e]), want_src)
            if hit >= 0:
                src[e] = hit
        stats["flows_rebound_by_correlation" if hit >= 0 else "flows_correlation_disagree"] += 1
    return src, dst, stats


def _slice_with(slices: SliceTable, index: IntervalIndex, blob, track: int, ts: int, bound: int, want: Any) -> int:
    """A slice at ``ts`` on ``track`` (or starting where ``bound`` starts) whose correlation is ``want``;
    of several, the one that started last (then the shortest). -1 where none."""
    if track < 0 or want is None:
        return -1
    at = int(slices.start_ns[bound])
    rows = np.unique(np.concatenate([index.query(track, ts, ts), index.query(track, at, at)]))
    rows = rows[rows != bound]
    if not len(rows):
        return -1
    rows = rows[np.lexsort((slices.end_ns[rows], -slices.start_ns[rows]))]
    for row, value in zip(rows.tolist(), correlation_ids(slices, blob, rows)):
        if value == want:
            return row
    return -1
