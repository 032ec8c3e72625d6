"""Modal screens: help (every key), load warnings, go-to-time, and the track filter prompt."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 72; height: auto; max-height: 90%; border: round #6c7080; background: #20232a; padding: 1 2; }
    """
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help.close")]

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        text = "\n".join(f"[b]{keys:<18}[/b] {desc}" for keys, desc in self.rows)
        with Vertical():
            yield Static("[b]vtui keys[/b]  (esc closes)\n")
            yield Static(text, id="help-text")


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
            yield Static(Text("\n".join(f"- {w}" for w in self.warnings) or "no warnings"), id="warnings-text")


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
            yield Static(self.title_text)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
