"""Command line: `vtui [TRACE]` opens the app; `vtui info TRACE` reports what was loaded."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from vtui.errors import TraceLoadError

SUBCOMMANDS = ("info",)

DESCRIPTION = """\
vtui — a terminal explorer for Chrome-trace / PyTorch-profiler traces.

  vtui                          open the bundled demo trace
  vtui TRACE                    open a trace (.json, .json.gz, or a folder of per-rank files)
  vtui info TRACE [--json]      what was loaded: phases, tracks, slices, span, warnings
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] in SUBCOMMANDS:
            return _run_subcommand(args)
        return _run_app(args)
    except TraceLoadError as exc:
        print(f"vtui: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("vtui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def _run_app(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="vtui", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="?", help="trace file or folder (default: the bundled demo trace)")
    opts = parser.parse_args(args)
    from vtui.demo import demo_trace_path  # noqa: PLC0415  (keep `vtui info` light)

    path = Path(opts.trace) if opts.trace else demo_trace_path()
    if not path.exists():
        raise TraceLoadError(f"{path}: no such file or directory")
    from vtui.ui.app import VtuiApp  # noqa: PLC0415  (Textual loads only for the app)

    app = VtuiApp(path)
    app.run()
    return app.return_code or 0


def _run_subcommand(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="vtui", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    info = sub.add_parser("info", help="report what was loaded from a trace",
                          description="Report what was loaded. Example: vtui info trace.json.gz --json")
    info.add_argument("trace", help="trace file or folder")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    opts = parser.parse_args(args)
    from vtui.store.load import load_trace  # noqa: PLC0415

    store = load_trace(opts.trace)
    from vtui.report import info_dict, info_text  # noqa: PLC0415

    if opts.json:
        print(json.dumps(info_dict(store), indent=2, ensure_ascii=False))
    else:
        print(info_text(store))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
