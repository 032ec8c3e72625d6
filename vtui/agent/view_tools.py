"""The agent's requests carried out on the live app, through the actions the keys use: ``g``'s
go-to for times, ranges and steps, ``/``'s search job, ``t``'s track filter, ``i`` / ``F`` / ``K`` /
``:`` for the screens, ``1``/``2``/``3`` for the bottom panes, ``e``'s export prompt. A change is
made on the app's message loop (``on_ui``), where a key's action would run; waiting for a search or
Insights to finish is done here, off that loop, so the app keeps drawing meanwhile.

Each change says what it did in the agent's log line (``log``). Nothing here writes a file: an
export opens the person's own prompt, filled in, and only their enter writes it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

from vtui.agent.view_doc import UNTRUSTED, safe, screen_doc, screen_lines, slice_doc, span_doc, view_doc
from vtui.agent.wire import error, ok
from vtui.units import format_duration

WAIT_STEP_S = 0.02  # how often a wait looks at the app again
SEARCH_WAIT_S = 30.0  # the app's search stops itself after 10 s
SCREEN_WAIT_S = 120.0  # Insights of a large range takes a while; esc ends the wait
BOOKMARKS_MAX = 100
MAX_CLI_CHARS = 500_000  # a CLI reply at most, whatever the attach side asks (the socket carries 1 MiB)

INSIGHTS_SECTIONS = {"findings": "ins-findings", "steps": "ins-steps", "serving": "ins-serving",
                     "graphs": "ins-graphs", "operators": "ins-ops", "gpu": "ins-gpu",
                     "roofline": "ins-roofline", "critical_path": "ins-critical", "gpu_gaps": "ins-gaps",
                     "outliers": "ins-outliers", "memory": "ins-memory", "caches": "ins-misc"}
NO_MARKUP = str.maketrans("[]", "()")
OPEN_TARGETS = ("timeline", "insights", "call_tree", "ranks", "sql", "details", "aggregation", "measure")


class Refused(Exception):
    """A request that cannot be carried out as asked; the message is the reply's one line."""


