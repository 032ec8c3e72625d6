"""`vtui info TRACE [--json]`: what a load produced."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Annotated

from vtui.commands import load_store
from vtui.commands.options import Options, Trace, add_options, from_namespace, opt

if TYPE_CHECKING:
    from vtui.commands import Loader
    from vtui.present.schema import Info
    from vtui.store.store import TraceStore

STRICT_EXIT = 3  # distinct from usage (2) and load (1) failures

HELP = "report what was loaded: phases, tracks, slices, span, warnings"


class InfoOptions(Options, frozen=True):
    trace: Trace
    json: Annotated[bool, opt("print one JSON object", mcp=False)] = False
    strict: Annotated[bool, opt("exit 3 when trace health finds an error (a figure is certainly wrong): for CI",
                                mcp=False)] = False


OPTIONS = InfoOptions  # what `vtui mcp` reads for the tool's parameters


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser, InfoOptions)


def report(store: TraceStore) -> Info:
    from vtui.present.report import info_out

    return info_out(store)


def compute(opts: InfoOptions, loader: Loader | None = None) -> Info:
    return report(load_store(opts, loader=loader))


def run(ns: argparse.Namespace) -> int:
    from vtui.present.report import info_text
    from vtui.present.schema import encode
    from vtui.safe_text import say

    opts = from_namespace(InfoOptions, ns)
    store = load_store(opts)
    if opts.json:
        say(encode(report(store)), lossless=True)
    else:
        say(info_text(store))
    if opts.strict:
        from vtui.analysis.health.report import analyse_health

        if analyse_health(store).worst == "error":
            say("vtui info --strict: trace health found an error (see health above)", file=sys.stderr)
            return STRICT_EXIT
    return 0
