"""The person stays in charge of a shared app: S starts and ends sharing, esc interrupts what the
agent started, an agent's export waits for the person's own confirmation, an open prompt is not
taken from them, and a folder that is not safe is refused with a message. Driven over the real
socket (the attach side's ``Link``) against the app run headless."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.agent.sharing import until_change, until_shared
from tests.agent.traces import kineto_like
from tests.app.screen import read_screen
from tests.helpers import answer_prompt, search_until_cancelled, settle
from vtui.agent.link import Link, LinkError
from vtui.agent.share import INTERRUPTED
from vtui.ui.app import VtuiApp
from vtui.ui.screens.modals import PromptScreen


def drawn(app) -> str:
    return "\n".join(read_screen(app).text)


async def test_S_starts_and_ends_sharing(tmp_path, runtime_dir):
    trace, _ = kineto_like(tmp_path)
    app = VtuiApp(trace, cache=False)
    sock = runtime_dir / "vtui" / f"{os.getpid()}.sock"
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.agent is None and not sock.exists()  # off unless asked
        await pilot.press("S")
        await until_shared(pilot)
        assert sock.exists() and "sharing, no agent yet (S stops)" in drawn(app)
        link = Link(os.getpid())
        assert (await link.call({"op": "get_view"}))["ok"]
        await pilot.pause()
        assert "shared with an agent (S ends, esc interrupts)" in drawn(app)
        await pilot.press("S")
        await pilot.pause()
        assert not sock.exists() and "shared with an agent" not in drawn(app) and "agent:" not in drawn(app)
        with pytest.raises(LinkError, match="closed the connection|stopped answering"):
            await link.call({"op": "get_view"})
        with pytest.raises(LinkError, match=f"app {os.getpid()} is not sharing"):
            await link.call({"op": "get_view"})
        await pilot.press("S")  # shared again: the same agent's next call reconnects
        await until_shared(pilot)
        assert (await link.call({"op": "get_view"}))["ok"]
        link.close()


async def test_esc_interrupts_the_agents_search(tmp_path, runtime_dir, monkeypatch):
    started = search_until_cancelled(monkeypatch)
    trace, _ = kineto_like(tmp_path)
    app = VtuiApp(trace, cache=False, share=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_shared(pilot)
        link = Link(os.getpid())
        asked = asyncio.ensure_future(link.call({"op": "search", "regex": "aten"}))
        while not started.is_set():  # the search is running in its worker
            await asyncio.wait_for(asyncio.shield(asyncio.to_thread(started.wait, 30)), 60)
        await pilot.press("escape")
        reply = await asyncio.wait_for(asked, 30)
        assert reply == {"ok": False, "error": INTERRUPTED}
        await settle(pilot)
        assert app.pane.search.pattern is None  # esc stopped the search itself too
        assert "agent: interrupted (esc)" in drawn(app)
        assert (await link.call({"op": "get_view"}))["ok"]  # the agent may ask again
        link.close()


async def test_an_agents_export_waits_for_the_persons_enter(tmp_path, runtime_dir):
    trace, _ = kineto_like(tmp_path)
    out = tmp_path / "agent-export.json"
    app = VtuiApp(trace, cache=False, share=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_shared(pilot)
        link = Link(os.getpid())
        reply = await link.call({"op": "export", "path": str(out)})
        assert reply["ok"] and reply["asked"] and "nothing is written" in reply["note"]
        assert isinstance(app.screen, PromptScreen)
        assert app.screen.query_one("#prompt-input").value == str(out)
        await settle(pilot)
        assert not out.exists()
        await pilot.press("escape")  # the person says no
        await settle(pilot)
        assert not out.exists() and not isinstance(app.screen, PromptScreen)
        await link.call({"op": "export", "path": str(out)})
        await answer_prompt(pilot, str(out))  # the person says yes
        await settle(pilot)
        assert out.exists() and "traceEvents" in out.read_text()
        link.close()


async def test_a_prompt_the_person_is_typing_in_is_not_taken(tmp_path, runtime_dir):
    trace, _ = kineto_like(tmp_path)
    app = VtuiApp(trace, cache=False, share=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_shared(pilot)
        await pilot.press("g")
        assert isinstance(app.screen, PromptScreen)
        link = Link(os.getpid())
        reply = await link.call({"op": "navigate", "time": "3ms"})
        assert reply == {"ok": False, "error": "the person is typing in a prompt; try again when they are done"}
        assert isinstance(app.screen, PromptScreen)
        link.close()


async def test_an_unsafe_folder_is_refused_with_a_message(tmp_path, runtime_dir):
    folder = runtime_dir / "vtui"
    folder.mkdir()
    os.chmod(folder, 0o755)
    trace, _ = kineto_like(tmp_path)
    app = VtuiApp(trace, cache=False, share=True)
    async with app.run_test(size=(200, 48)) as pilot:
        await settle(pilot)
        for _ in range(20):
            await pilot.pause()
        assert not app.agent.active and list(folder.iterdir()) == []
        assert any(n.message.startswith("Cannot share:") and "open to other users (mode 755)" in n.message
                   for n in app._notifications)
        assert "sharing" not in read_screen(app).text[-2]


async def test_the_agent_leaving_is_seen(tmp_path, runtime_dir):
    trace, _ = kineto_like(tmp_path)
    app = VtuiApp(trace, cache=False, share=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_shared(pilot)
        link = Link(os.getpid())
        await link.call({"op": "get_view"})
        assert app.agent.server.attached
        link.close()
        await until_change(app, lambda: not app.agent.server.attached)
        await pilot.pause()
        assert "agent: detached (the agent's connection closed)" in drawn(app)
        second = Link(os.getpid())  # another agent may attach once the first has gone
        assert (await second.call({"op": "get_view"}))["ok"]
        other = Link(os.getpid())
        with pytest.raises(LinkError, match="another agent is attached"):
            await other.call({"op": "get_view"})
        second.close()
        other.close()



async def test_the_other_view_tools_over_the_socket(tmp_path, runtime_dir):
    """Filter, the bottom panes, the call tree, and what a bad request is told."""
    trace, events = kineto_like(tmp_path)
    app = VtuiApp(trace, cache=False, share=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_shared(pilot)
        link = Link(os.getpid())
        view = (await link.call({"op": "set_filter", "text": "stream"}))["view"]
        assert view["filter"] == "stream" and view["visible_tracks"] == 1  # the GPU stream alone
        assert "filter /stream/" in drawn(app) and "agent: filtered tracks by /stream/" in drawn(app)
        view = (await link.call({"op": "set_filter", "text": ""}))["view"]
        assert view["filter"] is None and view["visible_tracks"] == 2

        await link.call({"op": "select_range", "range": "1ms:3ms"})
        view = (await link.call({"op": "open", "what": "aggregation"}))["view"]
        assert view["bottom_pane"] == "aggregation"
        await settle(pilot)
        assert "aten::mm" in drawn(app)  # the table of the range, drawn

        view = (await link.call({"op": "open", "what": "call_tree"}))["view"]
        assert view["screen"] == "tree" and "Call tree" in drawn(app)
        view = (await link.call({"op": "navigate", "time": "5ms"}))["view"]
        assert view["screen"] == "timeline"  # moving the view brings the timeline back
        assert view["window"]["start_ns"] + view["window"]["end_ns"] == 2 * 5_000_000

        assert (await link.call({"op": "bookmark", "name": "[b]hot[/b]"}))["bookmark"] == "(b)hot(/b)"
        assert [c.title for c in app.agent.palette_commands()] == ["bookmark: (b)hot(/b)"]
        assert (await link.call({"op": "navigate", "bookmark": "[b]hot[/b]"}))["ok"]

        for request, said in (
                ({"op": "fly"}, "no such request: fly"),
                ({"op": "open", "what": "browser"}, "open takes one of timeline, insights, call_tree"),
                ({"op": "open", "what": "insights", "section": "poetry"}, "Insights has the sections findings"),
                ({"op": "navigate", "step": 99}, "step #99 does not exist: this trace has 6"),
                ({"op": "navigate", "time": "1ms", "step": 2}, "navigate takes one of"),
                ({"op": "select_range", "range": "9s:10s"}, "is outside the trace"),
                ({"op": "search", "regex": "(?<=a)b"}, "search failed: invalid regex"),
                ({"op": "cli", "tool": "diff", "args": {}}, "cli takes a tool (info, health, insights"),
                ({"op": "cli", "tool": "stats", "args": {"trace": "/etc/passwd"}}, "the trace is the app's"),
                ({"op": "cli", "tool": "stats", "args": {"range": "zz"}}, "range")):
            reply = await link.call(request)
            assert reply["ok"] is False and said in reply["error"], (request, reply)
        link.close()


async def test_the_person_returns_to_an_agents_bookmark_from_the_palette(tmp_path, runtime_dir):
    trace, _ = kineto_like(tmp_path)
    app = VtuiApp(trace, cache=False, share=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await until_shared(pilot)
        link = Link(os.getpid())
        await link.call({"op": "select_range", "range": "4ms:6ms"})
        marked = (await link.call({"op": "bookmark", "name": "slow step"}))["view"]["window"]
        await pilot.press("0")  # the person looks at the whole trace
        assert (app.view.t0, app.view.t1) != (marked["start_ns"], marked["end_ns"])
        await pilot.press("ctrl+p")
        await pilot.press(*"bookmark: slow")
        await settle(pilot, 3)
        await pilot.press("enter")
        await settle(pilot)
        assert (app.view.t0, app.view.t1) == (marked["start_ns"], marked["end_ns"])
        link.close()
