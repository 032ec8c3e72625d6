"""`vtui export TRACE -o OUT.json [--range A:B] [--track REGEX] [--force]`
`vtui export TRACE --format pftrace -o OUT.pftrace [--range A:B] [--track REGEX] [--force]`
`vtui export TRACE --format parquet -o DIR [--force]`

JSON: writes the events overlapping the range, exactly as in the source, as a Chrome-trace JSON
that Perfetto and vtui open. pftrace: the same events as a Perfetto protobuf trace (smaller, and
faster for Perfetto to open), flows as flow ids on their slices. Parquet: writes the whole store as one file set per rank under DIR
(slices, instants, counters, flows, tracks), for DuckDB / Spark across ranks; export every rank
into the same DIR. Never writes over the input; refuses existing output without --force.
"""

from __future__ import annotations

import argparse

from vtui.commands.common import add_trace_arguments, load

HELP = "write a range (and tracks) as a trace Perfetto opens"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument("-o", "--output", required=True, help="output .json / .pftrace file (a folder for a folder of ranks, or for --format parquet)")
    parser.add_argument("--format", choices=("json", "pftrace", "parquet"), default="json",
                        help="json: the events as written (default); pftrace: the same as a Perfetto protobuf "
                             "trace; parquet: the store, one file set per rank")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")


def run(opts: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.atomic import check_output_folder, check_output_path
    from vtui.export.pftrace import export_pftrace
    from vtui.export.trace import export_range
    from vtui.safe_text import say

    if opts.format == "parquet":
        return _run_parquet(opts)
    folder = Path(opts.trace).is_dir()  # a folder of ranks exports to a folder, one file per rank
    (check_output_folder if folder else check_output_path)(opts.output, [opts.trace], opts.force)  # before a long load
    store, rng, tracks = load(opts)
    export = export_pftrace if opts.format == "pftrace" else export_range
    plan = export(store, opts.output, rng.t0, rng.t1, tracks, overwrite=opts.force)
    counts = ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in plan.counts.items() if v)
    where = f"folder {opts.output} (one file per rank)" if len(store.sources) > 1 else opts.output
    say(f"wrote {plan.events:,} events to {where} ({counts})")
    return 0


def _run_parquet(opts: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.commands import load_store
    from vtui.errors import UsageError
    from vtui.export.parquet import check_parquet_output, write_parquet
    from vtui.safe_text import say

    if opts.range or opts.track:
        raise UsageError("--range and --track apply to JSON export; Parquet gets the whole trace")
    out = check_parquet_output(opts.output, opts.trace)  # fail before a long load (pyarrow missing too)
    store = load_store(opts)
    files = write_parquet(store, out, overwrite=opts.force)
    folders = sorted({str(f.parent.relative_to(Path(out))) for f in files})
    say(f"wrote {len(files)} Parquet files for {len(folders)} rank(s) to {out}: {', '.join(folders)} "
          f"({len(store.slices):,} slices)")
    return 0
