"""Modal screens: help (every key), load warnings, go-to-time, and the track filter prompt."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from vtui.analysis.health.items import Example
from vtui.store.store import TraceStore
from vtui.ui.colours import PRIMARY
from vtui.ui.keys import bindings
from vtui.ui.screens.computed import ComputedScreen, Jump
from vtui.ui.trace_text import visible


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


class WarningsScreen(ModalScreen[Jump | None], ComputedScreen[Jump | None]):  # modal first: its styles come down
    """What the loader skipped or repaired, one line per warning (each with its count), and the
    trace's health (what in it cannot be trusted), computed in a worker as the screen opens; ``enter``
    on a health example closes the screen and sends the timeline to it."""

    BINDINGS = bindings("warnings")
    COMPUTING = "trace health: computing…"

    def __init__(self, warnings: list[str], store: TraceStore | None = None) -> None:
        super().__init__()
        self.warnings = warnings
        self.store = store
        self.examples: dict[str, Example] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="warnings-box"):
            with VerticalScroll(id="warnings-scroll"):
                yield Static(Text(f"{len(self.warnings)} load warnings  (esc closes)\n", style="bold"))
                # Text, not markup: warnings quote names and phases straight from the file.
                yield Static(Text("\n".join(f"- {visible(w)}" for w in self.warnings) or "no warnings"),
                             id="warnings-text")
            if self.store is not None:
                yield OptionList(Option(Text(self.COMPUTING), disabled=True), id="health-list")

    def start(self) -> None:
        if self.store is not None:  # without a store: the warnings alone
            super().start()

    def compute(self) -> list[tuple[str, Example | None]]:
        from vtui.analysis.health.report import analyse_health
        from vtui.present.health_json import health_rows

        assert self.store is not None
        return health_rows(analyse_health(self.store))

    def failure(self, exc: BaseException) -> str:
        return f"trace health could not be computed ({type(exc).__name__})"

    def show_error(self, message: str) -> None:
        self.show([(message, None)])  # a line of the health section, as a finding would be

    def show(self, rows: list[tuple[str, Example | None]]) -> None:
        listing = self.query_one("#health-list", OptionList)
        listing.clear_options()
        self.examples = {}
        options = []
        for k, (line, example) in enumerate(rows):
            if example is None:
                options.append(Option(Text(visible(line)), disabled=True))
            else:
                self.examples[f"ex{k}"] = example
                options.append(Option(Text(visible(line) + "  ↵"), id=f"ex{k}"))
        listing.add_options(options)
        if self.examples:
            listing.focus()
            listing.highlighted = next(i for i, o in enumerate(options) if not o.disabled)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        example = self.examples.get(event.option.id or "")
        if example is None:
            return
        if example.row >= 0:
            self.dismiss(Jump(example.row))
        else:  # not one slice: the time, with a little around it
            self.dismiss(Jump(-1, (example.t_ns, example.t_ns)))


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
