"""The same tables over a folder of vtui's Parquet export (``vtui export --format parquet``):
``DIR/<rank folder>/{slices,tracks,flows,counters,instants}.parquet``, one folder per rank, as
many exports as were written into ``DIR``.

Each rank folder's row and track ids are its export's; they are shifted folder by folder so that
``id``, ``parent_id``, ``track_id``, ``slice_out`` / ``slice_in`` stay unique and joinable across
the whole folder. Every table has the export's ``rank``. The files are read with pyarrow (DuckDB
itself never opens a file: its file access stays off). What the export does not hold is not
offered: ``args`` is empty, ``step`` / ``finding`` / ``launch`` need the trace itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from vtui.errors import UsageError
from vtui.query import arrowcols as ac
from vtui.store.devices import DEVICE_WORK_CATS
from vtui.store.tracks import COUNTER, GPU, THREAD

PARTS = ("slices", "tracks", "flows", "counters", "instants")


def rank_folders(path: Path) -> list[Path]:
    """The rank folders of a Parquet export folder (the folder itself when it is one); [] if none."""
    if not path.is_dir():
        return []
    if (path / "slices.parquet").is_file():
        return [path]
    return sorted(p.parent for p in path.glob("*/slices.parquet"))


class ParquetSource:
    """The Parquet files of ``path`` as the query tables (built once, when first named)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.folders = rank_folders(path)
        if not self.folders:
            raise UsageError(f"{path}: no vtui Parquet export in it (DIR/*/slices.parquet)")
        self._tables: dict[str, Any] | None = None

    def table(self, name: str) -> Any:
        if self._tables is None:
            self._tables = self._build()
        if name not in self._tables:
            raise UsageError(f"{name} needs the trace itself, not its Parquet export")
        return self._tables[name]

    def names(self) -> list[str]:
        return ["slice", "thread_track", "thread", "process", "track", "counter", "counter_track", "flow",
                "instant", "kernel", "args", "launch", "step", "finding"]

    # ---- building ------------------------------------------------------------------------------
    def _read(self, folder: Path, part: str):
        import pyarrow.parquet as pq

        file = folder / f"{part}.parquet"
        try:
            pf = pq.ParquetFile(file)
            bound = decoded_bound(file.stat().st_size)
            rows, cols = pf.metadata.num_rows, pf.metadata.num_columns
            if rows * max(cols, 1) * 8 > bound:
                raise UsageError(f"{file}: {rows:,} rows × {cols} columns from {file.stat().st_size:,} bytes: "
                                 f"over {bound:,} bytes decoded (a Parquet export of vtui's is not so dense)")
            text = [f.name for f in pf.schema_arrow if _is_text(f.type)]
            table = pq.read_table(file, read_dictionary=text)  # text stays dictionary-encoded: sized, not expanded
        except (OSError, ValueError) as exc:
            raise UsageError(f"{file}: {exc}") from None
        decoded = sum(_text_bytes(table.column(name)) for name in text)
        if decoded > bound:
            raise UsageError(f"{file}: its text decodes to {decoded:,} bytes from {file.stat().st_size:,} on disk, "
                             f"over the {bound:,} allowed (as --max-inflate bounds a gzip trace)")
        return table

    def _build(self) -> dict[str, Any]:
        pa = ac.pyarrow()
        parts: dict[str, list[dict[str, Any]]] = {k: [] for k in ("slice", "flow", "counter", "instant")}
        tracks: list[dict[str, Any]] = []
        row_off = track_off = 0
        for folder in self.folders:
            t = {p: self._read(folder, p) for p in PARTS}
            s = t["slices"]
            row = s.column("row").to_numpy().astype(np.int64) + row_off
            parent = s.column("parent").to_numpy().astype(np.int64)
            parts["slice"].append({
                "id": row, "ts": s.column("start_ns").to_numpy(), "dur": s.column("dur_ns").to_numpy(),
                "name": s.column("name").cast(pa.string()), "category": s.column("cat").cast(pa.string()),
                "depth": s.column("depth").to_numpy(), "parent_id": np.where(parent >= 0, parent + row_off, -1),
                "track_id": s.column("track").to_numpy().astype(np.int64) + track_off,
                "rank": s.column("rank").to_numpy()})
            f = t["flows"]
            if f.num_rows:
                out, into = (f.column(c).to_numpy(zero_copy_only=False).astype(np.int64) for c in ("src_slice", "dst_slice"))
                parts["flow"].append({"slice_out": np.where(out >= 0, out + row_off, -1),
                                      "slice_in": np.where(into >= 0, into + row_off, -1),
                                      "name": f.column("name").cast(pa.string()), "category": f.column("cat").cast(pa.string()),
                                      "rank": f.column("rank").to_numpy()})
            c = t["counters"]
            if c.num_rows:
                parts["counter"].append({"ts": c.column("ts_ns").to_numpy(),
                                         "track_id": c.column("track").to_numpy().astype(np.int64) + track_off,
                                         "value": c.column("value").to_numpy(), "rank": c.column("rank").to_numpy()})
            i = t["instants"]
            if i.num_rows:
                parts["instant"].append({"ts": i.column("ts_ns").to_numpy(), "name": i.column("name").cast(pa.string()),
                                         "category": i.column("cat").cast(pa.string()),
                                         "track_id": i.column("track").to_numpy().astype(np.int64) + track_off,
                                         "rank": i.column("rank").to_numpy()})
            for tr in t["tracks"].to_pylist():
                tracks.append({**tr, "folder": str(folder), "id": int(tr["track"]) + track_off})
            if len(row):
                row_off = int(row.max()) + 1
            ids = t["tracks"].column("track").to_numpy()
            if len(ids):
                track_off += int(ids.max()) + 1
        out = {"slice": _concat(parts["slice"], _SLICE), "flow": _concat(parts["flow"], _FLOW),
               "counter": _concat(parts["counter"], _COUNTER), "instant": _concat(parts["instant"], _INSTANT)}
        out.update(_track_tables(tracks))
        out["kernel"] = _kernels(out["slice"])
        out["args"] = pa.table({"arg_set_id": pa.array([], pa.int64()), "flat_key": pa.array([], pa.string()),
                                "key": pa.array([], pa.string()), "int_value": pa.array([], pa.int64()),
                                "string_value": pa.array([], pa.string()), "real_value": pa.array([], pa.float64()),
                                "value_type": pa.array([], pa.string())})
        return out


