"""The recorded shapes of slices (``Input Dims``, ``Input type``, ``Concrete Inputs``), decoded for
the given rows only, in one decoder call, each kept as raw JSON (so equal shapes compare as bytes)."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import numpy as np

from vtui.analysis.argsjson import args_json
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
