"""Arguments and loading shared by the subcommands that read one trace."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from vtui.analysis.base.ranges import resolve_range, tracks_matching
from vtui.commands import Loader, add_load_arguments, load_store
from vtui.errors import UsageError
from vtui.store.slicetime import TimeRange
from vtui.store.store import TraceStore
from vtui.units import parse_range


def add_trace_arguments(parser: argparse.ArgumentParser, track: bool = True) -> None:
    parser.add_argument("trace", help="trace file or folder")
    parser.add_argument("--range", metavar="A:B", help="time range relative to the trace start, e.g. 10ms:25.5ms")
    if track:
        parser.add_argument("--track", metavar="REGEX", help="only tracks whose 'process / thread' name matches")
    add_load_arguments(parser)


def load(opts: Any, loader: Loader | None = None) -> tuple[TraceStore, TimeRange, np.ndarray | None]:
    """The store, its range (resolved here, once, for every analysis) and the selected tracks
    (None = all) from the options."""
    check_range(opts.range)  # a typo fails before a long load
    store = load_store(opts, loader=loader)
    rng = resolve_range(store, opts.range)
    tracks = tracks_matching(store, opts.track) if getattr(opts, "track", None) else None
    return store, rng, tracks


def check_range(text: str | None) -> None:
    """``--range`` must parse (units and all); a UsageError before any load."""
    if text:
        try:
            parse_range(text)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def check_top(top: int | None) -> None:
    """``--top N`` must be a positive count (a usage error, exit 1, before any load)."""
    if top is not None and top < 1:
        raise UsageError("--top must be at least 1")
