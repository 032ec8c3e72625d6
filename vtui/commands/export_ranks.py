"""`vtui export-ranks FOLDER -o OUT [--index N] [--count]`

Each rank file of FOLDER to its four Parquet files (steps, collective and compute kernels) in
OUT/rank-file-N, N its position in FOLDER: one command per rank with --index, so a Slurm array
(or Ray, Dask) fans the ranks out; then `vtui ranks OUT --engine duckdb|spark` runs the
cross-rank SQL over OUT. Example: vtui export-ranks profiles/ -o /shared/out --index $SLURM_ARRAY_TASK_ID
"""

from __future__ import annotations

import argparse

from vtui.commands import add_load_arguments

HELP = "per-rank Parquet for `vtui ranks OUT --engine duckdb|spark` (one rank per call with --index)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="folder of per-rank traces (or one trace)")
    parser.add_argument("-o", "--out", help="the export folder (OUT/rank-file-N per rank; start from an empty one)")
    parser.add_argument("--index", type=int, metavar="N",
                        help="only the N-th file of the folder (0-based, the order `--count` numbers)")
    parser.add_argument("--count", action="store_true", help="print the number of rank files and stop")
    add_load_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.commands import load_options
    from vtui.errors import UsageError
    from vtui.query.rank_export import export_rank, rank_files
    from vtui.safe_text import say

    if opts.count:
        say(str(len(rank_files(Path(opts.trace)))))
        return 0
    if not opts.out:
        raise UsageError("export-ranks needs -o OUT (or --count)")
    options = load_options(opts)
    out = Path(opts.out)
    for pos, file in rank_files(Path(opts.trace), opts.index):
        folder = export_rank(file, pos, out, options)
        say(f"{folder}  {file.name}")
    return 0
