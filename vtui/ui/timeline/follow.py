"""How a widget follows the view it draws: the timeline pane around it (``vtui.ui.timeline.pane``)
bumps its reactive ``version`` on every change of the view, and the widget watches it."""

from __future__ import annotations

from collections.abc import Callable

from textual.css.query import NoMatches
from textual.widget import Widget


def follow_view(widget: Widget, callback: Callable[[], object]) -> None:
    """Call ``callback`` after every change of the view of the pane around ``widget`` (call from
    its ``on_mount``). A widget outside a pane has nothing to follow."""
    try:
        pane = widget.query_ancestor("TimelinePane")  # by name: the pane module imports the widgets
    except NoMatches:
        return
    widget.watch(pane, "version", lambda: callback(), init=False)
