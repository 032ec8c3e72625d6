"""Command line: `vtui [TRACE]` opens the app; `vtui info TRACE` reports what was loaded."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from vtui import __version__
from vtui.commands import COMMANDS, add_inflate_argument, load_options
from vtui.errors import TraceLoadError, UsageError
from vtui.safe_text import escape_controls
from vtui.termination import Terminated, signals_as_exceptions

if TYPE_CHECKING:
    from vtui.options import LoadOptions

HEADER = """\
vtui — a terminal explorer for Chrome-trace / PyTorch-profiler traces.

  vtui                open the bundled demo trace
  vtui TRACE          open a trace: Chrome-trace JSON (.json, .json.gz), a Perfetto protobuf trace
                      (.pftrace, .perfetto-trace, gzipped too: needs vtui[pftrace]), an Nsight Systems
                      SQLite export (.sqlite), or a folder of per-rank files; --capture FILE adds
                      vLLM's graph capture of a replay
  vtui A B            open two traces in compare mode
"""


def description() -> str:
    """The top-level help: the app's forms, then every subcommand's one-line help (from the
    commands themselves, so a new command shows up without editing this)."""
    lines = [HEADER, "commands (vtui COMMAND -h for its options):"]
    for name, module_name in COMMANDS.items():
        help_text = getattr(importlib.import_module(module_name), "HELP", "")
        lines.append(f"  vtui {name:<14} {help_text}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] in COMMANDS:
            with signals_as_exceptions():
                code = _run_subcommand(args)
                sys.stdout.flush()  # here, not at exit: a full disk or /dev/full is then one line
                return code
        return _run_app(args)
    except (TraceLoadError, UsageError) as exc:
        _error(f"vtui: error: {exc}")
        return 1
    except KeyboardInterrupt:
        _error("vtui: interrupted")
        return 130
    except Terminated as exc:
        return exc.code
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.errno not in ENVIRONMENT_ERRNOS:
            _error(f"vtui: error: internal error ({type(exc).__name__}: {exc}); please report it")
            return 1
        where = f"{exc.filename}: " if exc.filename else ""
        if not where:  # the output itself (stdout to a full disk, /dev/full): drop what is still buffered
            where = "writing the output: "
            _silence_stdout()
        _error(f"vtui: error: {where}{exc.strerror or exc} (the system refused it; not a vtui bug)")
        return 1
    except MemoryError:
        _error("vtui: error: out of memory (the system refused an allocation): raise the limit or free memory")
        return 1
    except Exception as exc:
        _error(f"vtui: error: internal error ({type(exc).__name__}: {exc}); please report it")
        return 1


# What the machine, not vtui, got wrong: a full disk, a read-only or foreign folder, a name too long.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENAMETOOLONG,
                                errno.EIO, errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EFBIG, errno.ENOENT,
                                errno.ENOTDIR, errno.EISDIR, errno.EXDEV, errno.ELOOP})


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _error(line: str) -> None:
    """One line on stderr; messages quote file names and trace text, so escaped."""
    print(escape_controls(line), file=sys.stderr)


def _run_app(args: list[str]) -> int:
    parser = _OneLineParser(prog="vtui", description=description(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"vtui {__version__}")
    parser.add_argument("trace", nargs="?", help="trace file or folder (default: the bundled demo trace)")
    parser.add_argument("other", nargs="?", help="a second trace: open both in compare mode")
    parser.add_argument("--capture", metavar="FILE",
                        help="vLLM's CUDA-graph capture trace of the same run: Insights (i) gives replayed graph "
                             "kernels the captured operators and shapes (default: capture_traces/ beside the trace)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the index cache")
    parser.add_argument("--share", action="store_true",
                        help="share the view with an agent: `vtui mcp --attach` connects (a socket only you can open)")
    add_inflate_argument(parser)
    opts = parser.parse_args(args)
    options = load_options(opts)  # the environment is read here, once, and passed down
    if opts.trace and not os.path.lexists(opts.trace) and (hint := _did_you_mean(opts.trace)):
        raise TraceLoadError(f"{opts.trace}: no such file or directory{hint}")
    if opts.other:
        if opts.share:
            raise UsageError("--share works with one trace, not compare mode")
        return _run_compare(Path(opts.trace), Path(opts.other), options)
    from vtui.demo import demo_trace_path

    path = Path(opts.trace) if opts.trace else demo_trace_path()
    if not path.exists():
        raise TraceLoadError(f"{path}: no such file or directory")
    from vtui.load.trace import trace_files

    trace_files(path)  # a folder without traces, a pipe: said here, before the full-screen app starts
    capture = Path(opts.capture) if opts.capture else None
    if capture is not None and not capture.is_file():
        raise TraceLoadError(f"{capture}: no such file (--capture takes a trace file)")
    from vtui.ui.app import VtuiApp

    app = VtuiApp(path, options=options, share=opts.share, capture=capture)
    app.run()
    return app.return_code or 0


def _did_you_mean(word: str | None) -> str:
    """A missing path that reads like a misspelt command: name the command."""
    import difflib

    if not word or "/" in word or "." in word:
        return ""
    close = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.75)
    return f" (did you mean `vtui {close[0]}`?)" if close else ""


def _run_compare(a: Path, b: Path, options: LoadOptions) -> int:
    from vtui.load.trace import trace_files

    for path in (a, b):
        trace_files(path)  # missing, a folder without traces: one line before the app starts
    from vtui.ui.screens.compare import CompareApp

    app = CompareApp(a, b, options=options)
    app.run()
    return app.return_code or 0


class _OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (not usage + error), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, escape_controls(f"{self.prog}: error: {message}") + "\n")


def _run_subcommand(args: list[str]) -> int:
    name = args[0]
    module = importlib.import_module(COMMANDS[name])
    parser = _OneLineParser(prog=f"vtui {name}", description=module.__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    prepare = getattr(module, "prepare_args", None)  # a command's own argument forms (diff's "--")
    return module.run(parser.parse_args(prepare(args[1:]) if prepare else args[1:]))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
