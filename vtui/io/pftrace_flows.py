"""Flows of a Perfetto trace: the ``flow_ids`` / ``terminating_flow_ids`` of its events, joined as
Perfetto's FlowTracker joins them once its sorter has put the events in time order.

A flow id seen on an event continues the flow of that id if one is open (an edge from the slice
that last carried it) and leaves it open from this slice; a terminating id ends it there. Each
edge is handed to the store as a bind id of its own (one ``flow_out`` and one ``flow_in``), so the
store's v2 binding, which keeps a flow open for later consumers, draws exactly these edges.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Cell = list[int]  # the row of the slice an event's flows belong to, set when the slice is handed out


class FlowSteps:
    def __init__(self) -> None:
        self._steps: list[tuple[int, int, Cell, tuple[int, ...], tuple[int, ...]]] = []
        self._bound: list[tuple[Cell, Any, bool, bool]] = []  # legacy bind ids: the store pairs them

    def add(self, ts: int, cell: Cell, ids: tuple[int, ...], terminating: tuple[int, ...]) -> None:
        if ids or terminating:
            self._steps.append((ts, len(self._steps), cell, ids, terminating))

    def bind(self, cell: Cell, key: Any, flow_in: bool, flow_out: bool) -> None:
        """A legacy ``bind_id`` (flow direction in / out), as a Chrome trace's v2 binding."""
        self._bound.append((cell, key, flow_in, flow_out))

    def resolve(self, edges_of: Callable[[list], list[tuple[int, Any, bool, bool]]] | None = None
                ) -> list[tuple[int, Any, bool, bool]]:
        """(row, bind key, flow_in, flow_out) for the store, every step's slice handed out.
        ``edges_of``: the C helper's join of the sorted steps (this loop is its reference)."""
        self._steps.sort()  # by (ts, n): n is unique, so the cells and ids are never compared
        out = edges_of(self._steps) if edges_of is not None else self._edges()
        out += [(cell[0], key, fin, fout) for cell, key, fin, fout in self._bound if cell[0] >= 0]
        return out

    def _edges(self) -> list[tuple[int, Any, bool, bool]]:
        active: dict[int, int] = {}
        edges: list[tuple[int, int]] = []
        for _ts, _n, cell, ids, terminating in self._steps:
            row = cell[0]
            if row < 0:
                continue
            for ident in ids:
                source = active.get(ident)
                if source is not None and source != row:
                    edges.append((source, row))
                active[ident] = row
            for ident in terminating:
                source = active.pop(ident, None)
                if source is not None and source != row:
                    edges.append((source, row))
        out: list[tuple[int, Any, bool, bool]] = []
        for k, (a, b) in enumerate(edges):
            out.append((a, ("flow", k), False, True))
            out.append((b, ("flow", k), True, False))
        return out
