"""Write a store as Parquet, one file set per rank, for DuckDB / Spark / Ray to query across ranks.

Layout: ``OUT/<rank folder>/{slices,instants,counters,flows,tracks}.parquet``, one folder per
source file (rank) of the trace, every row carrying ``rank`` and ``source``. Exporting each
rank's trace into the same ``OUT`` gives a folder that ``read_parquet('OUT/*/slices.parquet')``
reads as one table. Names and categories are dictionary-encoded strings; times are int64 ns
relative to the trace start plus ``ts_us``, the absolute time as written in the file, which is
what lines ranks up. Needs pyarrow (``pip install 'vtui[parquet]'``).
"""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from vtui.atomic import atomic_write
from vtui.errors import UsageError
from vtui.store.store import TraceStore

TABLES = ("slices", "instants", "counters", "flows", "tracks")


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("Parquet export needs pyarrow: pip install 'vtui[parquet]'") from None
    return pa, pq


def rank_of(store: TraceStore, source: int) -> int:
    """The rank a source file stands for (``ranks_of``)."""
    return ranks_of(store)[source]


def ranks_of(store: TraceStore) -> list[int]:
    """Each source file's rank: Kineto's distributedInfo.rank, else a number in its name
    (``rank-3``), else its position — all by position when two files name the same rank (their
    rows would merge) or a rank does not fit a rank column (0 … 2^31 - 1)."""
    found = store.derived.get("ranks_of")
    if found is None:
        named = [_named_rank(store, i) for i in range(len(store.sources))]
        if len(set(named)) != len(named) or not all(0 <= r < 2**31 for r in named):
            named = list(range(len(named)))
        found = store.derived["ranks_of"] = named
    return found


def _named_rank(store: TraceStore, source: int) -> int:
    src = store.sources[source]
    info = src.metadata.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int) and not isinstance(info.get("rank"), bool):
        return info["rank"]
    match = re.search(r"rank[-_ ]?(\d{1,12})(?!\d)", Path(src.path).name)
    return int(match.group(1)) if match else source


def check_parquet_output(out_dir: str | os.PathLike[str], trace: str | os.PathLike[str]) -> Path:
    """The output folder, or a UsageError: pyarrow missing, a file in the way, inside the input."""
    _pyarrow()
    out = Path(out_dir)
    try:
        target, src = out.resolve(strict=False), Path(trace).resolve()
    except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13)
        raise UsageError(f"{out}: a symbolic link loop, not a folder") from None
    if target == src or src in target.parents:
        raise UsageError(f"{out}: refusing to write into the input trace")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a folder")
    if not target.parent.is_dir():
        raise UsageError(f"{out}: folder {target.parent} does not exist")
    return out


def write_parquet(store: TraceStore, out_dir: str | os.PathLike[str], with_args: bool = False,
                  overwrite: bool = True) -> list[Path]:
    """Write the store under ``out_dir`` (created); returns the files written.

    ``with_args`` adds each slice's args as a JSON text column (decoded on the way: slower).
    Each file is written through `atomic_write` (temp name, then rename), so a reader never sees half a file. Without
    ``overwrite`` a rank folder that already holds files is a UsageError.
    """
    pa, pq = _pyarrow()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not overwrite:
        for src_index in range(len(store.sources)):
            folder = out / _folder_name(store, src_index, rank_of(store, src_index))
            if folder.is_dir() and any(folder.iterdir()):
                raise UsageError(f"{folder}: already exists (pass --force to overwrite)")
    written: list[Path] = []
    track_source = store.tracks.columns["source"]
    strings = pa.array(store.strings, type=pa.string())
    for src_index, src in enumerate(store.sources):
        rank = rank_of(store, src_index)
        folder = out / _folder_name(store, src_index, rank)
        if folder.is_symlink():  # a link planted in the output folder would take the files anywhere
            raise UsageError(f"{folder}: is a symbolic link; refusing to write through it")
        folder.mkdir(exist_ok=True)
        tables = _tables(store, src_index, rank, Path(src.path).name, track_source, strings, with_args, pa)
        for name, table in tables.items():
            path = folder / f"{name}.parquet"
            atomic_write(path, partial(_write_table, pq, table))
            written.append(path)
    return written


def _write_table(pq, table, fh: BinaryIO) -> None:
    pq.write_table(table, fh, compression="zstd")


def _folder_name(store: TraceStore, source: int, rank: int) -> str:
    name = Path(store.sources[source].path).name
    for suffix in (".gz", ".json", ".trace", ".pt"):
        name = name.removesuffix(suffix)
    name = re.sub(r"[^\w.-]+", "_", name).strip("._") or "trace"
    return f"rank{rank}.{name}"  # no "=": DuckDB would read it as a hive partition and shadow the column


