"""The ``args`` table (Perfetto's: ``arg_set_id, flat_key, key, int_value, string_value,
real_value, value_type``), decoded only when a query names it, and ``arg_json`` (``arg_set_id,
json``: each slice's args as written, for DuckDB's ``json_extract`` on a few slices).

The args stay encoded in the store (a blob of JSON texts with offsets); here the texts of the
slices that have args are gathered with numpy into one Arrow string column (once per store) and
DuckDB's own JSON reader flattens them (``json_tree``) in a view, so no Python runs per slice,
the query's time limit covers the decoding, and a join that picks a few slices decodes a few. Keys read as Perfetto's JSON
importer writes them: ``args.`` + the path, ``args.a.b`` for nested objects, ``args.a[0]`` for
array items (``flat_key`` drops the indices). A slice's ``arg_set_id`` is its ``id`` (an instant's
too: its id in ``slice``).
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from vtui.query import arrowcols as ac
from vtui.query.perfetto_stack import instant_rows
from vtui.query.tables import has_args, memo
from vtui.store.store import TraceStore

# Leaves of each args object. A text that is not valid JSON (a hostile trace) gives one row
# with the key "args.<undecodable args>" and the text as string_value, as the details pane shows it.
FLATTEN_SQL = r"""
WITH texts AS (SELECT _vtui_set AS arg_set_id, _vtui_json AS json FROM _vtui_args_json),
valid AS (SELECT arg_set_id, json FROM texts WHERE json_valid(json)),
leaves AS (
  SELECT v.arg_set_id,
         'args' || CASE WHEN contains(t.fullkey, '"')
                        THEN replace(regexp_replace(substr(t.fullkey, 2), '\."((?:[^"\\]|\\.)*)"', '.\1', 'g'), '\"', '"')
                        ELSE substr(t.fullkey, 2) END AS key,
         t.type AS jtype, t.atom AS atom, t.id AS node
  FROM valid v, json_tree(v.json) t
  WHERE t.type NOT IN ('OBJECT', 'ARRAY'))
SELECT arg_set_id * 1048576 + node AS id,
       arg_set_id,
       CASE WHEN contains(key, '[') THEN regexp_replace(key, '\[[0-9]+\]', '', 'g') ELSE key END AS flat_key,
       key,
       CASE WHEN jtype IN ('BIGINT', 'UBIGINT') THEN TRY_CAST(atom::VARCHAR AS BIGINT)
            WHEN jtype = 'BOOLEAN' THEN CASE WHEN atom::VARCHAR = 'true' THEN 1 ELSE 0 END END AS int_value,
       CASE WHEN jtype = 'VARCHAR' THEN json_extract_string(atom, '$') END AS string_value,
       CASE WHEN jtype = 'DOUBLE' OR (jtype = 'UBIGINT' AND TRY_CAST(atom::VARCHAR AS BIGINT) IS NULL)
            THEN atom::VARCHAR::DOUBLE END AS real_value,
       CASE jtype WHEN 'VARCHAR' THEN 'string' WHEN 'DOUBLE' THEN 'real' WHEN 'BOOLEAN' THEN 'bool'
                  WHEN 'NULL' THEN 'null' ELSE 'int' END AS value_type,
       CASE WHEN jtype = 'VARCHAR' THEN json_extract_string(atom, '$')
            WHEN jtype = 'NULL' THEN NULL ELSE atom::VARCHAR END AS display_value
FROM leaves
UNION ALL
SELECT arg_set_id * 1048576, arg_set_id, 'args.<undecodable args>', 'args.<undecodable args>', NULL, json, NULL,
       'string', json
