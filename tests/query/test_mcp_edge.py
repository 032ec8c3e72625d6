"""``VTUI_MCP_MAX_CHARS`` is read at the edge (``vtui mcp``'s start), not at import: a bad value is
one line and a non-zero exit, and the value read is the cap every tool's reply keeps."""

from __future__ import annotations

import pytest

from tests.helpers import STACK
from vtui import mcp as vmcp
from vtui.cli import main
from vtui.errors import UsageError


@pytest.mark.parametrize("bad", ["lots", "-5", "12.5", "10"])
def test_a_bad_cap_is_one_line_before_the_server_starts(monkeypatch, capsys, bad):
    monkeypatch.setenv("VTUI_MCP_MAX_CHARS", bad)
    assert main(["mcp"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "VTUI_MCP_MAX_CHARS" in err and repr(bad) in err


def test_the_cap_is_read_from_the_environment_given():
    assert vmcp.max_chars_from({}) == vmcp.DEFAULT_MAX_CHARS
    assert vmcp.max_chars_from({"VTUI_MCP_MAX_CHARS": " 5000 "}) == 5000
    with pytest.raises(UsageError):
        vmcp.max_chars_from({"VTUI_MCP_MAX_CHARS": "5e3"})


def test_every_tool_reply_keeps_the_cap_it_was_given():
    pytest.importorskip("pydantic")
    cache = vmcp.StoreCache()
    replies = {}
    for cap in (2_000, vmcp.DEFAULT_MAX_CHARS):
        stats = next(s for s in vmcp.tool_specs(cache, cap) if s.name == "stats")
        replies[cap] = stats.fn(trace=str(STACK), limit=10_000)
    assert len(replies[2_000]) <= 2_000 < len(replies[vmcp.DEFAULT_MAX_CHARS])