def _tables(store: TraceStore, source: int, rank: int, file: str, track_source: np.ndarray, strings,
            with_args: bool, pa) -> dict[str, Any]:
    def names(ids: np.ndarray):
        return pa.DictionaryArray.from_arrays(pa.array(np.asarray(ids, dtype=np.int32)), strings)

    def common(n: int) -> dict[str, Any]:
        return {"rank": pa.array(np.full(n, rank, dtype=np.int32)),
                "source": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([file]))}

    tracks = store.tracks
    track_label = pa.array([t.label for t in tracks], type=pa.string())
    track_kind = pa.array([t.kind for t in tracks], type=pa.string())

    def track_cols(track: np.ndarray, prefix: str = "") -> dict[str, Any]:
        track = np.asarray(track, dtype=np.int32)
        idx = pa.array(track, mask=track < 0)  # -1: an unbound flow end
        return {f"{prefix}track": idx,
                f"{prefix}track_kind": pa.DictionaryArray.from_arrays(idx, track_kind),
                f"{prefix}track_label": pa.DictionaryArray.from_arrays(idx, track_label)}

    origin = store.origin_us
    s = store.slices
    rows = np.flatnonzero(s.source == source)
    self_ns = store.self_ns[rows]
    slices = {**common(len(rows)), **track_cols(s.track[rows]),
              "name": names(s.name_id[rows]), "cat": names(s.cat_id[rows]),
              "start_ns": pa.array(np.asarray(s.start_ns[rows])), "end_ns": pa.array(np.asarray(s.end_ns[rows])),
              "dur_ns": pa.array(np.asarray(s.end_ns[rows] - s.start_ns[rows])), "self_ns": pa.array(self_ns),
              "ts_us": pa.array(origin + np.asarray(s.start_ns[rows]) / 1000.0),
              "depth": pa.array(np.asarray(s.depth[rows])), "parent": pa.array(np.asarray(s.parent[rows])),
              "row": pa.array(rows.astype(np.int64)), "ordinal": pa.array(np.asarray(s.ordinal[rows]))}
    if with_args:
        import msgspec

        slices["args"] = pa.array([msgspec.json.encode(store.slice_args(int(r))).decode() for r in rows],
                                  type=pa.string())

    i = store.instants
    irows = np.flatnonzero(i.source == source)
    from vtui.io.events import PHASES

    ph_names = pa.array(["?", *PHASES])
    instants = {**common(len(irows)), **track_cols(i.track[irows]),
                "name": names(i.name_id[irows]), "cat": names(i.cat_id[irows]),
                "ph": pa.DictionaryArray.from_arrays(pa.array(np.asarray(i.ph[irows], dtype=np.int32)), ph_names),
                "ts_ns": pa.array(np.asarray(i.ts_ns[irows])),
                "ts_us": pa.array(origin + np.asarray(i.ts_ns[irows]) / 1000.0),
                "ordinal": pa.array(np.asarray(i.ordinal[irows]))}

    c = store.counters
    crows = np.flatnonzero(track_source[c.track] == source) if len(c) else np.zeros(0, dtype=np.int64)
    counters = {**common(len(crows)), **track_cols(c.track[crows]),
                "ts_ns": pa.array(np.asarray(c.ts_ns[crows])), "ts_us": pa.array(origin + np.asarray(c.ts_ns[crows]) / 1000.0),
                "value": pa.array(np.asarray(c.value[crows]))}

    f = store.flows
    frows = np.flatnonzero(track_source[np.maximum(f.src_track, 0)] == source) if len(f) else np.zeros(0, dtype=np.int64)
    flows = {**common(len(frows)), "name": names(f.name_id[frows]), "cat": names(f.cat_id[frows]),
             "src_slice": pa.array(np.asarray(f.src_slice[frows])), "dst_slice": pa.array(np.asarray(f.dst_slice[frows])),
             "src_ts_ns": pa.array(np.asarray(f.src_ts_ns[frows])), "dst_ts_ns": pa.array(np.asarray(f.dst_ts_ns[frows])),
             **track_cols(f.src_track[frows], "src_"), **track_cols(f.dst_track[frows], "dst_")}

    mine = [t for t in tracks if t.source == source]
    track_table = {**common(len(mine)), "track": pa.array([t.id for t in mine], type=pa.int32()),
                   "kind": pa.array([t.kind for t in mine], type=pa.string()),
                   "pid": pa.array([None if t.pid is None else str(t.pid) for t in mine], type=pa.string()),
                   "tid": pa.array([None if t.tid is None else str(t.tid) for t in mine], type=pa.string()),
                   "name": pa.array([t.title for t in mine], type=pa.string()),
                   "process": pa.array([t.process_title for t in mine], type=pa.string()),
                   "label": pa.array([t.label for t in mine], type=pa.string()),
                   "slices": pa.array([t.slice_count for t in mine], type=pa.int64()),
                   "lanes": pa.array([t.lanes for t in mine], type=pa.int32())}
    return {name: pa.table(cols) for name, cols in
            (("slices", slices), ("instants", instants), ("counters", counters), ("flows", flows), ("tracks", track_table))}
