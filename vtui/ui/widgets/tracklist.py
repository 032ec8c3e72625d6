"""The track list: processes with their tracks beneath, filterable; hide and pin tracks."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import Tree

from vtui.store.tracks import Track
from vtui.ui.keys import bindings
from vtui.ui.safe import plain, visible
from vtui.ui.view import ViewState

KIND_ICON = {"thread": "", "gpu": "GPU ", "async": "async ", "counter": "ctr ", "process": "", "global": ""}


class TrackList(Tree[int]):
    BINDINGS = bindings("tracks")

    class Changed(Message):
        """Visibility or pinning changed."""

    def __init__(self, view: ViewState, **kwargs) -> None:
        super().__init__("tracks", **kwargs)
        self.view = view
        self.show_root = False
        self.guide_depth = 2

    def on_mount(self) -> None:
        self.rebuild()

    def rebuild(self) -> None:
        self.clear()
        groups: dict[tuple, object] = {}
        for t in self.view.store.tracks:
            if not self.view.matches(t):
                continue
            key = (t.source, t.process_title)
            node = groups.get(key)
            if node is None:
                node = self.root.add(plain(t.process_title), expand=True)  # Text: names are data, not markup
                groups[key] = node
            node.add_leaf(self._label(t), data=t.id)
        self.root.expand()

    def _label(self, t: Track) -> Text:
        count = t.slice_count or t.instant_count or t.counter_count
        return Text.assemble(
            "📌" if t.id in self.view.pinned else "", ("(hidden) " if t.id in self.view.hidden else "", "dim"),
            KIND_ICON.get(t.kind, "") + visible(t.title) + " ", (_short(count), "dim"),
        )

    def action_toggle_track(self) -> None:
        self._change_current(self.view.toggle_hidden)

    def action_pin_track(self) -> None:
        self._change_current(self.view.toggle_pinned)

    def _change_current(self, change) -> None:
        """Apply ``change(track_id)`` to the track under the cursor and redraw its label."""
        node = self.cursor_node
        if node is None or node.data is None:
            return
        change(node.data)
        node.set_label(self._label(self.view.store.tracks[node.data]))
        self.post_message(self.Changed())


def _short(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 1000:
        return f"{n / 1e3:.0f}k"
    return str(n)