class ViewTools:
    def __init__(self, app: Any, log: Callable[[str], None]) -> None:
        self.app = app
        self.log = log
        self.bookmarks: dict[str, dict[str, Any]] = {}
        self._cli: dict[int, dict[str, Any]] = {}  # the CLI tools by their reply cap

    @property
    def pane(self) -> Any:
        if self.app.pane is None:
            raise Refused("the trace is still loading")
        return self.app.pane

    async def run(self, op: str, req: dict[str, Any]) -> dict[str, Any]:
        method = getattr(self, f"op_{op}", None)
        if method is None:
            return error(f"no such request: {safe(op, 60)}")
        try:
            return await method(req)
        except Refused as exc:
            return error(str(exc))

    # ---- running on the app's loop, waiting off it --------------------------------------------
    async def on_ui(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on the app's message loop (where a key's action runs); its result here."""
        done: asyncio.Future = asyncio.get_running_loop().create_future()

        async def call() -> None:
            if done.cancelled():
                return
            try:
                result = fn()
                if inspect.iscoroutine(result):  # an async action (Input's submit)
                    result = await result
            except Exception as exc:  # noqa: BLE001 — handed to the waiting request
                if not done.cancelled():
                    done.set_exception(exc)
                return
            if not done.cancelled():
                done.set_result(result)

        self.app.call_later(call)
        return await done

    async def wait_for(self, ready: Callable[[], bool], limit_s: float, what: str) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + limit_s
        while not ready():
            if loop.time() > end:
                raise Refused(f"{what} did not finish in {limit_s:g} s")
            await asyncio.sleep(WAIT_STEP_S)

    async def to_timeline(self) -> None:
        """Close the screens over the timeline (as esc would), unless the person is typing in a prompt."""
        from vtui.ui.screens.modals import PromptScreen

        while self.app.screen is not self.app.screen_stack[0]:
            top = self.app.screen
            if isinstance(top, PromptScreen):
                raise Refused("the person is typing in a prompt; try again when they are done")
            await self.on_ui(partial(top.dismiss, None))
            await self.wait_for(partial(_gone, self.app, top), 5, "closing a screen")

    def view(self) -> dict[str, Any]:
        return view_doc(self.app, self.bookmarks)

    # ---- reading ---------------------------------------------------------------------------------
    async def op_get_view(self, req: dict[str, Any]) -> dict[str, Any]:
        self.pane  # noqa: B018 — refused while loading
        return ok(view=self.view())

    async def op_get_screen(self, req: dict[str, Any]) -> dict[str, Any]:
        await self.on_ui(lambda: None)  # after what the app had queued (a redraw of the last change)
        return ok(**screen_doc(self.app))

    # ---- moving the view ---------------------------------------------------------------------
    async def op_navigate(self, req: dict[str, Any]) -> dict[str, Any]:
        given = [k for k in ("time", "step", "slice_id", "search", "bookmark") if req.get(k) not in (None, "")]
        if len(given) != 1:
            raise Refused("navigate takes one of time, step, slice_id, search, bookmark")
        what = given[0]
        value = req[what]
        if what == "search":
            return await self.op_search({"regex": value})
        await self.to_timeline()
        pane = self.pane
        if what == "slice_id":
            row = self._slice(value)
            await self.on_ui(lambda: pane.jump_to(row))
            self.log(f"selected {safe(pane.store.name(row), 60)} at {format_duration(int(pane.store.slices.start_ns[row]))}")
        elif what == "bookmark":
            name = bookmark_name(value)
            mark = self.bookmarks.get(name)
            if mark is None:
                raise Refused(f"no bookmark {name!r} (bookmarks: {', '.join(sorted(self.bookmarks)) or 'none'})")
            await self.on_ui(lambda: restore(pane, mark))
            self.log(f"back to bookmark {name}")
        else:
            text = f"#{int(value)}" if what == "step" and str(value).isdigit() else str(value)
            target = self._target(text)
            await self.on_ui(lambda: pane._goto_done(text))
            self.log(f"went to {target.what}")
        return ok(view=self.view())

    async def op_select_range(self, req: dict[str, Any]) -> dict[str, Any]:
        await self.to_timeline()
        pane = self.pane
        if req.get("slice_id") is not None:
            row = self._slice(req["slice_id"])
            await self.on_ui(lambda: (pane.jump_to(row), pane.action_range_selection()))
        else:
            text = str(req.get("range") or "")
            if ":" not in text:
                raise Refused("select_range takes a range such as 12.1ms:14.9ms (either end may be empty), or slice_id")
            self._target(text)
            await self.on_ui(lambda: pane._goto_done(text))
        rng = pane.view.range
        if rng:
            self.log(f"selected {format_duration(rng[0])} – {format_duration(rng[1])}")
        return ok(view=self.view())

    async def op_set_filter(self, req: dict[str, Any]) -> dict[str, Any]:
        text = str(req.get("text") or "")
        await self.to_timeline()
        pane = self.pane
        await self.on_ui(lambda: pane._filter_done(text))
        self.log(f"filtered tracks by /{safe(text, 40)}/" if text.strip() else "cleared the track filter")
        return ok(view=self.view())

    async def op_search(self, req: dict[str, Any]) -> dict[str, Any]:
        regex = str(req.get("regex") or "")
        if not regex:
            raise Refused("search needs a regex")
        await self.to_timeline()
        pane = self.pane
        outcome: list[tuple[Any, str | None]] = []

        def done(found: Any, problem: str | None) -> None:
            outcome.append((found, problem))
            pane._search_finished(found, problem)  # the app's own finish: highlight, first match, its message

        def start() -> None:  # what the prompt's enter starts, with the outcome kept for the reply
            pane.search.start(pane, pane.store, regex, pane.view.visible_track_ids(), done)
            pane.search_changed()

        await self.on_ui(start)
        self.log(f"searching /{safe(regex, 40)}/")
        try:
            await self.wait_for(lambda: bool(outcome) or pane.search.pattern != regex, SEARCH_WAIT_S, "the search")
        except asyncio.CancelledError:
            pane.search.stop()
            raise
        if not outcome:
            raise Refused("the search was stopped (esc, or a newer search)")
        found, problem = outcome[0]
        if found is None:
            raise Refused(f"search failed: {safe(problem or '', 300)}")
        self.log(f"searched /{safe(regex, 40)}/: {found.count:,} matches")
        return ok(matches=int(found.count), total_ns=int(found.total_ns), view=self.view())

    # ---- screens over the view --------------------------------------------------------------------
    async def op_open(self, req: dict[str, Any]) -> dict[str, Any]:
        what = str(req.get("what") or "")
        if what not in OPEN_TARGETS:
            raise Refused(f"open takes one of {', '.join(OPEN_TARGETS)}")
        await self.to_timeline()
        pane = self.pane
        reply: dict[str, Any] = {}
        if what in ("details", "aggregation", "measure"):
            await self.on_ui(lambda: pane.action_tab(what))
        elif what == "insights":
            reply = await self._open_insights(str(req.get("section") or ""))
        elif what == "call_tree":
            await self._open_screen(pane.action_call_tree, "CallTreeScreen")
        elif what == "ranks":
            await self._open_screen(pane.action_ranks, "RanksScreen")
        elif what == "sql":
            reply = await self._open_sql(str(req.get("sql") or ""))
        self.log(f"opened {what.replace('_', ' ')}" + (f" · {req['section']}" if req.get("section") else ""))
        return ok(**reply, view=self.view())

    async def _open_screen(self, action: Callable[[], None], name: str) -> Any:
        await self.on_ui(action)
        await self.wait_for(lambda: type(self.app.screen).__name__ == name, 10, f"opening {name}")
        # Drawn, so that get_screen right after reads it, as the person sees it.
        await self.wait_for(lambda: any(line.strip() for line in screen_lines(self.app)), 10, f"drawing {name}")
        return self.app.screen

    async def _open_insights(self, section: str) -> dict[str, Any]:
        if section and section not in INSIGHTS_SECTIONS:
            raise Refused(f"Insights has the sections {', '.join(INSIGHTS_SECTIONS)}")
        screen = await self._open_screen(self.pane.action_insights, "InsightsScreen")
        # Computed, or failed: either way the "Computing insights…" line is replaced.
        # Computed, or failed: either way the "Computing insights…" line is replaced (the body starts empty).
        await self.wait_for(lambda: screen.insights is not None or (bool(screen.query("#ins-body > *"))
                                                                    and not screen.query("#ins-status")),
                            SCREEN_WAIT_S, "Insights")
        if screen.insights is None:
            raise Refused("Insights failed: " + " ".join(safe(_text(w), 300) for w in screen.query("#ins-body > Static")))
        await self.wait_for(lambda: bool(screen.query("#ins-findings")), 10, "drawing Insights")
        if not section:
            return {}
        found = screen.query(f"#{INSIGHTS_SECTIONS[section]}")
        if not found:
            raise Refused(f"this trace's Insights has no {section} section")
        widget = found.first()

        body = screen.query_one("#ins-body")

        def there() -> bool:
            return widget.virtual_region.y > 0 and abs(body.scroll_y - min(widget.virtual_region.y, body.max_scroll_y)) < 1

        heading = next((line.strip() for line in _text(widget).splitlines() if line.strip()), "")[:40]

        def drawn() -> bool:
            # The compositor repaints after the scroll: get_screen right after must read the section at the top.
            return not heading or any(line.strip().startswith(heading) for line in screen_lines(self.app)[:8])

        # Asked again until it holds: while Insights is still being laid out a section's place is not final.
        for _ in range(int(5 / WAIT_STEP_S)):
            if there() and drawn():
                break
            if not there():
                await self.on_ui(lambda: widget.scroll_visible(top=True, animate=False))
            await asyncio.sleep(WAIT_STEP_S)
        else:
            raise Refused(f"could not scroll Insights to {section}")
        text = _text(widget)
        return {"section": section, "section_text": [safe(line, 400) for line in text.splitlines()[:200]],
                "untrusted": UNTRUSTED}

    async def _open_sql(self, sql: str) -> dict[str, Any]:
        from textual.widgets import Input

        from vtui.ui.screens.query import QueryScreen

        if sql:
            QueryScreen.last_sql = sql  # the pane opens with it, as with the person's last query
        screen = await self._open_screen(self.pane.action_query, "QueryScreen")
        if not sql:
            return {}
        await self.wait_for(lambda: bool(screen.query("#query-input")), 5, "opening the SQL pane")
        status = screen.query_one("#query-status")
        await self.on_ui(lambda: screen.query_one("#query-input", Input).action_submit())  # enter, as typed
        await self.wait_for(lambda: _text(status) not in ("", "running…"), 60, "the query")
        return {"status": safe(_text(status), 300), "columns": [safe(c, 60) for c in screen.columns],
                "rows": [[safe(str(v), 200) if isinstance(v, str) else v for v in row] for row in screen.rows[:50]],
                "untrusted": UNTRUSTED}

    # ---- marks and files -------------------------------------------------------------------------
    async def op_bookmark(self, req: dict[str, Any]) -> dict[str, Any]:
        name = bookmark_name(req.get("name"))
        if not name:
            raise Refused("a bookmark needs a name")
        if name not in self.bookmarks and len(self.bookmarks) >= BOOKMARKS_MAX:
            raise Refused(f"{BOOKMARKS_MAX} bookmarks already")
        v = self.pane.view
        self.bookmarks[name] = {"window": (v.t0, v.t1), "selected": v.selected, "range": v.range}
        self.log(f"bookmarked {name} (ctrl+p › bookmark to come back)")
        return ok(bookmark=name, view=self.view())

    async def op_export(self, req: dict[str, Any]) -> dict[str, Any]:
        """``e``'s prompt, with the agent's file name in it: the person's enter writes, esc does not."""
        path = str(req.get("path") or "")
        await self.to_timeline()
        pane = self.pane
        await self.on_ui(pane.action_export_range)
        await self.wait_for(lambda: bool(self.app.screen.query("#prompt-input")), 5, "opening the export prompt")
        if path:
            prompt = self.app.screen.query_one("#prompt-input")
            await self.on_ui(lambda: setattr(prompt, "value", path))
        self.log("asks to export the range: enter writes it, esc cancels")
        return ok(asked=True, note="the person was asked to confirm the export; nothing is written until they do")

    # ---- the CLI's answers on this trace ---------------------------------------------------------
    async def op_cli(self, req: dict[str, Any]) -> dict[str, Any]:
        """A ``vtui mcp`` tool run here, on the app's loaded trace (no second load), its reply paged
        to the attach side's ``max_chars``."""
        from vtui.errors import TraceLoadError, UsageError
        from vtui.mcp import DEFAULT_MAX_CHARS, MIN_CHARS

        tool, args, max_chars = req.get("tool"), req.get("args") or {}, req.get("max_chars", DEFAULT_MAX_CHARS)
        if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < MIN_CHARS:
            max_chars = DEFAULT_MAX_CHARS
        specs = self._cli_specs(min(max_chars, MAX_CLI_CHARS))
        if tool not in specs or not isinstance(args, dict) or "trace" in args:
            raise Refused(f"cli takes a tool ({', '.join(specs)}) and its arguments (the trace is the app's)")
        fn = specs[tool]
        try:
            text = await asyncio.to_thread(lambda: fn(trace=str(self.app.path), **args))
        except (UsageError, TraceLoadError) as exc:
            raise Refused(safe(str(exc), 600)) from None
        except TypeError as exc:  # an argument the tool does not take
            raise Refused(f"bad arguments for {tool}: {safe(str(exc), 200)}") from None
        return ok(text=text)

    def _cli_specs(self, max_chars: int) -> dict[str, Any]:
        if max_chars not in self._cli:
            from vtui.agent.cli_tools import attached_specs

            store = self.pane.store
            self._cli[max_chars] = {s.name: s.fn for s in attached_specs(lambda path, cache=True: store, max_chars)}
        return self._cli[max_chars]

    # ---- checks ----------------------------------------------------------------------------------
    def _slice(self, value: Any) -> int:
        n = len(self.pane.store.slices)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
            raise Refused(f"slice_id must be a slice id from 0 to {n - 1:,}")
        return value

    def _target(self, text: str) -> Any:
        from vtui.ui.timeline.goto import parse_target

        try:
            return parse_target(text, self.pane.store)
        except ValueError as exc:
            raise Refused(safe(str(exc), 300)) from None


def bookmark_name(value: Any) -> str:
    """The name as kept and shown: escaped, at most 60 characters, and without brackets (the
    command palette reads its entries as markup)."""
    return safe(str(value or "").strip(), 60).translate(NO_MARKUP)


def restore(pane: Any, mark: dict[str, Any]) -> None:
    """A bookmark's window, selection and range back on the view (u undoes the range)."""

    def put(v: Any) -> None:
        v.set_window(*mark["window"])
        if mark["selected"] >= 0:
            v.unhide_track_of(mark["selected"])
            v.select(mark["selected"])
        if mark["range"]:
            v.set_range(*mark["range"])
        v.set_window(*mark["window"])

    pane.act(put)


def _gone(app: Any, screen: Any) -> bool:
    return screen not in app.screen_stack


def _text(widget: Any) -> str:
    """A Static's text as plain characters (its content is a rich Text or a str)."""
    content = getattr(widget, "content", "")
    return content.plain if hasattr(content, "plain") else str(content)


__all__ = ["OPEN_TARGETS", "Refused", "ViewTools", "restore", "slice_doc", "span_doc"]
