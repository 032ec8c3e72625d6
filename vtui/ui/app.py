"""The vtui app: loads one trace, then shows its main view (``vtui.ui.timeline.main_view.MainPane``: the
timeline, track list and bottom panes, with their keys) over the status line."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from vtui.gcpause import imports_frozen

# The app's imports (Textual, numpy, vtui) make objects that live as long as the process: no
# collection while they are made, and none walks them after (~0.05 CPU-s of the ~0.4 they take).
with imports_frozen():
    from textual import events
    from textual.app import App, ComposeResult, SystemCommand
    from textual.screen import Screen
    from textual.widgets import Static

    from vtui.load.background import load_in_background, reopen_cached
    from vtui.options import LoadOptions
    from vtui.store.store import TraceStore
    from vtui.ui.keys import MAIN_HELP, bindings
    from vtui.ui.screens.modals import HelpScreen
    from vtui.ui.shell import AppShell, LoadJob
    from vtui.ui.timeline.main_view import MainPane
    from vtui.ui.timeline.view import ViewState
    from vtui.ui.trace_text import plain
    from vtui.units import format_duration

if TYPE_CHECKING:
    from vtui.agent.share import AppShare


class VtuiApp(AppShell, App[int]):
    TITLE = "vtui"
    KEY_SCOPE = "timeline"  # its bindings and palette entries (vtui.ui.keys)
    BINDINGS = bindings("timeline", on="app")  # help and quit; the view's keys are the pane's
    HELP_SCOPES = MAIN_HELP

    def __init__(self, path: Path | str, store: TraceStore | None = None, cache: bool = True,
                 options: LoadOptions | None = None, share: bool = False, capture: Path | str | None = None) -> None:
        """``capture``: vLLM's graph-capture trace of the same run (default: the first trace in a
        ``capture_traces/`` folder beside ``path``, TraceLens's layout); Insights reads it."""
        super().__init__()
        self.share_wanted = share  # vtui --share: shared with an agent once loaded (S toggles it)
        self.agent: AppShare | None = None
        self.path = Path(path)
        self.capture = Path(capture) if capture is not None else _capture_beside(self.path)
        self.cache = cache  # use the index cache (vtui --no-cache turns it off)
        self.load_options = options  # None: the environment's (LoadOptions.from_environ)
        self.store = store
        self.pane: MainPane | None = None

    @property
    def view(self) -> ViewState | None:
        return self.pane.view if self.pane is not None else None

    @property
    def searching(self) -> str | None:
        """The pattern of a search still running."""
        return self.pane.search.pattern if self.pane is not None else None

    # ---- layout and loading ---------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield from self.loading_widgets(f"vtui · {self.path.name} · loading…", f"Loading {self.path}")

    def on_mount(self) -> None:
        self.use_user_keymap()
        self.exit_on_signals()
        if self.store is None:  # a warm open: the entry mapped here, before the loading stage is drawn
            self.store = reopen_cached(self.path, cache=self.cache, options=self.load_options)
        if self.store is not None:
            self._show_store(self.store)
        else:
            self.start_load(LoadJob(
                lambda progress, control: load_in_background(self.path, progress, cache=self.cache, control=control,
                                                                options=self.load_options),
                "load trace", f"vtui · {self.path.name} · failed to load", "Could not open the trace:",
                lambda exc: f"{self.path}: could not load ({type(exc).__name__}: {exc})"))

    def loaded(self, result: TraceStore) -> None:
        self._show_store(result)

    def _show_store(self, store: TraceStore) -> None:
        self.store = store
        self.query_one("#loading").remove()
        self.pane = MainPane(store, self.path, id="main")
        self.pane.capture = self.capture
        for value in ("window", "selection", "track_layout", "searching"):  # the status line follows the view
            self.watch(self.pane, value, self._show_status, init=False)
        self.mount(self.pane, after=self.query_one("#title"))
        self.query_one("#title", Static).update(plain(
            f"vtui · {self.path.name} · {store.event_count:,} events · {len(store.tracks)} tracks · "
            f"{format_duration(store.span_ns)}" + (" · repaired" if store.repaired else "")
            + (f" · capture {self.capture.name}" if self.capture is not None else "")
        ))
        if self.share_wanted:
            self.call_later(self.action_share)

    def _show_status(self) -> None:
        if self.pane is not None:
            sharing = self.agent.status_words() if self.agent is not None else ""  # first: a long line is cut at the end
            # the status line is the timeline screen's: another screen (call tree, Insights) may be on
            # top, or none has it yet while the app starts or ends
            for screen in self.screen_stack:
                found = screen.query("#status")
                if found:
                    found.first(Static).update(plain(" · ".join(filter(None, (sharing, self.pane.status_text())))))
                    return

    def _update(self) -> None:
        """Redraw after a change made to ``view`` from outside the keys (tests, scripts)."""
        if self.pane is not None:
            self.pane.publish()

    def key_node(self, on: str) -> MainPane | None:
        return self.pane

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_sections(self.screen)))

    def stop_work(self) -> None:
        if self.pane is not None:
            self.pane.search.stop()

    # ---- sharing with an agent (vtui.agent) ----------------------------------------------------------
    async def action_share(self) -> None:
        """S: share the view with an agent over a private socket; again: stop."""
        from vtui.agent.share import toggle_share  # noqa: PLC0415 — only when asked

        await toggle_share(self)

    async def on_event(self, event: events.Event) -> None:
        # esc (the person's, from the terminal) interrupts the agent's request in progress, and does what it always does.
        if isinstance(event, events.Key) and event.key == "escape" and not event.is_forwarded and self.agent is not None:
            self.agent.interrupt()
        await super().on_event(event)

    def on_unmount(self) -> None:
        if self.agent is not None:
            self.agent.stop(closing=True)  # no socket outlives the app

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if self.agent is not None:
            yield from self.agent.palette_commands()

    def key_rows(self) -> list[tuple[str, str]]:
        return [row for _, rows in self.help_sections(self.screen_stack[0]) for row in rows]


def _capture_beside(path: Path) -> Path | None:
    """The first trace of a ``capture_traces/`` folder beside ``path`` (none: None)."""
    from vtui.analysis.gpu.graphs import find_capture_traces  # noqa: PLC0415 — a directory listing, at start

    try:
        found = find_capture_traces(path)
    except OSError:  # an unreadable folder: no capture, the trace still opens
        return None
    return found[0] if found else None
