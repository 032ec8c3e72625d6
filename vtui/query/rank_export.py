"""Per-rank Parquet as a job of its own: one trace file → its four Parquet files in ``OUT/rank-file-N``.

What `vtui export-ranks` runs (once per rank, so a Slurm array, Ray or Dask can fan the ranks out)
and what each Spark task of `vtui ranks --engine spark` runs on an executor. N is the file's
position in the trace folder (the order `trace_files` gives), so every task of an array finds its
file from the folder and its index alone. `vtui ranks OUT --engine duckdb|spark` then reads the
export without loading a trace.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from vtui.errors import UsageError
from vtui.query.ranks import PARQUET, write_rank

if TYPE_CHECKING:
    from vtui.options import LoadOptions

FOLDER = re.compile(r"rank-file-(\d+)")


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("per-rank Parquet needs pyarrow: pip install 'vtui[sql]'") from None
    return pa, pq


def export_rank(file: Path, pos: int, out: Path, options: LoadOptions | None = None) -> Path:
    """Load one trace file and write its ``meta/steps/colls/comp`` Parquet to ``out/rank-file-<pos>``
    (each file to a temp name, then renamed); the store is dropped on return."""
    from vtui.analysis.ranks.tables import rank_tables
    from vtui.load.trace import load_trace

    pa, pq = _pyarrow()
    store = load_trace(file, cache=True if options is None else options.cache, options=options)
    folder = out / f"rank-file-{pos}"
    write_rank(rank_tables(store)[0], pos, folder, pa, pq)
    return folder


def export_folders(path: Path) -> list[Path] | None:
    """The rank folders of an export (``rank-file-N`` holding all four files), in N order; None where
    ``path`` is not a folder holding any."""
    if not path.is_dir():
        return None
    found = []
    for child in path.iterdir():
        m = FOLDER.fullmatch(child.name)
        if m and all((child / f"{n}.parquet").is_file() for n in PARQUET):
            found.append((int(m.group(1)), child))
    return [f for _n, f in sorted(found)] or None


def rank_files(path: Path, index: int | None = None) -> list[tuple[int, Path]]:
    """(position, file) of every trace file of a folder, or of the one at ``index``."""
    from vtui.load.trace import trace_files

    files = list(enumerate(trace_files(path)))
    if index is None:
        return files
    if not 0 <= index < len(files):
        raise UsageError(f"--index {index}: {path} holds {len(files)} trace file(s), numbered 0 to {len(files) - 1}")
    return [files[index]]
