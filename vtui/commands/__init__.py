"""CLI subcommands: one module each, with `HELP`, `add_arguments(parser)` and `run(opts) -> int`.

`vtui/cli.py` finds them through `COMMANDS`; adding a command is one module and one line here.
"""

from __future__ import annotations

COMMANDS: dict[str, str] = {
    "info": "vtui.commands.info",
    "stats": "vtui.commands.stats",
    "search": "vtui.commands.search",
    "export": "vtui.commands.export",
    "insights": "vtui.commands.insights",
    "diff": "vtui.commands.diff",
}
