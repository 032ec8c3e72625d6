"""`vtui mcp`: an MCP server on stdio, so an agent can ask a trace what the CLI answers.

Thin by design: each tool calls the ``compute`` of the CLI command of the same name, with the
options Struct that also makes the command's flags (``vtui.mcp_tools``), so an agent gets exactly
the report `vtui stats --format json`, `vtui insights --json`, … print. What it adds: typed input
schemas, a cache of the last few stores (a second call on a trace costs no load), and results that are capped and paged (``vtui.mcp_page``): the tool's own list (a query's
rows, a search's matches…) is served ``limit`` items from ``offset``, and no reply — an error
neither — exceeds ``VTUI_MCP_MAX_CHARS`` characters (default 60,000). Every failure is one line
with ``isError``; SIGTERM / SIGHUP / SIGINT end the server at once. Needs ``pip install 'vtui[mcp]'``.

The tool list is data: one entry per tool (``tool_specs``); `ranks` appears when the CLI has a
`ranks` command.
"""

import argparse
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vtui.errors import UsageError
from vtui.mcp_page import DEFAULT_LIMIT, DEFAULT_MAX_CHARS, ReplyTooBig, compact_json, page
from vtui.mcp_tools import UNTRUSTED, ToolSpec, tool_specs

__all__ = ["DEFAULT_LIMIT", "DEFAULT_MAX_CHARS", "UNTRUSTED", "ReplyTooBig", "ToolSpec", "build_server", "compact_json",
           "page", "run", "tool_specs"]

HELP = "serve the trace tools (info, insights, stats, tree, search, query, diff, ranks) to agents over MCP (stdio)"
MIN_CHARS = 1_000  # below this a page cannot hold its own note
STORES_KEPT = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stores", type=int, default=STORES_KEPT, metavar="N",
                        help=f"keep the last N loaded traces in memory (default {STORES_KEPT})")
    from vtui.agent.attach import add_attach_argument

    add_attach_argument(parser)  # --attach [PID]: a running app's view instead (vtui/agent)


def run(opts: argparse.Namespace) -> int:
    if getattr(opts, "attach", None) is not None:
        from vtui.agent.attach import run_attach

        return run_attach(opts.attach, max_chars_from(os.environ))
    if opts.stores < 1:
        raise UsageError("--stores must be at least 1")
    from vtui.mcp_wire import repaired_stdin
    from vtui.termination import end_at_once_on_signals

    server = build_server(StoreCache(opts.stores), max_chars_from(os.environ))
    # a supervisor's kill ends it, stdin open or not; every request gets a reply, bad params too
    with end_at_once_on_signals(lambda: _BUSY[0] > 0), repaired_stdin():
        server.run("stdio")
    return 0


def max_chars_from(environ: Mapping[str, str]) -> int:
    """``VTUI_MCP_MAX_CHARS``, read here at the edge (not at import, where a bad value would be a
    traceback); a bad value is a usage error that says what is wanted."""
    text = environ.get("VTUI_MCP_MAX_CHARS", "").strip()
    if not text:
        return DEFAULT_MAX_CHARS
    value = int(text) if text.isdigit() else 0
    if value < MIN_CHARS:
        raise UsageError(f"VTUI_MCP_MAX_CHARS must be a whole number of characters, at least {MIN_CHARS:,} "
                         f"(default {DEFAULT_MAX_CHARS:,}), not {text!r}")
    return value


