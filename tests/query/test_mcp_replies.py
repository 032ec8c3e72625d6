"""MCP replies an agent can trust: the right list paged (``rows``, never ``columns``), every
reply within the cap — an error too — and an over-cap result an error (``isError``) with a hint,
not cut JSON; any failure one line, nothing on stderr; a folder's edited rank file served
fresh; no trace given is not the server's cwd; the tools say their text is untrusted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, X, write_trace

pytest.importorskip("mcp")
pytest.importorskip("duckdb")

from vtui import mcp as vmcp  # noqa: E402
from vtui.errors import UsageError  # noqa: E402


def tools(cap: int = vmcp.DEFAULT_MAX_CHARS, loader=None) -> dict:
    return {s.name: s.fn for s in vmcp.tool_specs(loader or vmcp.StoreCache(), cap)}


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return write_trace(tmp_path_factory.mktemp("t"), [X("a", 0, 10), X("b", 20, 5), X("c", 30, 5)])


def test_query_pages_rows_never_its_long_column_names(trace):
    names = [f"{c}_{'x' * 300}" for c in "abcd"]
    sql = "SELECT " + ", ".join(f"{i} AS {n}" for i, n in enumerate(names)) + " FROM range(2)"
    first = json.loads(tools()["query"](str(trace), sql, limit=1))
    assert first["page"]["list"] == "rows" and first["columns"] == names and len(first["types"]) == 4
    assert first["rows"] == [[0, 1, 2, 3]] and first["page"]["next_offset"] == 1
    second = json.loads(tools()["query"](str(trace), sql, offset=1, limit=1))
    assert second["columns"] == names and second["rows"] == [[0, 1, 2, 3]] and second["page"]["next_offset"] is None


def test_other_long_lists_are_cut_and_named_and_any_list_can_be_paged():
    doc = {"title": "x", "sources": [{"file": f"rank{i}.json", "n": i} for i in range(10_000)],
           "track_list": [{"name": f"track {i}", "events": i} for i in range(10_000)],
           "roofline": {"ops": [{"op": f"mm{i}"} for i in range(500)]}}
    got = json.loads(vmcp.page(doc, 0, 1, max_chars=5_000, path="track_list"))
    assert got["track_list"] == doc["track_list"][:1] and got["page"]["next_offset"] == 1
    cut = got["page"]["cut"]
    assert cut["sources"]["total"] == 10_000 and got["sources"] == doc["sources"][:cut["sources"]["returned"]]
    assert got["title"] == "x"
    nested = json.loads(vmcp.page(doc, 10, 5, max_chars=5_000, path="roofline.ops"))
    assert nested["roofline"]["ops"] == doc["roofline"]["ops"][10:15] and nested["page"]["list"] == "roofline.ops"
    with pytest.raises(UsageError, match="no list 'nope'"):
        vmcp.page(doc, path="nope")


def test_a_reply_over_the_cap_is_an_error_with_a_hint_not_half_json(trace):
    with pytest.raises(vmcp.ReplyTooBig, match="narrow it"):
        tools(2_000)["query"](str(trace), "SELECT repeat('y', 5000) AS big")
    with pytest.raises(vmcp.ReplyTooBig):
        vmcp.page({"rows": [["z" * 3_000]]}, max_chars=2_000)


class Server:
    """``vtui mcp`` as a client sees it (stderr kept, to check nothing spills there)."""

    def __init__(self, cap: int) -> None:
        env = {**os.environ, "VTUI_MCP_MAX_CHARS": str(cap)}
        self.proc = subprocess.Popen([sys.executable, "-m", "vtui", "mcp"], cwd=ROOT, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.n = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "vtui-test", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: dict) -> None:
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            msg = json.loads(self.proc.stdout.readline())
            if msg.get("id") == self.n:
                return msg

    def call(self, tool: str, **arguments) -> tuple[bool, str]:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})["result"]
        return result.get("isError", False), result["content"][0]["text"]

    def close(self) -> str:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        return self.proc.stderr.read()


@pytest.mark.slow
def test_errors_over_the_wire_are_flagged_capped_and_one_line(trace):
    server = Server(cap=2_000)
    try:
        error, text = server.call("query", trace=str(trace), sql="SELECT repeat('y', 5000) AS big")
        assert error and "narrow it" in text and "yyyy" not in text and len(text) <= 2_000
        error, text = server.call("query", trace=str(trace), sql="SELECT " + "x" * 300_000)
        assert error and len(text) <= 2_000 and "\n" not in text
        error, text = server.call("info", trace="a" * 300_000)
        assert error and len(text) <= 2_000 and "\n" not in text and "name too long" in text.lower()
        error, text = server.call("info", trace="")
        assert error and "trace" in text
        error, text = server.call("query", trace=str(trace), sql="-- a comment first\nSELECT 1 AS one")
        assert not error and json.loads(text)["rows"] == [[1]]
        assert all(vmcp.UNTRUSTED in t["description"] for t in server.request("tools/list", {})["result"]["tools"])
    finally:
        err = server.close()
    assert err == ""


def test_a_foreign_exception_is_one_line_to_the_agent():
    def broken(path: str, cache: bool = True):
        raise RuntimeError("boom\n" + "x" * 1_000_000)

    server = vmcp.build_server(broken, max_chars=2_000)
    tool = server._tool_manager.get_tool("info")
    import asyncio

    from mcp.server.mcpserver.exceptions import ToolError

    with pytest.raises(ToolError) as err:
        asyncio.run(tool.fn(trace="x.json"))
    text = str(err.value)
    assert "internal error (RuntimeError: boom" in text and "\n" not in text and len(text) <= 2_000


def test_an_edited_rank_file_in_a_folder_is_not_served_stale(tmp_path):
    folder = tmp_path / "ranks"
    folder.mkdir()
    write_trace(folder, [X("a", 0, 10)], name="rank0.json")
    second = write_trace(folder, [X("a", 0, 10)], name="rank1.json")
    cache = vmcp.StoreCache()
    count = "SELECT count(*) AS n FROM slice"
    assert json.loads(tools(loader=cache)["query"](str(folder), count))["rows"] == [[2]]
    stamp = folder.stat()
    write_trace(folder, [X("a", 0, 10), X("b", 20, 5), X("c", 30, 5)], name="rank1.json")
    os.utime(second, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000))
    os.utime(folder, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # the folder's own stat as it was
    assert json.loads(tools(loader=cache)["query"](str(folder), count))["rows"] == [[4]]


def test_no_trace_is_not_the_servers_cwd():
    with pytest.raises(UsageError, match="no trace"):
        vmcp.StoreCache()("")
    with pytest.raises(UsageError, match="no trace"):
        vmcp.StoreCache()("  ")


def test_info_on_hundreds_of_ranks_fits_and_each_list_pages(tmp_path):
    folder = tmp_path / "ranks"
    folder.mkdir()
    for r in range(300):
        (folder / f"trace_rank{r}.json").write_text(json.dumps(
            {"traceEvents": [{"ph": "X", "name": "a", "pid": r, "tid": 1, "ts": 0, "dur": 5}], "distributedInfo": {"rank": r}}))
    info = tools(5_000)["info"]
    first = json.loads(info(str(folder), limit=1))
    assert first["page"]["list"] == "track_list" and first["page"]["cut"]["sources"]["total"] == 300
    seen, offset = [], 0
    while offset is not None:
        doc = json.loads(info(str(folder), offset=offset, limit=100, list_path="sources"))
        seen += [s["path"] for s in doc["sources"]]
        offset = doc["page"]["next_offset"]
    assert sorted(seen) == sorted(str(p) for p in folder.iterdir())


def test_paging_past_the_byte_bound_says_how_instead_of_an_endless_empty_page(trace, monkeypatch):
    from vtui.query import engine

    monkeypatch.setattr(engine, "MAX_BYTES", 50_000)
    query = tools()["query"]
    sql = "SELECT i, repeat('z', 1000) AS s FROM range(500) t(i)"
    first = json.loads(query(str(trace), sql, limit=200))
    got = len(first["rows"])
    assert 40 <= got < 200 and first["page"]["next_offset"] == got and first["truncated"]
    with pytest.raises(UsageError, match="OFFSET"):
        query(str(trace), sql, offset=got, limit=200)
