"""`vtui mcp` driven as an MCP client drives it: a server process on stdio, JSON-RPC lines in
and out (initialize, tools/list, tools/call), each result compared with the CLI's own JSON."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading

import pytest

from tests.helpers import FIXTURES, QWEN, ROOT, STACK, X, cli_json, write_trace
from vtui.commands import COMMANDS

pytest.importorskip("mcp")
pytest.importorskip("duckdb")

from vtui import mcp as vmcp  # noqa: E402

KINETO = FIXTURES / "kineto__worker0_first_step.json.gz"
WAIT_S = 180  # a reply slower than this is a hang (the machine is shared), not a slow answer


class Client:
    """A bare MCP client over the server's stdin/stdout (no SDK: the wire as any client sees it)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "vtui", "mcp"], cwd=ROOT, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})})
        while True:
            line = self.lines.get(timeout=WAIT_S)
            assert line, "the server closed its stdout"
            msg = json.loads(line)  # every line on stdout is one JSON-RPC message
            if msg.get("id") == self.next_id:
                return msg

    def send(self, msg: dict) -> None:
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def call(self, tool: str, **arguments) -> tuple[bool, str]:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})["result"]
        return result.get("isError", False), result["content"][0]["text"]

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def client():
    c = Client()
    reply = c.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "vtui-test", "version": "0"}})
    c.init = reply["result"]
    c.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield c
    c.close()


def ok(client: Client, tool: str, **arguments) -> dict:
    error, text = client.call(tool, **arguments)
    assert not error, text
    return json.loads(text)


def every_page(client: Client, tool: str, key: str, **arguments) -> list:
    """The whole list, page after page, as an agent following ``page.next_offset`` gets it."""
    items, offset, replies = [], 0, 0
    while offset is not None:
        doc = ok(client, tool, offset=offset, limit=10_000, **arguments)
        items += doc[key]
        offset, replies = doc["page"]["next_offset"], replies + 1
        assert replies < 100
    return items


def test_initialize_names_the_server_and_its_tools(client):
    assert client.init["serverInfo"]["name"] == "vtui" and "tools" in client.init["capabilities"]


def test_tools_list_has_typed_schemas(client):
    tools = {t["name"]: t for t in client.request("tools/list")["result"]["tools"]}
    want = {"info", "health", "insights", "stats", "tree", "search", "query", "diff"} | ({"ranks"} if "ranks" in COMMANDS else set())
    assert set(tools) == want
    for name, tool in tools.items():
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and tool["description"]
        assert set(schema["required"]) >= ({"a", "b"} if name == "diff" else {"trace"})
        assert schema["properties"]["offset"]["type"] == "integer" and schema["properties"]["limit"]["minimum"] == 1
    assert tools["query"]["inputSchema"]["properties"]["sql"]["type"] == "string"
    assert "sql" in tools["query"]["inputSchema"]["required"]
    assert {"range", "track", "by"} <= set(tools["stats"]["inputSchema"]["properties"])
    assert tools["tree"]["inputSchema"]["properties"]["inverted"]["type"] == "boolean"


def test_stats_equals_the_cli(client, capsys):
    got = every_page(client, "stats", "rows", trace=str(STACK))
    assert got == cli_json(capsys, "stats", STACK, "--format", "json")["rows"] and len(got) > 600


def test_query_equals_the_cli(client, capsys):
    sql = "SELECT name, COUNT(*) n, SUM(dur) total FROM slice GROUP BY name ORDER BY total DESC, name"
    got = every_page(client, "query", "rows", trace=str(QWEN), sql=sql)
    cli = cli_json(capsys, "query", QWEN, sql, "--format", "json")
    assert got == cli["rows"] and len(cli["rows"]) > 50


def test_info_insights_tree_and_diff_equal_the_cli(client, capsys):
    assert ok(client, "info", trace=str(KINETO), limit=10_000) | {"page": None} == \
        cli_json(capsys, "info", KINETO, "--json") | {"page": None}
    got = ok(client, "insights", trace=str(KINETO), limit=10_000)
    got.pop("page", None)
    assert got == cli_json(capsys, "insights", KINETO, "--json")
    got = ok(client, "tree", trace=str(STACK), min_pct=0.5, depth=4, limit=10_000)
    got.pop("page", None)
    assert got == cli_json(capsys, "tree", STACK, "--format", "json", "--min-pct", "0.5", "--depth", "4")
    got = ok(client, "diff", a=str(KINETO), b=str(QWEN), table="metrics", limit=10_000)
    got.pop("page", None)
    assert got == cli_json(capsys, "diff", KINETO, QWEN, "--format", "json", "--table", "metrics")


