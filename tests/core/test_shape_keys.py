"""The C helper's ``shape_keys`` (``vtui.analysis.base.shapes.shape_ids``) gives each row the same
(Input Dims, Input type, Concrete Inputs) texts as the msgspec path, or declines the whole call
(None) so that path runs: on hand-written odd args and on generated JSON objects."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vtui.analysis.base import shapes

try:
    from _vtui_fastcols import shape_keys
except ImportError:
    shape_keys = None

needs_c = pytest.mark.skipif(shape_keys is None, reason="_vtui_fastcols is not built: only the Python path exists")


def _store(args: list[bytes]) -> SimpleNamespace:
    offs, at = [], 0
    for a in args:
        offs.append(at)
        at += len(a) + 3  # a gap between rows, as in the real blob
    blob = b"".join(a + b",\n " for a in args)
    slices = SimpleNamespace(args_off=np.array(offs, dtype=np.int64), args_len=np.array([len(a) for a in args], dtype=np.int32))
    return SimpleNamespace(slices=slices, args_blob=blob)


def _per_row(store, pure: bool):
    rows = np.arange(len(store.slices.args_off))
    ids, triples = shapes.shape_ids(store, rows, pure_python=pure)
    return [triples[i] for i in ids.tolist()]


ODD = [
    b'{"Input Dims": [[8, 16], [16, 4]], "Input type": ["c10::BFloat16", "float"], "Ev Idx": 3}',
    b'{"Ev Idx": 3, "Input type": ["float"], "Input Dims": [[2]]}',  # another key order
    b'{ "Input Dims" : [ [1, 2] ] ,\n "Input type":["float"] }',  # spacing inside and around
    b'{"Input Dims": [[1]], "Input Dims": [[7]]}',  # a repeated key: the last one
    b'{"Concrete Inputs": ["", "True", "a \\" ] [ quote"], "x": {"y": [1, {"z": "]"}]}}',  # brackets in strings
    b'{"name": "Input Dims", "Input type": null}',  # the key's text as a value
    b'{}', b'', b'[1, 2]', b'"text"', b'17', b'null',  # empty, absent, not an object
    b'{"k": "\\u00e9\\\\", "Input Dims": []}',  # escapes in a value
]


@needs_c
def test_c_and_msgspec_read_the_same_texts():
    store = _store(ODD)
    got = _per_row(store, pure=False)
    assert shape_keys(store.args_blob, store.slices.args_off, store.slices.args_len) is not None  # not declined
    assert got == _per_row(store, pure=True)
    assert got[3][0] == b"[[7]]" and got[7] == (b"null", b"null", b"null")


@needs_c
@pytest.mark.parametrize("bad", [b'{"Input\\u0020Dims": [[1]]}', b'{"Input Dims": [[1]', b'{"a" 1}', b'{"a": 1,}'])
def test_c_declines_what_it_cannot_read_exactly(bad):
    store = _store([ODD[0], bad])
    assert shape_keys(store.args_blob, store.slices.args_off, store.slices.args_len) is None
    assert _per_row(store, pure=False) == _per_row(store, pure=True)  # the msgspec path answered


json_value = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=6),
                          lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                          max_leaves=10)
keys = st.sampled_from(["Input Dims", "Input type", "Concrete Inputs", "Ev Idx", "name"]) | st.text(max_size=5)


@needs_c
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(keys, json_value), max_size=5), min_size=1, max_size=6), st.booleans())
def test_generated_args_read_alike(objects, spaced):
    sep = (", ", ": ") if spaced else (",", ":")
    args = [("{" + sep[0].join(json.dumps(k) + sep[1] + json.dumps(v, separators=sep) for k, v in obj) + "}").encode()
            for obj in objects]
    store = _store(args)
    assert _per_row(store, pure=False) == _per_row(store, pure=True)
