"""numpy columns as Arrow arrays without copying the data (what DuckDB then scans in place).

A numeric numpy array with no nulls becomes an Arrow array over the same buffer; a sentinel
(-1 for "no parent", "unbound") becomes a validity bitmap next to the unchanged data buffer, so
only one bit per row is new. Interned ids become dictionary arrays over the store's string list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_ARROW_OF = {np.dtype(np.int64): "int64", np.dtype(np.int32): "int32", np.dtype(np.int16): "int16",
             np.dtype(np.int8): "int8", np.dtype(np.float64): "float64", np.dtype(np.bool_): "bool_"}


def pyarrow():
    """The pyarrow module, or a UsageError saying which extra brings it."""
    try:
        import pyarrow as pa
    except ImportError:
        from vtui.errors import UsageError

        raise UsageError("SQL needs duckdb and pyarrow: pip install 'vtui[sql]'") from None
    return pa


def pyarrow_compute():
    pyarrow()  # the UsageError when it is missing
    import pyarrow.compute as pc

    return pc


def column(values: np.ndarray, null_where: np.ndarray | None = None) -> Any:
    """``values`` as an Arrow array sharing its buffer; rows where ``null_where`` is True are NULL."""
    pa = pyarrow()
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:  # Arrow packs booleans into bits: the one type that is copied
        return pa.array(values, mask=null_where)
    if null_where is None or not null_where.any():
        return pa.array(values)  # zero-copy for numeric dtypes
    valid = np.packbits(~null_where, bitorder="little")
    arrow_type = getattr(pa, _ARROW_OF[values.dtype])()
    return pa.Array.from_buffers(arrow_type, len(values), [pa.py_buffer(valid), pa.py_buffer(values)],
                                 null_count=int(null_where.sum()))


def strings(texts: Sequence[str]) -> Any:
    """A string list as an Arrow array; a text that is not valid Unicode (a lone surrogate from a
    hostile trace) is written with U+FFFD instead of failing the whole table."""
    pa = pyarrow()
    try:
        return pa.array(list(texts), type=pa.string())
    except (UnicodeEncodeError, pa.ArrowException):
        return pa.array([t.encode("utf-8", "replace").decode("utf-8") for t in texts], type=pa.string())


def dictionary(ids: np.ndarray, words: Any) -> Any:
    """Interned ids over an Arrow string array (``strings``): DuckDB reads it as VARCHAR."""
    pa = pyarrow()
    return pa.DictionaryArray.from_arrays(column(np.asarray(ids, dtype=np.int32)), words)


def table(columns: dict[str, Any]) -> Any:
    pa = pyarrow()
    return pa.table(columns)
