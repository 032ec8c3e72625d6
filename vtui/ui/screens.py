"""Modal screens: help (every key), load warnings, go-to-time, and the track filter prompt."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from vtui.ui.safe import visible


class HelpScreen(ModalScreen[None]):
    """Keys by section, for the screen it was opened on; scrolls where it does not fit (80×24)."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 78; max-width: 100%; height: auto; max-height: 100%;
                                  border: round #61afef; background: #20232a; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help.close")]
    KEY_WIDTH = 15

    def __init__(self, sections: list[tuple[str, list[tuple[str, str]]]], title: str = "vtui keys") -> None:
        super().__init__()
        self.sections = sections
        self.title_text = title

    def compose(self) -> ComposeResult:
        text = Text()
        for n, (name, rows) in enumerate(self.sections):
            text.append(("\n" if n else "") + name + "\n", style="bold #61afef")
            for keys, desc in rows:
                text.append(f"{keys:<{self.KEY_WIDTH}}", style="bold")
                text.append(f" {desc}\n")
        text.rstrip()
        with VerticalScroll(id="help-scroll"):
            yield Static(Text(f"{self.title_text}  (esc closes, ↑ ↓ PgUp PgDn scroll)", style="bold"))
            yield Static(text, id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()  # arrows and page keys scroll it


class WarningsScreen(ModalScreen[None]):
    """What the loader skipped or repaired, one line per warning (each with its count)."""

    DEFAULT_CSS = """
    WarningsScreen { align: center middle; }
    WarningsScreen > VerticalScroll { width: 90%; height: auto; max-height: 80%; border: round #6c7080; background: #20232a; padding: 1 2; }
    """
    BINDINGS = [Binding("escape,q,W", "dismiss", "Close", id="warnings.close")]

    def __init__(self, warnings: list[str]) -> None:
        super().__init__()
        self.warnings = warnings

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(f"{len(self.warnings)} load warnings  (esc closes)\n", style="bold"))
            # Text, not markup: warnings quote names and phases straight from the file.
            yield Static(Text("\n".join(f"- {visible(w)}" for w in self.warnings) or "no warnings"), id="warnings-text")


class PromptScreen(ModalScreen[str | None]):
    """One line of input; returns the text, or None on escape."""

    DEFAULT_CSS = """
    PromptScreen { align: center top; }
    PromptScreen > Vertical { width: 64; height: auto; margin-top: 3; border: round #6c7080; background: #20232a; padding: 0 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

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
