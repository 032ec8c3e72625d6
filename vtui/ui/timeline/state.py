"""The three values a timeline's view is made of, each replaced whole on a change, never edited:
``Window`` (what time is shown, the range and its undo, the time axis), ``Selection`` (the
selected slice, the measure marks, the search matches and highlight) and ``TrackLayout`` (which
tracks are shown, in what order, folded how, and the rows that follows from it).

A new value for every change lets whoever draws one of them tell a change by identity: the pane
holds each in a reactive, and a widget watching the window is not woken by a selection move.
They compare by identity (``eq=False``): a highlight is an array, and rows are compared by what
built them, never element by element. Plain Python, no Textual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType, NoneType
from typing import Any, Generic, TypeVar

import numpy as np

from vtui.analysis.slices.measure import Measurement
from vtui.analysis.slices.search import SearchResult
from vtui.ui.timeline.rows import RowList


def _no_names() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True, eq=False)
class Window:
    t0: int = 0
    t1: int = 1
    range: tuple[int, int] | None = None  # selected time range (ns from the trace start)
    history: tuple[tuple[int, int] | None, ...] = ()  # the ranges before each change, for undo (u)
    origin: tuple[int, str] | None = None  # relative time axis: (zero in ns from the trace start, what it is)


@dataclass(frozen=True, eq=False)
class Selection:
    selected: int = -1  # slice row
    mark_a: int = -1  # slice row marked as A, waiting for B
    measurements: tuple[Measurement, ...] = ()  # kept in (A span, B span) order
    mark_names: Mapping[tuple, tuple[str, str]] = field(default_factory=_no_names)  # (a span, b span) -> the names of A and B
    found: SearchResult | None = None
    match: int = -1  # index into found.rows of the current match
    highlight: np.ndarray | None = None  # bool per slice: search matches or an aggregation row's slices
    highlight_version: int = 0  # one more on every highlight change (the row cache's key)
    links_paired: bool = False  # the launches were paired when the selection's flows were last read


@dataclass(frozen=True, eq=False)
class TrackLayout:
    filter_text: str = ""
    hidden: frozenset[int] = frozenset()
    pinned: tuple[int, ...] = ()  # in pin order
    folded: frozenset[tuple] = frozenset()  # group keys shown as their header row alone
    expanded: frozenset[int] = frozenset()  # tracks shown with every lane
    # False: no memory rows yet (the app's first frame skips their pass over every [memory] event's
    # args; show_memory_rows adds them right after it)
    memory_rows: bool = True
    memory_failed: bool = False  # building the series raised: no memory rows (the app said why)
    rows: RowList = field(default_factory=RowList.empty)  # built from the fields above
    group_sizes: Mapping[tuple, int] = field(default_factory=_no_names)  # group key -> visible tracks


_PLAIN = (int, float, str, bool, tuple, frozenset, NoneType)
V = TypeVar("V", Window, Selection, TrackLayout)


def changed(value: V, **fields: Any) -> V:
    """``value`` with ``fields`` replaced; ``value`` itself when every field is already so (no
    change, no new value, nobody redraws). Arrays, rows and mappings count as new unless the same object."""
    same = all(getattr(value, k) is v or (isinstance(v, _PLAIN) and type(getattr(value, k)) is type(v)
                                           and getattr(value, k) == v) for k, v in fields.items())
    return value if same else replace(value, **fields)


T = TypeVar("T")


class Held(Generic[T]):
    """An attribute of the view kept in one of its values: read from it; set by replacing the value."""

    def __init__(self, value: str) -> None:
        self.value = value  # the view's attribute holding the value: "window", "selection", "layout"
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> T:
        if obj is None:  # on the class: the descriptor itself
            return self  # type: ignore[return-value]
        return getattr(getattr(obj, self.value), self.name)

    def __set__(self, obj: Any, new: T) -> None:
        setattr(obj, self.value, changed(getattr(obj, self.value), **{self.name: new}))