DECODED_MIN = 64 << 20  # bytes a Parquet file may always decode to
DECODED_MAX = 3 << 29  # and never more than this (1.5 GiB): an Arrow string array's offsets end at 2 GiB


def decoded_bound(size_on_disk: int) -> int:
    """Bytes a Parquet file of ``size_on_disk`` may decode to: the gzip bound's ratio, capped."""
    from vtui.io.reader import MAX_INFLATE_RATIO

    return int(min(DECODED_MAX, max(DECODED_MIN, size_on_disk * MAX_INFLATE_RATIO)))


def _is_text(arrow_type: Any) -> bool:
    pa = ac.pyarrow()
    value = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    return bool(pa.types.is_string(value) or pa.types.is_large_string(value)
                or pa.types.is_binary(value) or pa.types.is_large_binary(value))


def _text_bytes(column: Any) -> int:
    """Bytes a text column holds once its dictionary is expanded (counted, not expanded)."""
    import pyarrow.compute as pc

    total = 0
    for chunk in column.chunks:
        if not hasattr(chunk, "dictionary"):
            total += chunk.nbytes
            continue
        lengths = pc.binary_length(chunk.dictionary).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        if len(lengths) and len(chunk):
            idx = chunk.indices.fill_null(0).to_numpy(zero_copy_only=False)
            total += int(np.bincount(idx, minlength=len(lengths)) @ lengths)
    return total


_SLICE = {"id": "int64", "ts": "int64", "dur": "int64", "name": "string", "category": "string", "depth": "int32",
          "parent_id": "int64", "track_id": "int64", "arg_set_id": "int64", "rank": "int32"}
_FLOW = {"id": "int64", "slice_out": "int64", "slice_in": "int64", "name": "string", "category": "string", "rank": "int32"}
_COUNTER = {"id": "int64", "ts": "int64", "track_id": "int64", "value": "float64", "rank": "int32"}
_INSTANT = {"id": "int64", "ts": "int64", "name": "string", "category": "string", "track_id": "int64", "rank": "int32"}
_NULL_BELOW_ZERO = ("parent_id", "slice_out", "slice_in")


