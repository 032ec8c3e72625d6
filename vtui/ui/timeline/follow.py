"""How a widget follows the part of the view it draws: the timeline pane around it
(``vtui.ui.timeline.pane``) holds the view's window, selection and track layout in reactives, each
replaced when it changes, and the widget watches the ones it draws."""

from __future__ import annotations

from collections.abc import Callable

from textual.css.query import NoMatches
from textual.widget import Widget

VALUES = ("window", "selection", "track_layout", "searching")


def follow(widget: Widget, value: str, callback: Callable[..., object]) -> None:
    """Call ``callback`` (with no argument, the new value, or the old and the new, as Textual's
    watchers) after every change of ``value`` (one of ``VALUES``) of the pane around ``widget``;
    call from its ``on_mount``. A widget outside a pane has nothing to follow."""
    if value not in VALUES:
        raise ValueError(f"a timeline pane holds {', '.join(VALUES)}, not {value!r}")
    try:
        pane = widget.query_ancestor("TimelinePane")  # by name: the pane module imports the widgets
    except NoMatches:
        return
    widget.watch(pane, value, callback, init=False)
