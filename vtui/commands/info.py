"""`vtui info TRACE [--json]`: what a load produced."""

from __future__ import annotations

import argparse
import sys

from vtui.commands import add_load_arguments, load_store

STRICT_EXIT = 3  # distinct from usage (2) and load (1) failures

HELP = "report what was loaded: phases, tracks, slices, span, warnings"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file or folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--strict", action="store_true",
                        help="exit 3 when trace health finds an error (a figure is certainly wrong): for CI")
    add_load_arguments(parser)


def run(opts: argparse.Namespace) -> int:
    from vtui.present.report import info_dict, info_text
    from vtui.present.schema import dump
    from vtui.safe_text import say

    store = load_store(opts)
    if opts.json:
        say(dump("info", info_dict(store)), lossless=True)
    else:
        say(info_text(store))
    if opts.strict:
        from vtui.analysis.health.report import analyse_health

        if analyse_health(store).worst == "error":
            say("vtui info --strict: trace health found an error (see health above)", file=sys.stderr)
            return STRICT_EXIT
    return 0
