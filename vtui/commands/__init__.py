"""CLI subcommands: one module each, with `HELP`, `add_arguments(parser)` and `run(opts) -> int`.

`vtui/cli.py` finds them through `COMMANDS`; adding a command is one module and one line here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vtui.store.store import TraceStore

COMMANDS: dict[str, str] = {
    "info": "vtui.commands.info",
    "stats": "vtui.commands.stats",
    "search": "vtui.commands.search",
    "export": "vtui.commands.export",
    "insights": "vtui.commands.insights",
    "diff": "vtui.commands.diff",
    "tree": "vtui.commands.tree",
    "cache": "vtui.commands.cache",
}


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """Options every command that loads a trace takes (today: ``--no-cache``)."""
    parser.add_argument("--no-cache", action="store_true",
                        help="load from the file itself: neither read nor write the index cache")


def load_store(opts: argparse.Namespace, path: str | None = None,
               progress: Callable[[float], None] | None = None) -> TraceStore:
    """Load ``path`` (default ``opts.trace``) honouring ``add_load_arguments``' options."""
    from vtui.store.load import load_trace

    return load_trace(opts.trace if path is None else path, progress=progress,
                      cache=not getattr(opts, "no_cache", False))