def test_diff_with_several_runs_per_side_equals_the_cli(client, capsys):
    got = ok(client, "diff", a=str(KINETO), more_a=[str(KINETO)], b=str(QWEN), more_b=[str(QWEN), str(QWEN)],
             table="runs", limit=10_000)
    got.pop("page", None)
    want = cli_json(capsys, "diff", KINETO, KINETO, "--", QWEN, QWEN, QWEN, "--format", "json", "--table", "runs")
    assert got == want and len(want["runs"]["a"]) == 2 and len(want["runs"]["b"]) == 3

def test_search_pages_through_the_cli_matches(client, capsys):
    cli = cli_json(capsys, "search", KINETO, "aten::", "--json")
    first = ok(client, "search", trace=str(KINETO), regex="aten::", limit=3)
    assert first["matches"] == cli["matches"][:3] and first["count"] == cli["count"] > 6
    assert first["page"] == {"list": "matches", "offset": 0, "limit": 3, "returned": 3, "total": len(cli["matches"]),
                             "next_offset": 3}
    second = ok(client, "search", trace=str(KINETO), regex="aten::", offset=3, limit=3)
    assert second["matches"] == cli["matches"][3:6]


def test_a_huge_result_is_capped_and_paged(client):
    error, text = client.call("query", trace=str(STACK), sql="SELECT * FROM slice", limit=10_000)
    assert not error and len(text) <= vmcp.DEFAULT_MAX_CHARS
    doc = json.loads(text)
    assert 0 < doc["page"]["returned"] < 10_000 and doc["page"]["next_offset"] == doc["page"]["returned"]
    assert doc["rows"][0][0] == 0  # the first page starts at the first row


def test_errors_come_back_as_one_line(client):
    error, text = client.call("query", trace=str(STACK), sql="SELEC 1")
    assert error and "syntax error" in text and "\n" not in text
    error, text = client.call("info", trace=str(FIXTURES / "no-such-trace.json"))
    assert error and "no-such-trace.json" in text and "\n" not in text
    error, text = client.call("stats", trace=str(STACK), range="5")  # a bare number is a usage error
    assert error and "\n" not in text
    assert ok(client, "query", trace=str(STACK), sql="SELECT 1 AS one")["rows"] == [[1]]  # still serving


def test_a_backtracking_pattern_ends_and_lookaround_is_one_line(client, tmp_path):
    path = write_trace(tmp_path, [X("a" * 40 + "!", 0, 10), X("aaaa", 20, 5)])
    doc = ok(client, "search", trace=str(path), regex="(a+)+$", time_limit=0.5)  # RE2: linear, no runaway
    assert doc["count"] == 1 and [m["name"] for m in doc["matches"]] == ["aaaa"]
    error, text = client.call("search", trace=str(path), regex="a(?=!)")
    assert error and "\n" not in text.strip() and "(?=" in text


# ---- in process: paging and the store cache ---------------------------------------------------------
def test_page_never_exceeds_the_cap():
    doc = {"title": "x", "rows": [{"name": "n" * 50, "i": i} for i in range(10_000)], "small": [1]}
    text = vmcp.page(doc, 0, 10_000, max_chars=5_000)
    got = json.loads(text)
    assert len(text) <= 5_000 and got["rows"] == doc["rows"][:got["page"]["returned"]]
    assert got["page"]["next_offset"] == got["page"]["returned"] and got["small"] == [1] and got["title"] == "x"
    rest = json.loads(vmcp.page(doc, 9_990, 100, max_chars=5_000))
    assert rest["rows"] == doc["rows"][9_990:] and rest["page"]["next_offset"] is None
    with pytest.raises(vmcp.ReplyTooBig, match="over the 5,000"):  # nothing to page: an error, no cut JSON
        vmcp.page({"text": "y" * 20_000}, max_chars=5_000)
    evil = json.loads(vmcp.page(["a\x1b]0;x\x07\x9b"], max_chars=5_000))
    assert evil["items"] == ["a\x1b]0;x\x07\x9b"]
    assert all(ord(c) < 128 for c in vmcp.page(["a\x1b\x9b"]))  # escaped on the wire


def test_store_cache_loads_each_trace_once():
    cache = vmcp.StoreCache(size=1)
    tools = {s.name: s.fn for s in vmcp.tool_specs(cache)}
    a = json.loads(tools["stats"](str(KINETO), limit=10_000))
    b = json.loads(tools["query"](str(KINETO), "SELECT COUNT(*) FROM slice"))
    assert cache.loads == 1 and b["rows"][0][0] == sum(r["count"] for r in a["rows"])
    tools["info"](str(STACK))
    tools["info"](str(KINETO))  # size 1: KINETO was dropped for STACK
    assert cache.loads == 3
