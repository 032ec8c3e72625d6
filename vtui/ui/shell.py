"""What the main app and compare mode share around their views: the styles and theme, the loading
stage (title line, progress bar, the load worker, its error message) and q, which also stops a
load at once. The main app loads one trace, compare mode two and their comparison; everything
around the load is the same and lives here once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import ProgressBar, Static
from textual.worker import Worker, WorkerState

from vtui.errors import TraceLoadError
from vtui.load.background import LoadControl
from vtui.termination import EXIT_GRACE_S, exit_on_signals, hard_exit_after
from vtui.ui.colours import THEME, VARIABLES
from vtui.ui.keymap import apply_user_keymap
from vtui.ui.keys import HelpSection, help_sections, palette_entries
from vtui.ui.timeline.render import honour_no_color
from vtui.ui.trace_text import plain, visible
from vtui.ui.widgets.footer import Footer

Progress = Callable[[float], None]

# The bar moves at most this often: each move is a frame drawn on the UI thread (3-11 ms of CPU,
# on the cores the loader and its decoders need), and a 1 GB load reported ~200 steps.
PROGRESS_EVERY_S = 0.25


@dataclass(frozen=True)
class LoadJob:
    """What to load and what to say when it fails.

    ``run(progress, control)`` runs in a worker thread and returns what ``loaded`` receives;
    ``control`` is the app's: q kills a loader process at once. A ``TraceLoadError`` is shown as it
    is; any other exception as ``describe(exc)`` (one line, never a traceback).
    """

    run: Callable[[Progress, LoadControl], Any]
    description: str
    failed_title: str  # the title line after a failure
    failed_head: str  # the line above the message
    describe: Callable[[Exception], str]


@dataclass(frozen=True)
class _Failed:
    message: str


if TYPE_CHECKING:
    _Base = App  # what the shell is mixed into: type checkers see ``self`` as that App
else:
    _Base = object  # at run time a plain mixin (App comes after it in the bases)


class AppShell(_Base):
    """Mixed into an ``App`` (listed before it): compose with ``loading_widgets``, start with
    ``start_load``, receive the result in ``loaded``. ``stop_work`` is the app's hook for its own
    workers to stop on quit (searches)."""

    CSS_PATH = str(Path(__file__).with_name("vtui.tcss"))
    KEY_SCOPE = ""  # the app's own bindings: the command palette lists them
    HELP_SCOPES: tuple[str, ...] = ()  # the help sections of the app's own screen (vtui.ui.keys)
    load_error: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        honour_no_color()  # before Textual reads NO_COLOR
        super().__init__(*args, **kwargs)
        app: Any = self
        app.register_theme(THEME)
        app.theme = THEME.name
        self._load_control = LoadControl()  # q while loading stops the loader process
        self._load_job: LoadJob | None = None
        self.keymap: dict[str, str] = {}  # the user's keys (keys.toml), by binding id
        self._exit_timer: Any = None  # the hard exit armed by the first exit of a real run
        self._signalled = False  # SIGTERM / SIGHUP asked for the exit

    def use_user_keymap(self) -> None:
        self.keymap = apply_user_keymap(self)

    def help_sections(self, screen: Screen) -> list[HelpSection]:
        """The keys of ``screen`` as the user has them: the app's own screen in full, else that screen's."""
        if screen is not self.screen_stack[0]:
            scope = getattr(screen, "KEY_SCOPE", None)
            return help_sections((scope, "everywhere") if scope else ("everywhere",), self.keymap)
        return help_sections(self.HELP_SCOPES, self.keymap)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every binding of the app is a palette command (with its key and id), run by the node that
        binds it (none while loading)."""
        yield from super().get_system_commands(screen)
        for title, help_line, action, on in palette_entries(self.KEY_SCOPE, self.keymap):
            node = self if on == "app" else self.key_node(on)
            if node is not None:
                yield SystemCommand(title, help_line, partial(self.run_action, action, node))

    def key_node(self, on: str) -> Any:
        """The node that binds the keys marked ``on`` (vtui.ui.keys.Key.on); None while loading."""
        return None

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLES)

    def loading_widgets(self, title: str, what: str) -> ComposeResult:
        # markup=False and Text: file names are data ("[/]" would crash the markup parser).
        yield Static(plain(title), id="title", markup=False)
        with Vertical(id="loading"):
            yield Static(plain(what), markup=False)
            yield ProgressBar(total=1.0, show_eta=False, id="progress")
        yield Static("", id="status", markup=False)
        yield Footer()

    def start_load(self, job: LoadJob) -> None:
        self._load_job = job
        app: Any = self

        last = [-PROGRESS_EVERY_S]

        def progress(fraction: float) -> None:
            now = monotonic()
            if fraction < 1.0 and now - last[0] < PROGRESS_EVERY_S:
                return
            last[0] = now
            app.call_from_thread(self._set_progress, fraction)

        def run() -> Any:
            try:
                return job.run(progress, self._load_control)
            except TraceLoadError as exc:
                return _Failed(str(exc))
            except Exception as exc:  # noqa: BLE001 — shown in the app, never a traceback
                return _Failed(job.describe(exc))

        app.run_worker(run, thread=True, exclusive=True, group="load", description=job.description,
                       exit_on_error=False)

    def loaded(self, result: Any) -> None:
        raise NotImplementedError

    def _set_progress(self, fraction: float) -> None:
        for bar in self.query("#progress").results(ProgressBar):
            bar.update(progress=fraction)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "load" or self._load_job is None:
            return
        if event.state == WorkerState.SUCCESS:
            result = event.worker.result
            if isinstance(result, _Failed):
                self.show_load_error(result.message)
            else:
                self.loaded(result)
        elif event.state == WorkerState.ERROR:  # only a BaseException gets past run()
            self.show_load_error(f"could not load ({event.worker.error!r})")

    def show_load_error(self, message: str) -> None:
        job = self._load_job
        assert job is not None
        self.load_error = message
        self.query_one("#title", Static).update(plain(job.failed_title))
        loading = self.query_one("#loading")
        loading.remove_children()
        loading.mount(Static(Text(f"{job.failed_head}\n{visible(message)}\n\nPress q to quit."), id="error",
                             markup=False))

    def stop_work(self) -> None:
        """Stop the app's own background work on quit (a running search)."""

    async def action_quit(self) -> None:  # async as App's is (the signature it overrides)
        self.stop_work()
        self._load_control.cancel()
        self.exit(return_code=1 if self.load_error else 0)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """A real run (not ``run_test``): every exit from here on is sure to end the process."""
        self._sure_exit = True
        return super().run(*args, **kwargs)

    def exit(self, *args: Any, **kwargs: Any) -> None:
        super().exit(*args, **kwargs)
        self._sure_to_end()

    def panic(self, *renderables: Any) -> None:
        """Textual's way out of an error (the input thread's, when the terminal is gone)."""
        super().panic(*renderables)
        self._sure_to_end()

    def _sure_to_end(self) -> None:
        # A worker blocked on the stopped loop would keep the process alive for good (and deaf
        # to SIGTERM): end it, with its child processes, after a grace period.
        # Only for a run in a terminal, or one ended by a signal: a headless run inside another
        # program (pytest-textual-snapshot's) must never have its process ended for it.
        app: Any = self
        real = getattr(self, "_sure_exit", False) and (not app.is_headless or self._signalled)
        if real and self._exit_timer is None:
            self._exit_timer = hard_exit_after(EXIT_GRACE_S, lambda: 1 if app.return_code is None else app.return_code)

    def exit_on_signals(self) -> None:
        """SIGTERM / SIGHUP stop the app as ``terminate`` says (call from on_mount)."""
        exit_on_signals(self.terminate)

    def terminate(self, signum: int) -> None:
        """SIGTERM / SIGHUP (the terminal closed): stop a load in progress (the loader removes its
        temp files), stop searches, and exit; the process ends within EXIT_GRACE_S whatever hangs."""
        self._signalled = True
        self.stop_work()
        self._load_control.stop()
        self.exit(return_code=128 + signum)