# ---- stores kept across calls ------------------------------------------------------------------
class StoreCache:
    """The last ``size`` stores by (path, size, mtime) — of each trace file in it, for a folder
    (editing a rank file in place leaves the folder's own stat as it was): a changed file is
    loaded again."""

    def __init__(self, size: int = STORES_KEPT) -> None:
        self.size = size
        self.stores: OrderedDict[tuple, Any] = OrderedDict()
        self.loads = 0

    def __call__(self, path: str, cache: bool = True):
        from vtui.load.trace import load_trace

        if not path.strip():  # Path("") is the server's cwd
            raise UsageError("no trace given (an empty path)")
        p = Path(path)
        try:
            key = (str(p.resolve()), *self._stamps(p))
        except (OSError, ValueError) as exc:  # a name too long, a NUL in it …
            from vtui.safe_text import clip

            raise UsageError(f"{clip(path, 200)}: {getattr(exc, 'strerror', None) or exc}") from None
        if key in self.stores:
            self.stores.move_to_end(key)
            return self.stores[key]
        store = load_trace(p, cache=cache)
        self.loads += 1
        self.stores[key] = store
        while len(self.stores) > self.size:
            self.stores.popitem(last=False)
        return store

    @staticmethod
    def _stamps(p: Path) -> tuple:
        from vtui.errors import TraceLoadError
        from vtui.load.trace import trace_files

        try:
            files = trace_files(p) if p.is_dir() else [p]
        except (TraceLoadError, OSError):
            files = [p]  # load_trace reports it in its own words
        stamps: list[Any] = []
        for f in files:
            try:
                st = f.stat()
            except OSError:
                st = None
            stamps += [f.name, getattr(st, "st_size", None), getattr(st, "st_mtime_ns", None), getattr(st, "st_ino", None)]
        return tuple(stamps)


# ---- calls in flight -----------------------------------------------------------------------------
_BUSY = [0]  # tool calls running: a signal then unwinds the call (its temp files go) before the exit


def build_server(loader: Callable[[str, bool], Any] | None = None, max_chars: int = DEFAULT_MAX_CHARS):
    """The MCP server with every tool of ``tool_specs`` (the SDK derives each input schema)."""
    try:
        from mcp.server.mcpserver import MCPServer as Server  # mcp 2
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        try:
            from mcp.server.fastmcp import FastMCP as Server  # mcp 1
            from mcp.server.fastmcp.exceptions import ToolError
        except ImportError:
            raise UsageError("the MCP server needs the mcp package: pip install 'vtui[mcp]'") from None
    from vtui import __version__

    server = Server("vtui", log_level="ERROR", instructions="Trace tools for Chrome-trace / PyTorch-profiler / nsys traces: start with "
                    "info or insights, then stats, tree, search or query (SQL). Times are ns from the trace start; "
                    "long lists are paged: pass offset = page.next_offset for more. " + UNTRUSTED)
    try:
        server._lowlevel_server.version = __version__  # shown to the client (no public setter in mcp 1)
    except AttributeError:
        pass
    for spec in tool_specs(loader or StoreCache(), max_chars):
        server.add_tool(_safe(spec.fn, ToolError, max_chars), name=spec.name, description=spec.description, structured_output=False)
    return server


def _safe(fn: Callable[..., str], tool_error: type[Exception], max_chars: int = DEFAULT_MAX_CHARS) -> Callable[..., Any]:
    """The tool as the SDK calls it: a coroutine, so commands run one at a time on the main thread
    (the SDK would run a plain function in a worker thread, beside others sharing the store cache,
    where a signal could not unwind it), and every failure reaches the agent as an error reply (``isError``) of one escaped
    line within the cap: the SDK shows a ToolError's text, and would log any other exception's
    traceback on stderr and tell the agent only "Error executing tool"."""
    import functools

    from vtui.errors import TraceLoadError
    from vtui.safe_text import clip, escape_controls
    from vtui.termination import Terminated, exit_now

    def line(text: str) -> str:
        return escape_controls(clip(" ".join(text.split()), min(max_chars // 2, 4_000)))

    @functools.wraps(fn)
    async def call(*args, **kwargs) -> str:
        _BUSY[0] += 1
        try:
            return fn(*args, **kwargs)
        except (UsageError, TraceLoadError) as exc:
            raise tool_error(line(str(exc))) from None
        except Exception as exc:  # noqa: BLE001 — any other failure: one line, no traceback on stderr
            raise tool_error(line(f"internal error ({type(exc).__name__}: {exc}); please report it")) from None
        except Terminated as exc:  # SIGTERM / SIGHUP / SIGINT mid-call: its cleanups have run
            exit_now(exc.code)
            raise
        finally:
            _BUSY[0] -= 1

    return call
