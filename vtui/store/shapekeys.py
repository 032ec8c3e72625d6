"""The recorded shapes of the ATen operators, interned once per trace and kept in its cache entry.

``Input Dims`` / ``Input type`` / ``Concrete Inputs`` (``record_shapes``) are what the roofline
reads, and only for ``aten::`` operators (``vtui.analysis.gpu.flops``: a custom op's arguments say
nothing reliable). Reading them means scanning each operator's args JSON (~150 ns a row: a
quarter of a 1 GB trace's Insights). ``build`` does that scan once, when the cache entry is
written, with the C helper (``_vtui_fastcols.shape_keys``): per slice, the id of its triple of
raw texts (-1: not an ``aten::`` operator with args), and per id the first slice holding it. The
entry stores both (``derived.shape_key`` / ``derived.shape_first``); a reopened store finds them
in ``store.derived[MEMO]`` and ``vtui.analysis.base.shapes.shape_ids`` reads ids from there instead of
the args. Without the C helper, or where it declines a row, nothing is kept and ``shape_ids``
reads the args as before (the same ids either way).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtui.store.devices import string_mask

try:
    from _vtui_fastcols import shape_keys as _shape_keys
except ImportError:  # pragma: no cover - depends on the install
    _shape_keys = None

MEMO = "shapes.keys"  # the store.derived key
CHUNK = 1 << 16  # rows scanned per call: each chunk's args pages are unmapped after it (peak memory)
PREFIX = "aten::"


@dataclass(frozen=True)
class ShapeKeys:
    keys: np.ndarray  # int32 per slice: the id of its (dims, types, concrete) texts; -1 not interned
    first: np.ndarray  # int64 per id: the first slice row holding it

    def problem(self, n_slices: int) -> str | None:
        """Why these cannot be a store's (lengths, ids out of range, an id not at its first row)."""
        k, f = self.keys, self.first
        if k.dtype != np.int32 or f.dtype != np.int64 or k.shape != (n_slices,) or f.ndim != 1:
            return "shape keys: unexpected dtype or shape"
        if len(f) and (int(f.min()) < 0 or int(f.max()) >= n_slices):
            return "shape keys: a row out of range"
        if n_slices and (int(k.min()) < -1 or int(k.max()) >= len(f)):
            return "shape keys: an id out of range"
        if len(f) and not bool((k[f] == np.arange(len(f), dtype=np.int32)).all()):
            return "shape keys: an id not at its first row"
        return None


def interned_rows(store) -> np.ndarray:
    """The slices whose shapes are interned: ``aten::`` names with args."""
    s = store.slices
    aten = string_mask(store, lambda t: t.startswith(PREFIX))
    if not len(s) or not aten.any():
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(aten[s.name_id] & (s.args_len > 0))


def build(store) -> ShapeKeys | None:
    """The store's shape keys; None without the C helper or where it declines a row's args."""
    if _shape_keys is None:
        return None
    s = store.slices
    rows = interned_rows(store)
    keys = np.full(len(s), -1, dtype=np.int32)
    if not len(rows):
        return ShapeKeys(keys, np.zeros(0, dtype=np.int64))
    blob = store.args_blob
    offs = np.ascontiguousarray(s.args_off[rows], dtype=np.int64)
    lens = np.ascontiguousarray(s.args_len[rows], dtype=np.int32)
    ids = np.empty(len(rows), dtype=np.int64)
    seen: dict[tuple[bytes, bytes, bytes], int] = {}
    for lo in range(0, len(rows), CHUNK):
        view = blob.buffer() if hasattr(blob, "buffer") else blob
        try:
            got = _shape_keys(view, offs[lo : lo + CHUNK], lens[lo : lo + CHUNK])
        finally:
            if isinstance(view, memoryview):
                view.release()
            if hasattr(blob, "drop_resident"):
                blob.drop_resident()  # the chunk's args pages: the process stays as small as before the scan
        if got is None:
            return None
        remap = np.array([seen.setdefault(t, len(seen)) for t in got[1]], dtype=np.int64)
        ids[lo : lo + CHUNK] = remap[np.frombuffer(got[0], dtype=np.int64)]
    if len(seen) >= 2**31 - 1:
        return None
    keys[rows] = ids
    first = np.full(len(seen), len(s), dtype=np.int64)
    np.minimum.at(first, ids, rows)
    return ShapeKeys(keys, first)
