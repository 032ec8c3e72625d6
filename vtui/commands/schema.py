"""`vtui schema [NAME]`: the JSON Schema of a command's `--json` output (no NAME: list them).

Every `--json` / `--format json` output carries `schema_version`; a script can check it and read
the shape from here. Example: vtui schema insights > insights.schema.json
"""

from __future__ import annotations

import argparse

from vtui.present.schema import OUTPUTS

HELP = f"the JSON Schema of an output ({', '.join(OUTPUTS)})"  # every output, as the list grows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", choices=sorted(OUTPUTS), metavar="NAME",
                        help=f"one of {', '.join(sorted(OUTPUTS))} (default: list them with their versions)")


def run(opts: argparse.Namespace) -> int:
    from vtui.present.schema import VERSIONS, json_schema
    from vtui.safe_text import json_text, say

    if opts.name is None:
        say("\n".join(f"{name:<10} schema_version {VERSIONS[name]}" for name in sorted(OUTPUTS)))
    else:
        say(json_text(json_schema(opts.name)), lossless=True)
    return 0
