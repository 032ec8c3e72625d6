"""`vtui mcp` driven by the MCP SDK's own client (``ClientSession`` over ``stdio_client``), as an
agent's host drives it: list the tools, run Perfetto-style queries on a trace, ask for insights;
each answer compared with the same query run in this process."""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests.helpers import ROOT

pytest.importorskip("mcp")
pytest.importorskip("duckdb")

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from tests.query.test_perfetto_sql import KINETO  # noqa: E402
from vtui.load.trace import load_trace  # noqa: E402
from vtui.query.engine import run_query  # noqa: E402

QUERIES = [
    "SELECT name, COUNT(*) AS n, SUM(dur) AS total FROM slice GROUP BY name ORDER BY total DESC, name LIMIT 5",
    "SELECT thread.name AS thread_name, COUNT(*) FROM slice JOIN thread_track ON slice.track_id = thread_track.id "
    "JOIN thread USING (utid) GROUP BY thread_name ORDER BY 2 DESC, 1",
    "INCLUDE PERFETTO MODULE slices.with_context; SELECT process_name, COUNT(*) FROM thread_slice GROUP BY 1 ORDER BY 2 DESC, 1",
    'SELECT COUNT(*) FROM slice WHERE name LIKE "%ATEN::%"',
    "SELECT s.id, a.name FROM slice s JOIN ancestor_slice(s.id) a ON a.depth = 0 WHERE s.depth = 2 ORDER BY s.id LIMIT 5",
]


async def _session_answers() -> tuple[list[str], list[tuple[bool, str]], tuple[bool, str]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "vtui", "mcp"], cwd=ROOT,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    with anyio.fail_after(300):  # a hang, not a slow answer, on a shared machine
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            answers = []
            for sql in QUERIES:
                got = await session.call_tool("query", {"trace": str(KINETO), "sql": sql})
                answers.append((bool(got.is_error), got.content[0].text))
            bad = await session.call_tool("query", {"trace": str(KINETO), "sql": "SELECT * FROM sched"})
            insights = await session.call_tool("insights", {"trace": str(KINETO)})
            assert not insights.is_error, insights.content[0].text
            assert json.loads(insights.content[0].text)["schema_version"]
            return tools, answers, (bool(bad.is_error), bad.content[0].text)


def test_an_agent_lists_tools_runs_perfetto_queries_and_asks_insights():
    tools, answers, bad = anyio.run(_session_answers)
    assert {"info", "insights", "stats", "tree", "search", "query", "diff"} <= set(tools)
    store = load_trace(KINETO, cache=False)
    for sql, (error, text) in zip(QUERIES, answers):
        assert not error, (sql, text)
        assert json.loads(text)["rows"] == run_query(store, sql).rows, sql
    aten = sum("aten::" in store.strings[i].lower() for i in store.slices.name_id.tolist())
    assert aten and json.loads(answers[3][1])["rows"] == [[aten]]  # SQLite's LIKE and "text", counted in Python
    assert bad[0] and "sched: Perfetto's table of CPU scheduling" in bad[1] and "\n" not in bad[1]
