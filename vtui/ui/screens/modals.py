"""Modal screens: help (every key), load warnings, go-to-time, and the track filter prompt."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from vtui.store.store import TraceStore
from vtui.ui.colours import PRIMARY
from vtui.ui.keys import bindings
from vtui.ui.safe import visible
from vtui.ui.screens.computed import ComputedScreen


class HelpScreen(ModalScreen[None]):
    """Keys by section, for the screen it was opened on; scrolls where it does not fit (80×24)."""

    BINDINGS = bindings("help")
    KEY_WIDTH = 15

    def __init__(self, sections: list[tuple[str, list[tuple[str, str]]]], title: str = "vtui keys") -> None:
        super().__init__()
        self.sections = sections
        self.title_text = title

    def compose(self) -> ComposeResult:
        text = Text()
        for n, (name, rows) in enumerate(self.sections):
            text.append(("\n" if n else "") + name + "\n", style=f"bold {PRIMARY}")
            for keys, desc in rows:
                text.append(f"{keys:<{self.KEY_WIDTH}}", style="bold")
                text.append(f" {desc}\n")
        text.rstrip()
        with VerticalScroll(id="help-scroll"):
            yield Static(Text(f"{self.title_text}  (esc closes, ↑ ↓ PgUp PgDn scroll)", style="bold"))
            yield Static(text, id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()  # arrows and page keys scroll it


class WarningsScreen(ModalScreen[None], ComputedScreen[None]):  # modal first: its styles come down the first base
    """What the loader skipped or repaired, one line per warning (each with its count), and the
    trace's health (what in it cannot be trusted), computed in a worker as the screen opens."""

    BINDINGS = bindings("warnings")
    COMPUTING = "\ntrace health: computing…"

    def __init__(self, warnings: list[str], store: TraceStore | None = None) -> None:
        super().__init__()
        self.warnings = warnings
        self.store = store

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(f"{len(self.warnings)} load warnings  (esc closes)\n", style="bold"))
            # Text, not markup: warnings quote names and phases straight from the file.
            yield Static(Text("\n".join(f"- {visible(w)}" for w in self.warnings) or "no warnings"), id="warnings-text")
            if self.store is not None:
                yield Static(Text(self.COMPUTING), id="health-text")

    def start(self) -> None:
        if self.store is not None:  # without a store: the warnings alone
            super().start()

    def compute(self) -> list[str]:
        from vtui.analysis.health.report import analyse_health
        from vtui.present.health_json import health_lines

        assert self.store is not None
        return health_lines(analyse_health(self.store))

    def failure(self, exc: BaseException) -> str:
        return f"trace health could not be computed ({type(exc).__name__})"

    def show_error(self, message: str) -> None:
        self.show([message])  # a line of the health section, as a finding would be

    def show(self, lines: list[str]) -> None:
        self.query_one("#health-text", Static).update(Text("\n" + "\n".join(visible(line) for line in lines)))


class PromptScreen(ModalScreen[str | None]):
    """One line of input; returns the text, or None on escape."""

    BINDINGS = bindings("prompt")

    def __init__(self, title: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.title_text, markup=False)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
