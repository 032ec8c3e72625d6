"""`vtui mcp`: an MCP server on stdio, so an agent can ask a trace what the CLI answers.

Thin by design: each tool runs the CLI command of the same name (its ``--json`` / ``--format
json`` output), so an agent gets exactly the numbers `vtui stats`, `vtui insights`, … print. What
it adds: typed input schemas, a cache of the last few stores (a second call on a trace costs no
load), and results that are capped and paged: the longest list of a result (rows, matches, ops…)
is served ``limit`` items from ``offset``, and no reply exceeds ``VTUI_MCP_MAX_CHARS`` characters
(default 60,000) — an agent never receives 100 MB. Needs ``pip install 'vtui[mcp]'``.

The tool list is data: one entry per tool (``tool_specs``); `ranks` appears when the CLI has a
`ranks` command.
"""

import argparse
import contextlib
import io
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from vtui.errors import UsageError

HELP = "serve the trace tools (info, insights, stats, tree, search, query, diff, ranks) to agents over MCP (stdio)"
DEFAULT_MAX_CHARS = 60_000  # a reply at most (``VTUI_MCP_MAX_CHARS`` changes it)
MIN_CHARS = 1_000  # below this a page cannot hold its own note
DEFAULT_LIMIT = 100
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
    server = build_server(StoreCache(opts.stores), max_chars_from(os.environ))
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
    """The last ``size`` stores by (path, size, mtime): a changed file is loaded again."""

    def __init__(self, size: int = STORES_KEPT) -> None:
        self.size = size
        self.stores: OrderedDict[tuple, Any] = OrderedDict()
        self.loads = 0

    def __call__(self, path: str, cache: bool = True):
        from vtui.load.trace import load_trace

        p = Path(path)
        try:
            st = p.stat()
        except OSError:
            st = None  # load_trace reports it in its own words
        key = (str(p.resolve()), getattr(st, "st_size", None), getattr(st, "st_mtime_ns", None))
        if key in self.stores:
            self.stores.move_to_end(key)
            return self.stores[key]
        store = load_trace(p, cache=cache)
        self.loads += 1
        self.stores[key] = store
        while len(self.stores) > self.size:
            self.stores.popitem(last=False)
        return store


# ---- one CLI command, its JSON captured ----------------------------------------------------------
_RUN_LOCK = threading.Lock()  # stdout is captured process-wide: one command at a time


def run_command(name: str, argv: list[str], loader: Callable[[str, bool], Any] | None = None) -> Any:
    """``vtui NAME ARGV`` in process with ``loader`` for its stores; its stdout parsed as JSON."""
    import importlib

    import vtui.commands as commands
    from vtui.cli import _OneLineParser

    module = importlib.import_module(commands.COMMANDS[name])
    parser = _OneLineParser(prog=f"vtui {name}")
    module.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    with _RUN_LOCK:
        before = commands.STORE_LOADER
        commands.STORE_LOADER = loader
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = module.run(parser.parse_args(argv))
                except SystemExit as exc:  # argparse: a bad value
                    raise UsageError(err.getvalue().strip() or f"bad arguments ({exc.code})") from None
        finally:
            commands.STORE_LOADER = before
    if code:
        raise UsageError(err.getvalue().strip() or f"vtui {name} failed ({code})")
    return json.loads(out.getvalue())


