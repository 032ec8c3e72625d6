"""Command line: `vtui [TRACE]` opens the app; `vtui info TRACE` reports what was loaded."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from vtui.commands import COMMANDS
from vtui.errors import TraceLoadError, UsageError

DESCRIPTION = """\
vtui — a terminal explorer for Chrome-trace / PyTorch-profiler traces.

  vtui                          open the bundled demo trace
  vtui TRACE                    open a trace (.json, .json.gz, or a folder of per-rank files)
  vtui info TRACE [--json]      what was loaded: phases, tracks, slices, span, warnings
  vtui stats TRACE [--range A:B] [--track RE] [--by name|cat|track|arg:KEY] [--top N] [--format table|csv|json|md]
  vtui search TRACE REGEX [--range A:B] [--json]      slices by name (args:REGEX searches args)
  vtui export TRACE -o OUT.json [--range A:B] [--track RE] [--force]   (a folder of ranks: -o OUTDIR)
  vtui insights TRACE [--range A:B] [--step REGEX] [--json]
                                steps, phases, operators, GPU, memory: findings with hints
  vtui diff A B [--range-a R] [--range-b R] [--json]
                                compare two traces: metrics, operator diff, steps side by side
                                ("same" = within 5 % of A, or 1 µs for times; --tolerance PCT)
  vtui tree TRACE [--range A:B] [--track RE] [--inverted] [--weight total|self|gpu] [--min-pct P] [--depth N]
                [--format table|json|folded] [--against B] [--handover]
                                the call tree of a range by CPU time and by the GPU time each call launched
  vtui A B                      open two traces in compare mode
  vtui cache list|clear         the index cache that makes a reopen instant
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] in COMMANDS:
            return _run_subcommand(args)
        return _run_app(args)
    except (TraceLoadError, UsageError) as exc:
        print(f"vtui: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("vtui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 — last resort: a bug still gets one line, never a traceback
        print(f"vtui: error: internal error ({type(exc).__name__}: {exc}); please report it", file=sys.stderr)
        return 1


def _run_app(args: list[str]) -> int:
    parser = _OneLineParser(prog="vtui", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="?", help="trace file or folder (default: the bundled demo trace)")
    parser.add_argument("other", nargs="?", help="a second trace: open both in compare mode")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the index cache")
    opts = parser.parse_args(args)
    if opts.other:
        return _run_compare(Path(opts.trace), Path(opts.other), cache=not opts.no_cache)
    from vtui.demo import demo_trace_path  # noqa: PLC0415  (keep `vtui info` light)

    path = Path(opts.trace) if opts.trace else demo_trace_path()
    if not path.exists():
        raise TraceLoadError(f"{path}: no such file or directory")
    from vtui.ui.app import VtuiApp  # noqa: PLC0415  (Textual loads only for the app)

    app = VtuiApp(path, cache=not opts.no_cache)
    app.run()
    return app.return_code or 0


def _run_compare(a: Path, b: Path, cache: bool = True) -> int:
    for path in (a, b):
        if not path.exists():
            raise TraceLoadError(f"{path}: no such file or directory")
    from vtui.ui.compare import CompareApp  # noqa: PLC0415

    app = CompareApp(a, b, cache=cache)
    app.run()
    return app.return_code or 0


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (not usage + error), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _run_subcommand(args: list[str]) -> int:
    name = args[0]
    module = importlib.import_module(COMMANDS[name])
    parser = _OneLineParser(prog=f"vtui {name}", description=module.__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    return module.run(parser.parse_args(args[1:]))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