FROM texts WHERE NOT json_valid(json)
"""


def _args_json(store: TraceStore) -> Any:
    """(arg_set_id, json) for every ``slice`` row with args (the instants Perfetto files as slices
    too): the texts gathered from the blob by numpy."""
    pa = ac.pyarrow()
    s, i = store.slices, store.instants
    points = instant_rows(store)
    all_off = np.concatenate([s.args_off, i.args_off[points]])
    all_len = np.concatenate([s.args_len, i.args_len[points]])
    extra = store.extra_end_args
    rows = np.flatnonzero(has_args(store))
    plain = rows if not extra else rows[~np.isin(rows, np.fromiter(extra, dtype=np.int64, count=len(extra)))]
    plain = plain[all_len[plain] > 0]
    off, length = all_off[plain].astype(np.int64), all_len[plain].astype(np.int64)
    order = np.argsort(off, kind="stable")
    plain, off, length = plain[order], off[order], length[order]
    raw = store.args_blob
    view = raw.buffer() if hasattr(raw, "buffer") else raw  # a mapped args file: no copy
    blob = np.frombuffer(view, dtype=np.uint8) if len(raw) else np.zeros(0, np.uint8)
    ends = off + length
    if len(plain) and (np.all(off[1:] >= ends[:-1]) and ends[-1] <= len(blob)):
        # Disjoint segments (every writer of the blob appends): keep their bytes in one pass.
        size = len(blob) + 1
        marks = np.bincount(off, minlength=size) - np.bincount(ends, minlength=size)
        data = blob[np.cumsum(marks[:-1]) > 0]
        offsets = np.concatenate([[0], np.cumsum(length)]).astype(np.int64)
        texts = pa.LargeStringArray.from_buffers(len(plain), pa.py_buffer(offsets), pa.py_buffer(data))
        texts = _valid_utf8(texts, pa)
        del blob, view  # the bytes were copied: let a mapped file close
    else:  # overlapping or foreign offsets: one text at a time
        texts = pa.array([store.args_blob[o:e].decode("utf-8", "replace") for o, e in zip(off.tolist(), ends.tolist())],
                         type=pa.large_string())
    ids = [plain]
    parts = [texts.cast(pa.large_string())]
    if extra:  # B/E pairs: both events' args merged (the store's rule), a few rows
        merged = sorted(int(r) for r in extra)
        ids.append(np.array(merged, dtype=np.int64))
        parts.append(pa.array([msgspec.json.encode(store.slice_args(r)).decode() for r in merged], type=pa.large_string()))
    return pa.table({"arg_set_id": pa.array(np.concatenate(ids).astype(np.int64)),
                     "json": pa.concat_arrays(parts)})


def _valid_utf8(texts: Any, pa) -> Any:
    try:
        texts.validate(full=True)
        return texts
    except pa.ArrowInvalid:  # a trace with broken UTF-8 in its args: decode those with U+FFFD
        return pa.array([b.decode("utf-8", "replace") for b in texts.cast(pa.large_binary()).to_pylist()],
                        type=pa.large_string())


def args_json(store: TraceStore) -> Any:
    return memo(store, "args_json", lambda: _args_json(store))


# Perfetto's EXTRACT_ARG(arg_set_id, 'args.a.b[0]') as a macro: the key becomes a JSON pointer
# (/a/b/0) into that one slice's text, so only the slices a query keeps are decoded. DuckDB has
# no dynamic type: the value comes back as text (cast it: ``extract_arg(…)::BIGINT``). The macro's
# argument is pasted into its subquery as written, so an unqualified ``arg_set_id`` would bind
# to the subquery's own table: that table's columns have names no query uses.
EXTRACT_ARG_SQL = r"""
CREATE TEMP MACRO extract_arg(_vtui_id, _vtui_key) AS (
  SELECT json_extract_string(_vtui_j._vtui_json,
                             '/' || replace(replace(replace(substr(_vtui_key, 6), ']', ''), '[', '.'), '.', '/'))
  FROM _vtui_args_json _vtui_j WHERE _vtui_j._vtui_set = _vtui_id)
"""
ARGS_NAMES = ("args", "arg_json", "extract_arg")


def register_args(store: TraceStore, con, names: list[str]) -> None:
    """``arg_json`` (arg_set_id, json: a slice's args as written), ``args`` (a view that
    flattens them) and ``extract_arg`` on the cursor ``con``, those in ``names``. ``args`` is
    computed by each query that names it, so the query's time limit covers the decoding (the
    whole args of a 259k-slice trace, 4.1M values, take ~13 CPU-s); ``extract_arg`` and
    ``json_extract`` on ``arg_json`` decode only the slices a query keeps."""
    con.register("_vtui_args_json", args_json(store).rename_columns(["_vtui_set", "_vtui_json"]))
    if "arg_json" in names:
        con.register("arg_json", args_json(store))
    if "args" in names:
        con.execute("CREATE TEMP VIEW args AS " + FLATTEN_SQL)
    if "extract_arg" in names:
        con.execute(EXTRACT_ARG_SQL)
