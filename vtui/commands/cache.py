"""`vtui cache list|clear`: the index cache that makes reopening a trace instant.

Entries live in $XDG_CACHE_HOME/vtui (else ~/.cache/vtui), one per trace version; a changed
trace gets a new entry, so old ones only take space until `vtui cache clear`.
"""

from __future__ import annotations

import argparse
import time

HELP = "list or clear the index cache (reopening a trace from it skips parsing)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("list", "clear"), help="list the entries, or delete them all")


def run(opts: argparse.Namespace) -> int:
    from vtui.store import cache

    root = cache.cache_root()
    if opts.action == "clear":
        entries, freed = cache.clear()
        print(f"removed {entries} cache entr{'y' if entries == 1 else 'ies'} ({format_bytes(freed)}) from {root}")
        return 0
    found = cache.list_entries()
    if not found:
        print(f"the cache is empty ({root})")
        return 0
    total = 0
    for e in found:
        total += e.disk_bytes
        age = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created)) if e.created else "?"
        trace = e.trace[0] if len(e.trace) == 1 else f"{e.trace[0]} (+{len(e.trace) - 1} files)"
        print(f"{format_bytes(e.disk_bytes):>10}  {e.events:>12,} events  {age}  {trace}")
    print(f"{len(found)} entr{'y' if len(found) == 1 else 'ies'}, {format_bytes(total)} in {root}")
    return 0


def format_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"
