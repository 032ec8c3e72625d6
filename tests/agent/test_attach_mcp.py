"""An agent steers the person's view through `vtui mcp --attach`, driven by the MCP SDK's own client
(``ClientSession`` over ``stdio_client``) while the app runs headless with sharing on: what the
agent is told (get_view, get_screen) is checked against what the app draws (read here with the
tests' own screen reader) and against the raw trace events."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from tests.agent.sharing import until_change, until_shared
from tests.agent.traces import HOSTILE, kineto_like
from tests.app.screen import read_screen
from tests.helpers import ROOT, cli_json, raw_origin, raw_span_ns

pytest.importorskip("mcp")
pytest.importorskip("duckdb")

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

import vtui.load.trace as trace_loading  # noqa: E402
from vtui.cli import main  # noqa: E402
from vtui.ui.app import VtuiApp  # noqa: E402

VIEW_TOOLS = {"apps", "attach", "get_view", "get_screen", "navigate", "select_range", "set_filter", "search", "open",
              "bookmark", "export"}
CLI_TOOLS = {"info", "insights", "stats", "tree", "search_list", "query"}


def attach_params(pid: int) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "vtui", "mcp", "--attach", str(pid)], cwd=ROOT,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})


async def call(session: ClientSession, tool: str, args: dict | None = None) -> dict:
    got = await session.call_tool(tool, args or {})
    text = got.content[0].text
    assert not got.is_error, (tool, text)
    assert all(ord(c) < 128 for c in text), "replies are ASCII JSON: no raw control or invisible character"
    return json.loads(text)


def raw_slice(events: list[dict], name: str) -> tuple[int, int]:
    origin = raw_origin(events)
    return raw_span_ns(origin, next(e for e in events if e.get("name") == name))


def no_second_load(*args, **kwargs):
    raise AssertionError("the attached trace was loaded again")


async def test_an_agent_navigates_selects_and_opens_on_the_persons_screen(tmp_path, runtime_dir, capsys, monkeypatch):
    trace, events = kineto_like(tmp_path)
    app = VtuiApp(trace, cache=False, share=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_shared(pilot)
        sock = runtime_dir / "vtui" / f"{os.getpid()}.sock"
        assert stat.S_ISSOCK(os.lstat(sock).st_mode) and stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
        assert stat.S_IMODE(os.lstat(sock.parent).st_mode) == 0o700
        assert "sharing, no agent yet (S stops)" in read_screen(app).text[-2]

        with anyio.fail_after(180):  # a hang, not a slow answer, on a shared machine
            async with stdio_client(attach_params(os.getpid())) as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                assert "untrusted" in (init.instructions or "")
                tools = {t.name for t in (await session.list_tools()).tools}
                assert VIEW_TOOLS | CLI_TOOLS <= tools, tools

                # a step by number: the range is that step's span in the raw events (the first call attaches)
                view = (await call(session, "navigate", {"step": 3}))["view"]
                a, b = raw_slice(events, "ProfilerStep#3")
                assert (view["range"]["start_ns"], view["range"]["end_ns"]) == (a, b)
                lines = read_screen(app).text
                status = next(line for line in lines if "shared with an agent" in line)
                assert status.startswith(" shared with an agent (S ends, esc interrupts) · window")
                assert "range 6 ms – 7.8 ms (1.8 ms)" in status  # step 3: 7 ms – 8.8 ms from the first event at 1 ms
                assert any(line.startswith(" agent: went to step #3") for line in lines), lines[-4:]

                apps = (await call(session, "apps"))["apps"]
                assert apps == [{"pid": os.getpid(), "trace": str(trace), "attached": True, "this": True}]

                # a slice by search: selected, and its times are the raw event's
                view = (await call(session, "navigate", {"search": "ProfilerStep#4"}))["view"]
                a, b = raw_slice(events, "ProfilerStep#4")
                sel = view["selection"]
                assert (sel["name"], sel["start_ns"], sel["dur_ns"]) == ("ProfilerStep#4", a, b - a)

                # a range the agent measured
                view = (await call(session, "select_range", {"range": "2.5ms:4.5ms"}))["view"]
                assert (view["range"]["start_ns"], view["range"]["end_ns"]) == (2_500_000, 4_500_000)
                drawn = read_screen(app).text
                assert any("range 2.5 ms – 4.5 ms (2 ms)" in line for line in drawn)
                assert any(line.startswith(" agent: selected 2.5 ms – 4.5 ms") for line in drawn)

                # what the agent reads of the screen is what is drawn, line for line
                screen = await call(session, "get_screen")
                assert screen["lines"] == [line.rstrip() for line in read_screen(app).text]
                assert screen["screen"] == "timeline" and "untrusted" in screen

                # Insights at a section, on the person's screen
                got = await call(session, "open", {"what": "insights", "section": "operators"})
                assert type(app.screen).__name__ == "InsightsScreen" and got["view"]["screen"] == "insights"
                assert any("aten::mm" in line for line in got["section_text"])
                screen = await call(session, "get_screen")
                assert any(line.strip().startswith("Operators") for line in screen["lines"][1:4]), screen["lines"]

                # the SQL pane with the agent's query: the rows are the raw events'
                got = await call(session, "open", {"what": "sql", "sql": "SELECT name, dur FROM slice "
                                                   "WHERE name = 'aten::mm' ORDER BY ts"})
                assert type(app.screen).__name__ == "QueryScreen"
                mm = [e for e in events if e.get("name") == "aten::mm"]
                assert got["rows"] == [["aten::mm", round(e["dur"] * 1000)] for e in mm]

                # the CLI's answers on the same trace, without a second load (a load would fail now)
                with monkeypatch.context() as patched:
                    patched.setattr(trace_loading, "load_trace", no_second_load)
                    stats = json.loads((await session.call_tool("stats", {"limit": 50})).content[0].text)
                    count = await call(session, "query", {"sql": "SELECT COUNT(*) FROM slice"})
                    assert count["rows"] == [[sum(e["ph"] == "X" for e in events)]]
                    for tool, args in (("info", {}), ("insights", {}), ("tree", {}), ("search_list", {"regex": "mm"})):
                        await call(session, tool, args)

                # a bookmark the agent can come back to
                await call(session, "open", {"what": "timeline"})
                assert app.screen is app.screen_stack[0]
                await call(session, "bookmark", {"name": "step 4"})
                marked = (await call(session, "get_view"))["view"]["window"]
                await call(session, "navigate", {"time": "1ms"})
                back = (await call(session, "navigate", {"bookmark": "step 4"}))["view"]["window"]
                assert back == marked

                # hostile names reach the agent escaped, and marked as data
                view = (await call(session, "navigate", {"search": "^evil"}))["view"]
                assert view["selection"]["name"] == HOSTILE.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
                assert "untrusted" in view

                bad = await session.call_tool("navigate", {"slice_id": 10**9})
                assert bad.is_error and "slice_id must be" in bad.content[0].text

        # the agent's process is gone: the app is back to waiting, still sharing
        await until_change(app, lambda: not app.agent.server.attached)
        await pilot.pause()
        assert "sharing, no agent yet (S stops)" in read_screen(app).text[-2]
        assert sock.exists()
    assert not sock.exists(), "the socket outlived the app"
    # (the CLI run here, where the app no longer captures stdout)
    assert stats["rows"] == cli_json(capsys, "stats", trace, "--format", "json", "--no-cache")["rows"]


def test_the_attach_server_ends_with_its_agent(runtime_dir):
    """Closing the agent's end (stdin) ends `vtui mcp --attach`, with or without an app to attach to."""
    proc = subprocess.Popen([sys.executable, "-m", "vtui", "mcp", "--attach"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    err = proc.stderr.read().decode()
    proc.stdout.close()
    proc.stderr.close()
    assert "apps sharing: none yet" in err
    assert "Traceback" not in err


def test_share_is_for_one_trace(tmp_path, capsys):
    a, _ = kineto_like(tmp_path)
    assert main(["--share", str(a), str(a)]) == 1
    assert capsys.readouterr().err.strip() == "vtui: error: --share works with one trace, not compare mode"
