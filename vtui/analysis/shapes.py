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
    parts = [blob[o : o + n] if n > 0 else b"{}" for o, n in zip(s.args_off[rows].tolist(), s.args_len[rows].tolist())]
    try:
        return _BATCH.decode(b"[" + b",".join(parts) + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return [_one(p) for p in parts]  # some args are not an object or not JSON: one by one


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
