"""`vtui info TRACE [--json]`: what a load produced."""

from __future__ import annotations

import argparse

from vtui.commands import add_load_arguments, load_store

HELP = "report what was loaded: phases, tracks, slices, span, warnings"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file or folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
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
    return 0