def _concat(parts: list[dict[str, Any]], schema: dict[str, str]) -> Any:
    """Per-folder columns as one table with ``schema``'s columns and types (ids numbered when absent)."""
    pa = ac.pyarrow()
    total = sum(len(next(iter(p.values()))) for p in parts)
    cols: dict[str, Any] = {}
    for name, kind in schema.items():
        arrow_type = getattr(pa, kind)()
        if name == "arg_set_id":  # the export holds no args
            cols[name] = pa.nulls(total, arrow_type)
        elif name == "id" and not (parts and "id" in parts[0]):
            cols[name] = pa.array(np.arange(total, dtype=np.int64))
        elif not parts:
            cols[name] = pa.array([], arrow_type)
        elif kind == "string":
            cols[name] = pa.concat_arrays([pa.array(p[name]).cast(arrow_type) if not isinstance(p[name], pa.ChunkedArray)
                                           else p[name].combine_chunks().cast(arrow_type) for p in parts])
        else:
            values = np.concatenate([np.asarray(p[name]) for p in parts]).astype(kind)
            cols[name] = ac.column(values, null_where=values < 0 if name in _NULL_BELOW_ZERO else None)
    return pa.table(cols)


def _int_or_none(text: Any) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _track_tables(tracks: list[dict[str, Any]]) -> dict[str, Any]:
    """track, thread_track, thread, process and counter_track from the tracks files (small)."""
    pa = ac.pyarrow()
    upid_of: dict[tuple, int] = {}
    utid_of: dict[tuple, int] = {}
    procs, threads = [], []
    for t in tracks:
        pkey = (t["folder"], t["pid"])
        if t["kind"] != "global" and pkey not in upid_of:
            upid_of[pkey] = len(procs)
            procs.append(t)
        t["upid"] = upid_of.get(pkey) if t["kind"] != "global" else None
        if t["kind"] in (THREAD, GPU):
            tkey = (t["folder"], t["pid"], t["tid"])
            if tkey not in utid_of:
                utid_of[tkey] = len(threads)
                threads.append(t)
            t["utid"] = utid_of[tkey]
        else:
            t["utid"] = None

    def table(rows: list[dict], cols: dict[str, tuple[str, Any]]) -> Any:
        return pa.table({name: pa.array([get(r) for r in rows], type=getattr(pa, kind)())
                         for name, (kind, get) in cols.items()})

    rank = ("int32", lambda r: r["rank"])
    none: tuple[str, Any] = ("int64", lambda r: None)  # start_ts / end_ts: no scheduling data (NULL, as Perfetto's)

    def _main_thread(r: dict) -> bool | None:
        tid, pid = _int_or_none(r["tid"]), _int_or_none(r["pid"])
        return None if tid is None or pid is None else tid == pid

    thread_rows = [t for t in tracks if t["kind"] in (THREAD, GPU)]
    return {
        "track": table(tracks, {"id": ("int64", lambda r: r["id"]), "name": ("string", lambda r: r["name"]),
                                "type": ("string", lambda r: r["kind"]), "upid": ("int64", lambda r: r["upid"]),
                                "utid": ("int64", lambda r: r["utid"]), "label": ("string", lambda r: r["label"]),
                                "rank": rank}),
        "thread_track": table(thread_rows, {"id": ("int64", lambda r: r["id"]), "utid": ("int64", lambda r: r["utid"]),
                                            "name": ("string", lambda r: r["name"]), "type": ("string", lambda r: r["kind"]),
                                            "rank": rank}),
        "thread": table(threads, {"utid": ("int64", lambda r: r["utid"]), "tid": ("int64", lambda r: _int_or_none(r["tid"])),
                                  "name": ("string", lambda r: r["name"]), "upid": ("int64", lambda r: r["upid"]),
                                  "is_main_thread": ("bool_", _main_thread), "start_ts": none, "end_ts": none,
                                  "rank": rank}),
        "process": table(procs, {"upid": ("int64", lambda r: r["upid"]), "pid": ("int64", lambda r: _int_or_none(r["pid"])),
                                 "name": ("string", lambda r: r["process"]), "label": ("string", lambda r: r["process"]),
                                 "start_ts": none, "end_ts": none, "rank": rank}),
        "counter_track": table([t for t in tracks if t["kind"] == COUNTER],
                               {"id": ("int64", lambda r: r["id"]), "name": ("string", lambda r: r["name"]),
                                "upid": ("int64", lambda r: r["upid"]), "rank": rank}),
    }


def _kernels(slices: Any) -> Any:
    """Device work by category (the store's rule for Kineto's categories)."""
    import pyarrow.compute as pc

    pa = ac.pyarrow()
    cats = pc.utf8_lower(slices.column("category"))
    keep = pc.is_in(cats, value_set=pa.array(sorted(DEVICE_WORK_CATS)))
    kind = pc.if_else(pc.match_substring(cats, "memcpy"), "memcpy",
                      pc.if_else(pc.match_substring(cats, "memset"), "memset", "kernel"))
    picked = slices.append_column("kind", kind).filter(keep)
    return picked.select(["id", "ts", "dur", "name", "category", "kind", "track_id", "rank"])
