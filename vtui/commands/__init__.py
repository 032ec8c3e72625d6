"""CLI subcommands: one module each, with `HELP`, `add_arguments(parser)` and `run(opts) -> int`.

`vtui/cli.py` finds them through `COMMANDS`; adding a command is one module and one line here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vtui.options import LoadOptions
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
    "query": "vtui.commands.query",
    "mcp": "vtui.mcp",
    "schema": "vtui.commands.schema",
    "ranks": "vtui.commands.ranks",
    "export-ranks": "vtui.commands.export_ranks",
}


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """Options every command that loads a trace takes (``--no-cache``, ``--max-inflate``)."""
    parser.add_argument("--no-cache", action="store_true",
                        help="load from the file itself: neither read nor write the index cache")
    add_inflate_argument(parser)


def add_inflate_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-inflate", type=float, metavar="RATIO",
                        help="a .gz may inflate to RATIO x its size (default 200, at least 256 MiB; 0: no limit)")


def load_options(opts: Any) -> LoadOptions:
    """The load's options: the environment's (read here, at the edge), then the command line's
    ``--no-cache`` and ``--max-inflate``. Passed down; nothing below reads the environment."""
    from vtui.options import LoadOptions

    changes: dict = {}
    ratio = getattr(opts, "max_inflate", None)
    if ratio is not None:
        if ratio < 0:
            from vtui.errors import UsageError

            raise UsageError("--max-inflate must be 0 (no limit) or a positive ratio")
        changes["max_inflate"] = float(ratio)
    if getattr(opts, "no_cache", False):
        changes["cache"] = False
    return LoadOptions.from_environ(**changes)


# A command's ``compute`` takes one (`vtui mcp` passes its LRU of stores, so tool calls on one
# trace load it once); None: a plain load.
Loader = Callable[[str, bool], "TraceStore"]  # (path, use the index cache) -> store


def load_store(opts: Any, path: str | None = None, progress: Callable[[float], None] | None = None,
               loader: Loader | None = None) -> TraceStore:
    """Load ``path`` (default ``opts.trace``) honouring ``add_load_arguments``' options, through
    ``loader`` when given."""
    from vtui.load.trace import load_trace

    options = load_options(opts)
    target = opts.trace if path is None else path
    if loader is not None:
        return loader(str(target), options.cache)
    return load_trace(target, progress=progress, options=options)
