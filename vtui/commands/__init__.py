"""CLI subcommands: one module each, with `HELP`, `add_arguments(parser)` and `run(opts) -> int`.

`vtui/cli.py` finds them through `COMMANDS`; adding a command is one module and one line here.
"""

from __future__ import annotations

import argparse
import os
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
    "ranks": "vtui.commands.ranks",
}


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """Options every command that loads a trace takes (``--no-cache``, ``--max-inflate``)."""
    parser.add_argument("--no-cache", action="store_true",
                        help="load from the file itself: neither read nor write the index cache")
    add_inflate_argument(parser)


def add_inflate_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-inflate", type=float, metavar="RATIO",
                        help="a .gz may inflate to RATIO x its size (default 200, at least 256 MiB; 0: no limit)")


def apply_inflate_argument(opts: argparse.Namespace) -> None:
    """``--max-inflate`` reaches the reader (and the app's loader process) through the environment."""
    ratio = getattr(opts, "max_inflate", None)
    if ratio is not None:
        if ratio < 0:
            from vtui.errors import UsageError

            raise UsageError("--max-inflate must be 0 (no limit) or a positive ratio")
        from vtui.io.reader import INFLATE_ENV

        os.environ[INFLATE_ENV] = repr(ratio)


def load_store(opts: argparse.Namespace, path: str | None = None,
               progress: Callable[[float], None] | None = None) -> TraceStore:
    """Load ``path`` (default ``opts.trace``) honouring ``add_load_arguments``' options."""
    from vtui.load.trace import load_trace

    apply_inflate_argument(opts)
    return load_trace(opts.trace if path is None else path, progress=progress,
                      cache=not getattr(opts, "no_cache", False))