# ---- paging --------------------------------------------------------------------------------------
def page(doc: Any, offset: int = 0, limit: int = DEFAULT_LIMIT, max_chars: int = DEFAULT_MAX_CHARS,
         more_after: bool = False) -> str:
    """``doc`` as JSON text of at most ``max_chars``: its longest list (the whole doc when it is a
    list) cut to ``limit`` items from ``offset`` with a ``page`` note saying what is left; the
    limit shrinks until the text fits. ``more_after``: the list was already cut by its producer."""
    offset, limit = max(offset, 0), max(limit, 1)
    key = _longest_list(doc)
    items = doc if key is None else (doc.get(key) if isinstance(doc, dict) else None)
    while True:
        if isinstance(items, list):
            chunk = items[offset:offset + limit]
            left = offset + len(chunk) < len(items) or more_after
            note = {"list": key or "(result)", "offset": offset, "limit": limit, "returned": len(chunk),
                    "total": None if more_after else len(items),
                    "next_offset": offset + len(chunk) if left else None}
            body = {"items": chunk, "page": note} if key is None else {**doc, key: chunk, "page": note}
        else:
            body = doc
        text = compact_json(body)
        if len(text) <= max_chars:
            return text
        if isinstance(items, list) and limit > 1:
            limit = max(1, limit // 2)
            continue
        return compact_json({"error": f"the result is {len(text):,} characters, over the {max_chars:,} a reply may hold",
                          "hint": "narrow it (range, track, depth, min_pct, LIMIT) or ask for fewer items",
                          "partial": text[:max_chars // 2]})


def compact_json(value: Any) -> str:
    """JSON without indentation (an agent pays per character), every non-ASCII character escaped,
    so no raw control byte (C0, DEL, C1) of the trace is in it and the data round-trips."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)


def _longest_list(doc: Any) -> str | None:
    """The top-level key whose list is longest (in JSON text), None for a list document."""
    if isinstance(doc, list) or not isinstance(doc, dict):
        return None
    lists = [(len(json.dumps(v, ensure_ascii=False)), k) for k, v in doc.items() if isinstance(v, list) and v]
    return max(lists)[1] if lists else None


# ---- the tools -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolSpec:
    name: str
    command: str  # the CLI command it runs
    description: str
    fn: Callable[..., str]


def tool_specs(loader: Callable[[str, bool], Any], max_chars: int = DEFAULT_MAX_CHARS) -> list[ToolSpec]:
    """Every tool: a typed function (its signature is the input schema) that builds the CLI's
    arguments, its reply paged to ``max_chars``. ``ranks`` only when the CLI has that command."""
    from pydantic import Field

    from vtui.commands import COMMANDS

    Trace = Annotated[str, Field(description="path of a trace file (.json, .json.gz, nsys .sqlite) or a folder of ranks")]
    Range = Annotated[str | None, Field(description="time range from the trace start with units, e.g. 10ms:25ms, :5ms, 1s:")]
    Track = Annotated[str | None, Field(description="regex over 'process / thread' track names")]
    Offset = Annotated[int, Field(ge=0, description="first item of the result's main list to return (paging)")]
    Limit = Annotated[int, Field(ge=1, le=10_000, description="items of the result's main list per reply")]

    def opt(flag: str, value: Any) -> list[str]:
        return [] if value is None or value is False else [flag] if value is True else [flag, str(value)]

    def cli(name: str, argv: list[str], offset: int, limit: int, more_after: bool = False) -> str:
        return page(run_command(name, argv, loader), offset, limit, max_chars, more_after=more_after)

    def info(trace: Trace, offset: Offset = 0, limit: Limit = DEFAULT_LIMIT) -> str:
        return cli("info", [trace, "--json"], offset, limit)

    def insights(trace: Trace, range: Range = None,
                 step: Annotated[str | None, Field(description="regex for the step slices (default: detected)")] = None,
                 top: Annotated[int, Field(ge=1, le=1000, description="operators and kernels listed")] = 15,
                 offset: Offset = 0, limit: Limit = DEFAULT_LIMIT) -> str:
        return cli("insights", [trace, "--json", "--top", str(top), *opt("--range", range), *opt("--step", step)],
                   offset, limit)

    def stats(trace: Trace, range: Range = None, track: Track = None,
              by: Annotated[str, Field(description="group by name, cat, track or arg:KEY")] = "name",
              sort: Annotated[str, Field(description="total, self, count, avg, min, max or name")] = "total",
              offset: Offset = 0, limit: Limit = DEFAULT_LIMIT) -> str:
        return cli("stats", [trace, "--format", "json", "--by", by, "--sort", sort, *opt("--range", range),
                             *opt("--track", track)], offset, limit)

    def tree(trace: Trace, range: Range = None, track: Track = None,
             inverted: Annotated[bool, Field(description="bottom-up: each name with its callers beneath it")] = False,
             weight: Annotated[str, Field(description="total, self or gpu")] = "total",
             min_pct: Annotated[float, Field(ge=0, le=100, description="hide nodes under this % of the range")] = 1.0,
             depth: Annotated[int, Field(ge=1, le=256, description="levels shown at most")] = 8,
             offset: Offset = 0, limit: Limit = DEFAULT_LIMIT) -> str:
        return cli("tree", [trace, "--format", "json", "--weight", weight, "--min-pct", str(min_pct),
                            "--depth", str(depth), *opt("--inverted", inverted), *opt("--range", range),
                            *opt("--track", track)], offset, limit)

    def search(trace: Trace, regex: Annotated[str, Field(description="regex over slice names; prefix args: to search args")],
               range: Range = None, track: Track = None,
               time_limit: Annotated[float, Field(gt=0, le=120, description="seconds before the search is stopped")] = 10.0,
               offset: Offset = 0, limit: Limit = DEFAULT_LIMIT) -> str:
        return cli("search", [trace, regex, "--json", "--time-limit", str(time_limit), *opt("--range", range),
                              *opt("--track", track)], offset, limit)

    def query(trace: Trace,
              sql: Annotated[str, Field(description="DuckDB SQL over Perfetto's tables: slice, thread_track, thread, "
                                                    "process, track, counter, counter_track, flow, args (extract_arg(arg_set_id, "
                                                    "'args.KEY')); and vtui's instant, kernel, launch, step, finding, "
                                                    "op, gpu_busy. Times in ns from the trace start. A folder of ranks "
                                                    "or of vtui's Parquet export adds a rank column")],
              time_limit: Annotated[float, Field(gt=0, le=300, description="seconds before the query is stopped")] = 30.0,
              offset: Offset = 0, limit: Limit = DEFAULT_LIMIT) -> str:
        doc = run_command("query", [trace, sql, "--format", "json", "--time-limit", str(time_limit),
                                    "--max-rows", str(offset + limit)], loader)
        return page(doc, offset, limit, max_chars, more_after=bool(doc.get("truncated")))

    def diff(a: Annotated[str, Field(description="trace A, the baseline")],
             b: Annotated[str, Field(description="trace B, compared with A")],
             range_a: Annotated[str | None, Field(description="range of A, e.g. 100ms:")] = None,
             range_b: Annotated[str | None, Field(description="range of B")] = None,
             step: Annotated[str | None, Field(description="regex for the step slices in both")] = None,
             table: Annotated[str | None, Field(description="only metrics, ops, steps or tree")] = None,
             offset: Offset = 0, limit: Limit = DEFAULT_LIMIT) -> str:
        return cli("diff", [a, b, "--format", "json", *opt("--range-a", range_a), *opt("--range-b", range_b),
                            *opt("--step", step), *opt("--table", table)], offset, limit)

    def ranks(trace: Annotated[str, Field(description="folder of per-rank traces")],
              align: Annotated[str | None, Field(description="epoch or collective")] = None,
              offset: Offset = 0, limit: Limit = DEFAULT_LIMIT) -> str:
        return cli("ranks", [trace, "--json", *opt("--align", align)], offset, limit)

    specs = [
        ToolSpec("info", "info", "What a load produced: form, repaired?, events per phase, tracks, span, warnings.", info),
        ToolSpec("insights", "insights", "Where the time goes: steps and phases (TTFT, step mean/p90, trends), top "
                 "operators, sync points, GPU busy %, launch delay, idle causes, memory, findings with hints.", insights),
        ToolSpec("stats", "stats", "The slice aggregation table of a range: count, total and self time clipped to "
                 "the range, avg/min/max, % of range x tracks, grouped by name, category, track or an arg.", stats),
        ToolSpec("tree", "tree", "The call tree of a range: slices merged by call path with count, total, self "
                 "and the GPU time each call launched.", tree),
        ToolSpec("search", "search", "Slices whose name (or args:) matches a regex, in time order, with count "
                 "and total duration.", search),
        ToolSpec("query", "query", "SQL (DuckDB) over the trace with Perfetto's table names; read-only, time-limited.",
                 query),
        ToolSpec("diff", "diff", "Compare two traces: headline metrics, every operator and kernel (added, removed, "
                 "faster, slower), steps side by side.", diff),
        ToolSpec("ranks", "ranks", "A folder of ranks: collectives matched across ranks, stragglers, skew.", ranks),
    ]
    return [s for s in specs if s.command in COMMANDS]


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
                    "long lists are paged: pass offset = page.next_offset for more.")
    try:
        server._lowlevel_server.version = __version__  # shown to the client (no public setter in mcp 1)
    except AttributeError:
        pass
    for spec in tool_specs(loader or StoreCache(), max_chars):
        server.add_tool(_safe(spec.fn, ToolError), name=spec.name, description=spec.description, structured_output=False)
    return server


def _safe(fn: Callable[..., str], tool_error: type[Exception]) -> Callable[..., Any]:
    """The tool as the SDK calls it: a coroutine, so commands run one at a time on the main thread
    (the SDK would run a plain function in a worker thread, beside others capturing the same
    stdout), and usage errors reach the agent as one escaped line (the SDK shows a
    ToolError's text; any other exception only as "Error executing tool")."""
    import functools

    from vtui.errors import TraceLoadError
    from vtui.safe_text import escape_controls

    @functools.wraps(fn)
    async def call(*args, **kwargs) -> str:
        try:
            return fn(*args, **kwargs)
        except (UsageError, TraceLoadError) as exc:
            raise tool_error(escape_controls(str(exc))) from None

    return call
