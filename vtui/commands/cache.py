"""`vtui cache list|clear|rm TRACE`: the index cache that makes reopening a trace instant.

Entries live in $XDG_CACHE_HOME/vtui (else ~/.cache/vtui), one per trace version; a changed
trace gets a new entry. The cache keeps to VTUI_CACHE_MAX bytes (default 4GB): the least
recently opened entries go first. `clear` deletes every entry (and temp files left by killed
loads), `rm TRACE` the entries of one trace; nothing else in the folder is touched.
"""

from __future__ import annotations

import argparse
import time

from vtui.units import format_bytes

HELP = "list, clear or rm TRACE: the index cache (reopening a trace from it skips parsing)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "clear", "rm"),
                        help="list the entries, delete them all, or delete one trace's (rm TRACE)")
    parser.add_argument("trace", nargs="?", help="for rm: the trace file or folder whose entries go")


def run(opts: argparse.Namespace) -> int:
    from pathlib import Path

    from vtui.errors import UsageError
    from vtui.safe_text import safe_field, say
    from vtui.store import cache
    from vtui.tempfiles import disk_bytes

    root = cache.cache_root()
    if (opts.action == "rm") != (opts.trace is not None):
        raise UsageError("give a trace with rm (vtui cache rm TRACE), and only with rm")
    if opts.action == "clear":
        entries, freed = cache.clear()
        say(f"removed {_entries(entries)} ({format_bytes(freed)}) from {root}")
        return 0
    if opts.action == "rm":
        entries, freed = cache.remove(_trace_files(Path(opts.trace)))
        if not entries:
            raise UsageError(f"{opts.trace}: no cache entry for this trace in {root}")
        say(f"removed {_entries(entries)} ({format_bytes(freed)}) for {opts.trace}")
        return 0
    found = cache.list_entries()
    temps = cache.temp_stats()
    lines = [] if found or cache.ranks_folders() else [f"the cache is empty ({root})"]
    total = 0
    # One line per trace: a trace changed since it was cached (a new copy, an edit) has older entries
    # that are never read again; they are counted on its line, not listed as if they were other traces.
    by_trace: dict[tuple[str, ...], list] = {}
    for e in sorted(found, key=lambda e: -e.used):  # most recently used first: the last ones go first
        by_trace.setdefault(tuple(e.trace), []).append(e)
    for entries in by_trace.values():
        e = entries[0]
        total += sum(x.disk_bytes for x in entries)
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.used)) if e.used else "?"
        trace = e.trace[0] if len(e.trace) == 1 else f"{e.trace[0]} (+{len(e.trace) - 1} files)"
        old = entries[1:]
        stale = (f"  (+{len(old)} older entr{'y' if len(old) == 1 else 'ies'} of a previous version, "
                 f"{format_bytes(sum(x.disk_bytes for x in old))}: vtui cache rm TRACE)") if old else ""
        lines.append(f"{format_bytes(e.disk_bytes):>10}  {e.events:>12,} events  used {used}  "
                     f"{safe_field(trace, 300)}{stale}")
    if found:
        # Blocks on disk, as the cap counts them (a big load's args file is sparse: its size says more).
        lines.append(f"{_entries(len(found))}, {format_bytes(total)} on disk of {format_bytes(cache.cache_limit())} "
                     f"(VTUI_CACHE_MAX) in {root}")
    ranks = cache.ranks_folders()
    if ranks:  # `vtui ranks --engine duckdb`'s per-rank Parquet: in the same cap, cleared with the rest
        size = sum(disk_bytes(f) for f in ranks)
        lines.append(f"{len(ranks)} per-rank Parquet folder{'s' if len(ranks) != 1 else ''} ({format_bytes(size)}) "
                     f"of vtui ranks --engine duckdb in {root / cache.RANKS_FOLDER}")
    if temps.count:
        lines.append(f"{temps.count} temp file{'s' if temps.count != 1 else ''} ({format_bytes(temps.bytes)}) of "
                     "running or killed loads; the next load or `vtui cache clear` removes those no process owns")
    say("\n".join(lines))
    return 0


def _trace_files(path):
    from vtui.errors import TraceLoadError
    from vtui.load.trace import trace_files

    try:
        return trace_files(path)
    except TraceLoadError:  # gone or unreadable: its entries are still found by their path
        return [path]


def _entries(n: int) -> str:
    return f"{n} cache entr{'y' if n == 1 else 'ies'}"
