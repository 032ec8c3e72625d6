"""The recorded shapes of slices (``Input Dims``, ``Input type``, ``Concrete Inputs``), decoded for
the given rows only, in one decoder call, each kept as raw JSON (so equal shapes compare as bytes)."""

from __future__ import annotations

import msgspec
import numpy as np

from vtui.store.store import TraceStore

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
    offs = s.args_off[rows].astype(np.int64)
    lens = np.maximum(s.args_len[rows].astype(np.int64), 0)
    view = blob.buffer() if hasattr(blob, "buffer") else memoryview(blob)  # no copy, no Python call per row
    # Slices of the view in C loops (map), not a comprehension through the blob's __getitem__:
    # that per-row Python call was most of the first roofline on a big trace.
    parts: list = list(map(view.__getitem__, map(slice, offs.tolist(), (offs + lens).tolist())))
    for k in np.flatnonzero(lens == 0).tolist():
        parts[k] = b"{}"
    joined = b"[" + b",".join(parts) + b"]"
    del view  # (the parts' views go with the call)
    try:
        return _BATCH.decode(joined)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return [_one(bytes(p)) for p in parts]  # some args are not an object or not JSON: one by one


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
