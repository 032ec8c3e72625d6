"""The recorded shapes of slices (``Input Dims``, ``Input type``, ``Concrete Inputs``), decoded for
the given rows only, in one decoder call, each kept as raw JSON (so equal shapes compare as bytes).

``shape_ids`` interns them: one id per row and the distinct (dims, types, concrete) texts, so a
caller works out a cost once per distinct shape (there are few, even in huge traces). The C helper
(``_vtui_fastcols.shape_keys``) does it without a Python object per row; the msgspec path here is
the reference and the fallback (no compiler at install, args it declines), with identical results.
A store reopened from its cache entry has every ``aten::`` operator's shapes interned already
(``vtui.store.shapekeys``, done when the entry was written): then the ids are read from there, and
only one row per distinct shape is scanned.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import numpy as np

from vtui.analysis.base.argsjson import args_json
from vtui.store import shapekeys
from vtui.store.store import TraceStore

try:
    from _vtui_fastcols import shape_keys as _shape_keys
except ImportError:  # pragma: no cover - depends on the install (an older build lacks it too)
    _shape_keys = None

_NULL = msgspec.Raw(b"null")


class Shapes(msgspec.Struct):
    dims: msgspec.Raw = msgspec.field(name="Input Dims", default=_NULL)
    types: msgspec.Raw = msgspec.field(name="Input type", default=_NULL)
    concrete: msgspec.Raw = msgspec.field(name="Concrete Inputs", default=_NULL)


_BATCH = msgspec.json.Decoder(list[Shapes])
_ONE = msgspec.json.Decoder(Shapes)


def decode_shapes(store: TraceStore, rows: np.ndarray) -> list[Shapes]:
    """The shapes args of each row (absent keys: raw ``null``)."""
    s, blob = store.slices, store.args_blob
    try:
        got = _BATCH.decode(args_json(blob, s.args_off[rows], s.args_len[rows]))  # type: ignore[arg-type]  # a uint8 ndarray is a buffer
        if len(got) == len(rows):
            return got
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        pass
    # Some args are not an object or not JSON: one by one.
    return [_one(blob[o : o + n]) if n > 0 else Shapes()
            for o, n in zip(s.args_off[rows].tolist(), s.args_len[rows].tolist())]


CHUNK = 16384  # rows per batch: a ~4 MB grid and its objects, reused batch after batch


def iter_shapes(store: TraceStore, rows: np.ndarray) -> Iterator[Shapes]:
    """``decode_shapes`` a batch at a time: on a 1 GB trace, one grid and 860k decoded objects at
    once cost more in fresh memory (page faults: 0.7 s of system time) than the decoding itself."""
    for lo in range(0, len(rows), CHUNK):
        yield from decode_shapes(store, rows[lo : lo + CHUNK])


def _one(raw) -> Shapes:
    try:
        return _ONE.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return Shapes()


def raw_value(raw: msgspec.Raw):
    try:
        return msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None


Triple = tuple[bytes, bytes, bytes]  # raw JSON of Input Dims, Input type, Concrete Inputs (b"null": absent)


def shape_ids(store: TraceStore, rows: np.ndarray, pure_python: bool = False) -> tuple[np.ndarray, list[Triple]]:
    """Per row, the id of its shapes triple (int64), and the distinct triples (index = id)."""
    if not pure_python and len(rows):
        got = _from_keys(store, rows)
        if got is not None:
            return got
    return _scan(store, rows, pure_python)


def _from_keys(store: TraceStore, rows: np.ndarray) -> tuple[np.ndarray, list[Triple]] | None:
    """``shape_ids`` from the store's interned keys (``shapekeys``); None when it has none, or
    some row is not interned. Ids are renumbered in the order the rows first show them, and the
    texts scanned from one row per id, so the answer is the scan's exactly."""
    derived = getattr(store, "derived", None)  # a bare store-like object (the tests' args holders) has none
    sk = derived.get(shapekeys.MEMO) if isinstance(derived, dict) else None
    if sk is None:
        return None
    g = np.asarray(sk.keys[rows])
    if int(g.min()) < 0:
        return None
    first = np.full(len(sk.first), len(g), dtype=np.int64)
    np.minimum.at(first, g, np.arange(len(g), dtype=np.int64))
    used = np.flatnonzero(first < len(g))
    order = used[np.argsort(first[used], kind="stable")]  # global ids in the order the rows show them
    rank = np.zeros(len(sk.first), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    ids, triples = _scan(store, np.asarray(sk.first[order], dtype=np.int64), False)
    if len(triples) != len(order) or not bool((ids == np.arange(len(order))).all()):
        return None  # not one distinct shape per id (a damaged entry): scan the rows
    return rank[g], triples


def _scan(store: TraceStore, rows: np.ndarray, pure_python: bool) -> tuple[np.ndarray, list[Triple]]:
    """``shape_ids`` from the rows' args: the C helper, else msgspec."""
    s = store.slices
    offs = np.ascontiguousarray(s.args_off[rows], dtype=np.int64)
    lens = np.ascontiguousarray(s.args_len[rows], dtype=np.int32)
    if _shape_keys is not None and not pure_python and len(rows):
        blob = store.args_blob
        view = blob.buffer() if hasattr(blob, "buffer") else blob
        try:
            got = _shape_keys(view, offs, lens)
        finally:
            if isinstance(view, memoryview):
                view.release()
        if got is not None:
            ids, triples = got
            return np.frombuffer(ids, dtype=np.int64), triples
    seen: dict[Triple, int] = {}
    put = seen.setdefault
    out = np.fromiter((put((bytes(sh.dims), bytes(sh.types), bytes(sh.concrete)), len(seen))
                       for sh in iter_shapes(store, rows)), dtype=np.int64, count=len(rows))
    return out, list(seen)
