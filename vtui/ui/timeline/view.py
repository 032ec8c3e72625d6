"""View state of the explorer: window, rows, filter, selection and how keys move them.

Plain Python over the store, no Textual, so behaviour is testable without an app.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import numpy as np

from vtui.analysis.base.launched import launch_of_if_known
from vtui.analysis.gpu.memory_tracks import memory_series_tracks, series_of_track
from vtui.analysis.slices.details import flow_links
from vtui.analysis.slices.measure import Measurement, measure
from vtui.analysis.slices.search import ARGS_PREFIX, SearchResult, search, step
from vtui.errors import UsageError
from vtui.regex_guard import UserRegex, compile_user, smart_ignore_case
from vtui.store.grouping import group_key
from vtui.store.slicetime import TimeRange, time_range
from vtui.store.store import TraceStore
from vtui.store.tracks import GLOBAL, Track
from vtui.store.tracktable import KIND_CODE
from vtui.ui.timeline.rows import (  # noqa: F401 (HEADER, SERIES, PENDING: the widgets import them here)
    HEADER,
    PENDING,
    SERIES,
    Row,
    RowList,
    build_rows,
)
from vtui.ui.timeline.state import Held, Selection, TrackLayout, Window, changed

SEARCH_LIMIT_S = 10.0  # the app's search gives up after this (a trace's args can be gigabytes)
MIN_SPAN_NS = 100  # deepest zoom: 100 ns across the timeline
LANE_CAP = 12  # rows a deep (Python-stack) track gets until expanded: the GPU streams stay in sight
PINNED: tuple = ("pinned",)  # the group key of the pinned tracks
RANGE_UNDO = 50  # range changes u can take back
FILTER_FORM = "{process} {title} {kind}"  # the text of a track the filter `t` matches


def smart_case(query: str) -> bool:
    """Any case unless the pattern (after ``args:``) has a capital (``aten::mm`` finds ``ATen::MM``)."""
    return smart_ignore_case(query[len(ARGS_PREFIX):] if query.startswith(ARGS_PREFIX) else query)


class ViewState:
    """One trace's view: its ``window``, ``selection`` and ``layout`` values (vtui.ui.timeline.state),
    each replaced by the moves below, never edited; their fields read (and set) here by name."""

    t0: Held[int] = Held("window")
    t1: Held[int] = Held("window")
    range: Held[tuple[int, int] | None] = Held("window")
    origin: Held[tuple[int, str] | None] = Held("window")
    selected: Held[int] = Held("selection")
    mark_a: Held[int] = Held("selection")
    measurements: Held[tuple[Measurement, ...]] = Held("selection")
    mark_names: Held[Mapping[tuple, tuple[str, str]]] = Held("selection")
    found: Held[SearchResult | None] = Held("selection")
    match: Held[int] = Held("selection")
    highlight: Held[np.ndarray | None] = Held("selection")
    highlight_version: Held[int] = Held("selection")
    filter_text: Held[str] = Held("layout")
    hidden: Held[frozenset[int]] = Held("layout")
    pinned: Held[tuple[int, ...]] = Held("layout")
    folded: Held[frozenset[tuple]] = Held("layout")
    expanded: Held[frozenset[int]] = Held("layout")
    memory_rows: Held[bool] = Held("layout")
    memory_failed: Held[bool] = Held("layout")
    rows: Held[RowList] = Held("layout")

    def __init__(self, store: TraceStore, scale_ns: int = 0, memory_rows: bool = True, lane_cap: int = LANE_CAP) -> None:
        self.store = store
        self.lane_cap = lane_cap
        self.scale_ns = scale_ns  # the widest window when above the trace's span (compare mode: one scale for both traces)
        self.cells = 100  # plot width in cells (the pane sets it from its timeline): what "narrower than a cell" means
        self.window = Window()
        self.selection = Selection()
        self.layout = TrackLayout(memory_rows=memory_rows)
        self._filter_compiled: tuple = ("", None)  # (filter text, its guarded regex)
        # The selection's links, kept while the selection and the launch pairing stay: every pan or zoom
        # redraws the connectors, and finding the links is a pass over every flow and slice.
        self._links_cache: tuple = (-1, False, [])
        self.show_all()
        self.rebuild_rows()

    # ---- window -------------------------------------------------------------------
    @property
    def span(self) -> int:
        return self.t1 - self.t0

    @property
    def total(self) -> int:
        """How far the window may reach: the trace's span, or the common scale in compare mode."""
        return max(int(self.store.span_ns), self.scale_ns, MIN_SPAN_NS)

    def show_all(self) -> None:
        self.window = changed(self.window, t0=0, t1=self.total)

    def set_window(self, t0: float, t1: float, inside: bool = True) -> None:
        """The window, kept inside the trace: never before 0, never past the end.

        ``inside=False`` (compare mode's lock: the other trace follows at the same offsets) lets
        it reach before the start or past the end, where nothing is drawn."""
        span = min(max(t1 - t0, MIN_SPAN_NS), self.total)
        if inside:  # a window wider than the trace (compare mode's common scale) starts at 0
            t0 = min(max(t0, 0), max(int(self.store.span_ns) - span, 0))
        self.window = changed(self.window, t0=int(round(t0)), t1=int(round(t0 + span)))

    def zoom(self, factor: float, centre: float | None = None) -> None:
        """factor < 1 zooms in. Keeps ``centre`` (default: selection, else middle) in place."""
        if centre is None:
            centre = self._focus_time()
        rel = (centre - self.t0) / self.span if self.span else 0.5
        span = self.span * factor
        self.set_window(centre - rel * span, centre - rel * span + span)

    def pan(self, fraction: float) -> None:
        shift = self.span * fraction
        self.set_window(self.t0 + shift, self.t1 + shift)

    def frame_selection(self) -> None:
        if self.selected < 0:
            return
        s = self.store.slices
        a, b = int(s.start_ns[self.selected]), int(s.end_ns[self.selected])
        pad = max((b - a) * 0.1, MIN_SPAN_NS / 2)
        self.set_window(a - pad, b + pad)

    def go_to(self, t: int) -> None:
        half = self.span / 2
        self.set_window(t - half, t + half)

    def _focus_time(self) -> float:
        if self.selected >= 0:
            s = self.store.slices
            mid = (int(s.start_ns[self.selected]) + int(s.end_ns[self.selected])) / 2
            if self.t0 <= mid <= self.t1:
                return mid
        return (self.t0 + self.t1) / 2

    # ---- tracks and rows ---------------------------------------------------------------
    def _filter_regex(self) -> UserRegex | None:
        """The track filter in the guarded engine (compiled once per filter text); None: not a valid regex."""
        if self._filter_compiled[0] != self.filter_text:
            try:
                rx: UserRegex | None = compile_user(self.filter_text, ignore_case=True)
            except UsageError:
                rx = None
            self._filter_compiled = (self.filter_text, rx)
        return self._filter_compiled[1]

    def matches(self, track: Track) -> bool:
        if not self.filter_text:
            return True
        hay = FILTER_FORM.format(process=track.process_title, title=track.title, kind=track.kind)
        rx = self._filter_regex()
        return rx.search(hay) if rx is not None else self.filter_text.lower() in hay.lower()

    def visible_tracks(self) -> list[Track]:
        return [self.store.tracks[i] for i in self._visible_ids().tolist()]

    def _visible_ids(self) -> np.ndarray:
        """Ids of the tracks shown: not hidden, let through by the filter; the pinned first, in pin order."""
        n = len(self.store.tracks)
        keep = np.ones(n, dtype=bool)
        keep[[i for i in self.hidden if 0 <= i < n]] = False
        if self.filter_text:  # the filter reads each distinct text once; numpy maps it back to the tracks
            code, texts = self.store.tracks.texts(FILTER_FORM)
            rx = self._filter_regex()
            if rx is not None:
                hit = rx.mask(texts)
            else:
                needle = self.filter_text.lower()
                hit = np.fromiter((needle in t.lower() for t in texts), dtype=bool, count=len(texts))
            keep &= hit[code]
        ids = np.flatnonzero(keep)
        pins = [p for p in self.pinned if 0 <= p < n and keep[p]]
        return np.concatenate([np.array(pins, dtype=np.int64), ids[~np.isin(ids, pins)]]) if pins else ids

    def _grouped(self) -> tuple[np.ndarray, np.ndarray, list[tuple]]:
        """The visible tracks in row order, each one's group (an index into the keys) and the keys:
        the pinned first, then each process in order of its first track. A process's title is made
        once per distinct (source, pid, file label, names, global), never per track."""
        ids = self._visible_ids()
        c = self.store.tracks.columns
        keys: list[tuple] = []
        group = np.zeros(len(ids), dtype=np.int64)
        pinned = np.isin(ids, self.pinned)
        if pinned.any():
            keys.append(PINNED)
        rest = ids[~pinned]
        if len(rest):
            combo = group_key(c["source"][rest], c["pid"][rest], c["group"][rest], c["process_name"][rest],
                              c["process_label"][rest], (c["kind"][rest] == KIND_CODE[GLOBAL]).astype(np.int64))
            _, first, inverse = np.unique(combo, return_index=True, return_inverse=True)
            index = {key: i for i, key in enumerate(keys)}
            of_combo = np.empty(len(first), dtype=np.int64)
            for u in np.argsort(first, kind="stable").tolist():  # in order of first appearance
                t = self.store.tracks[int(rest[first[u]])]
                key = ("process", t.source, t.process_title)
                if key not in index:
                    index[key] = len(keys)
                    keys.append(key)
                of_combo[u] = index[key]
            group[~pinned] = of_combo[inverse.reshape(-1)]
        order = np.argsort(group, kind="stable")
        return ids[order], group[order], keys

    def groups(self) -> list[tuple[tuple, list[Track]]]:
        """Visible tracks by group: the pinned ones first, then each process in track order."""
        ids, group, keys = self._grouped()
        bounds = np.searchsorted(group, np.arange(len(keys) + 1))
        return [(key, [self.store.tracks[i] for i in ids[bounds[j]:bounds[j + 1]].tolist()]) for j, key in enumerate(keys)]

    def group_size(self, key: tuple) -> int:
        """How many visible tracks the group ``key`` holds (as of the last rebuild of the rows)."""
        return self.layout.group_sizes.get(key, 0)

    def group_of(self, track: int) -> tuple:
        t = self.store.tracks[track]
        return PINNED if track in self.pinned else ("process", t.source, t.process_title)

    def group_title(self, key: tuple) -> str:
        """A group's header text (trace text: escape before drawing)."""
        return "pinned" if key == PINNED else key[2]

    def hidden_tracks(self) -> list[Track]:
        """Hidden tracks the filter lets through: the track list offers them below the rows."""
        return [self.store.tracks[i] for i in sorted(self.hidden) if self.matches(self.store.tracks[i])]

    def line_count(self) -> int:
        """Rows, then (with hidden tracks) a "hidden" heading and one line per hidden track."""
        hidden = len(self.hidden_tracks()) if self.hidden else 0
        return len(self.rows) + (hidden + 1 if hidden else 0)

    def toggle_folded(self, key: tuple) -> None:
        self.rebuild_rows(folded=self.folded ^ {key})

    def rebuild_rows(self, **fields: Any) -> None:
        """A new layout: ``fields`` (filter_text, hidden, pinned, folded, expanded, memory_*) changed,
        and the rows built from them."""
        self.layout = replace(self.layout, **fields)
        ids, group, keys = self._grouped()
        sizes = dict(zip(keys, np.bincount(group, minlength=len(keys)).tolist()))
        rows = build_rows(self.store, ids, group, keys, self.folded, self.expanded, self.lane_cap, self._series_of)
        self.layout = replace(self.layout, rows=rows, group_sizes=MappingProxyType(sizes))

    def set_filter(self, text: str) -> None:
        """The track filter ``t`` (a regex, else a substring); the rows follow."""
        if text != self.filter_text:
            self.rebuild_rows(filter_text=text)

    def _series_of(self, track: int) -> list[int]:
        """The memory series drawn below ``track``; until they are built, one PENDING row where
        they will be (the first frame says "computing…" rather than adding rows later unannounced)."""
        if self.memory_rows:
            return [] if self.memory_failed else series_of_track(self.store, track)
        return [PENDING] if track in memory_series_tracks(self.store) else []

    def show_memory_rows(self) -> bool:
        """Add the memory rows held back for the first frame; True when the rows changed."""
        if self.memory_rows:
            return False
        before = len(self.rows)
        self.rebuild_rows(memory_rows=True)
        return len(self.rows) != before

    def toggle_hidden(self, track: int) -> None:
        self.rebuild_rows(hidden=self.hidden ^ {track})

    def is_collapsed(self, track: int) -> bool:
        return track not in self.expanded and self.store.tracks[track].lanes > self.lane_cap + 1

    def toggle_expanded(self, track: int) -> None:
        self.rebuild_rows(expanded=self.expanded ^ {track})

    def toggle_pinned(self, track: int) -> None:
        pins = self.pinned
        self.rebuild_rows(pinned=tuple(p for p in pins if p != track) if track in pins else (*pins, track))

    def row_of_selection(self) -> int:
        if self.selected < 0:
            return -1
        s = self.store.slices
        track, lane = int(s.track[self.selected]), int(s.lane[self.selected])
        return self.rows.find(track, lane)

    # ---- selection moves -----------------------------------------------------------------
    def select(self, row: int) -> None:
        self.selected = row
        if row >= 0:
            s = self.store.slices
            track = int(s.track[row])
            if self.group_of(track) in self.folded:  # a slice in a folded process unfolds it
                self.toggle_folded(self.group_of(track))
            if s.lane[row] >= self.lane_cap and self.is_collapsed(track):  # a slice in folded lanes unfolds them
                self.toggle_expanded(track)
            a, b = int(s.start_ns[row]), int(s.end_ns[row])
            if b < self.t0 or a > self.t1:  # bring it into view, keeping the zoom
                self.go_to((a + b) // 2)

    def reveal(self, row: int) -> None:
        """Select ``row`` and bring it into view: zoom in when it is narrower than a cell (so it
        is not one cell among its neighbours), pan when it is off screen."""
        self.select(row)
        s = self.store.slices
        a, b = int(s.start_ns[row]), int(s.end_ns[row])
        if b - a < self.span / max(self.cells, 1):
            span = max((b - a) * 3, MIN_SPAN_NS)
            mid = (a + b) / 2
            self.set_window(mid - span / 2, mid + span / 2)
        elif (a < self.t0 or b > self.t1) and b - a <= self.span:
            self.go_to((a + b) // 2)
        elif a < self.t0 or b > self.t1:  # wider than the window: frame it
            self.set_window(a - (b - a) * 0.1, b + (b - a) * 0.1)

    def select_first_visible(self) -> None:
        for r in self.rows:
            if r.lane < 0:
                continue
            lo, hi = self.store.index.lane_window(r.track, r.lane, self.t0, self.t1)
            if hi > lo:
                self.select(lo)
                return

    def step_on_lane(self, direction: int) -> None:
        """left/right: the previous/next slice on the same lane."""
        if self.selected < 0:
            self.select_first_visible()
            return
        s = self.store.slices
        a, b = self.store.index.lane_rows(int(s.track[self.selected]), int(s.lane[self.selected]))
        nxt = self.selected + direction
        if a <= nxt < b:
            self.select(nxt)

    def step_on_track(self, direction: int) -> None:
        """./, : the next/previous slice on the track by start time, any lane."""
        if self.selected < 0:
            self.select_first_visible()
            return
        s = self.store.slices
        track = int(s.track[self.selected])
        rows = np.arange(*self.store.index.track_rows(track))  # a track's rows are contiguous
        order = rows[np.lexsort((s.lane[rows], s.start_ns[rows]))]
        pos = int(np.flatnonzero(order == self.selected)[0]) + direction
        if 0 <= pos < len(order):
            self.select(int(order[pos]))

    def to_parent(self) -> bool:
        if self.selected >= 0 and self.store.slices.parent[self.selected] >= 0:
            self.select(int(self.store.slices.parent[self.selected]))
            return True
        return False

    def to_child(self) -> bool:
        if self.selected < 0:
            return False
        s = self.store.slices
        # Children lie inside the parent's span, but a partly overlapping child (or a child of
        # a slice on an extra lane) may be drawn on any lane: search the track's window.
        rows = self.store.index.query(int(s.track[self.selected]), int(s.start_ns[self.selected]),
                                      int(s.end_ns[self.selected]))
        kids = rows[s.parent[rows] == self.selected]
        if len(kids):
            self.select(int(kids[np.lexsort((kids, s.start_ns[kids]))[0]]))  # the earliest child
            return True
        return False

    def to_next_track(self, direction: int) -> None:
        """Move to the nearest slice on the next visible row with slices."""
        here = self.row_of_selection()
        mid = self._focus_time()
        i = here + direction
        while 0 <= i < len(self.rows):
            r = self.rows[i]
            if r.lane >= 0:
                lo, hi = self.store.index.lane_window(r.track, r.lane, self.t0, self.t1)
                if hi > lo:
                    s = self.store.slices
                    k = lo + int(np.argmin(np.abs((s.start_ns[lo:hi] + s.end_ns[lo:hi]) / 2 - mid)))
                    self.select(k)
                    return
            i += direction

    def follow_flow(self, outgoing: bool) -> bool:
        """]: to where the selected slice's flow goes; [: to where its incoming flow came from. Where
        no flow event joins a launch and its GPU work, their shared correlation id does."""
        if self.selected < 0:
            return False
        want = "out" if outgoing else "in"
        hits = [link.slice_row for link in flow_links(self.store, self.selected) if link.direction == want]
        if not hits:
            return False
        target = hits[0]
        self.unhide_track_of(target)
        self.reveal(target)
        return True

    def flow_links(self) -> list[tuple[int, int, int]]:
        """The selected slice's flows (launch → kernel, and back; a launch paired by correlation
        where no flow event says it) as (time ns, from row, to row) in the rows shown: drawn as a
        connector at that time from one row to the other. Ends on rows not shown (hidden, folded)
        are left out."""
        if self.selected < 0:
            return []
        s = self.store.slices
        find = self.rows.find
        out = []
        here = self.selected
        paired = launch_of_if_known(self.store) is not None
        if self._links_cache[:2] != (here, paired):
            # A redraw: pairing is a worker's. A slice with many flows: the first few are enough to follow.
            self._links_cache = (here, paired, flow_links(self.store, here, pair=False)[:16])
        for link in self._links_cache[2]:
            a, b = (link.slice_row, here) if link.direction == "in" else (here, link.slice_row)
            ra, rb = find(int(s.track[a]), int(s.lane[a])), find(int(s.track[b]), int(s.lane[b]))
            if ra >= 0 and rb >= 0 and ra != rb:
                out.append((int(s.start_ns[b]), ra, rb))
        return out

    def note_pairing(self) -> None:
        """The launches were paired with their GPU work (a worker's): the selection's flows may be more."""
        self.selection = changed(self.selection, links_paired=launch_of_if_known(self.store) is not None)

    def unhide_track_of(self, row: int) -> None:
        track = int(self.store.slices.track[row])
        if track in self.hidden:
            self.rebuild_rows(hidden=self.hidden - {track})

    # ---- range ------------------------------------------------------------------------
    def _selected_span(self) -> tuple[int, int] | None:
        if self.selected < 0:
            return None
        s = self.store.slices
        return int(s.start_ns[self.selected]), int(s.end_ns[self.selected])

    def set_range(self, t0: float, t1: float) -> None:
        a, b = sorted((int(round(t0)), int(round(t1))))
        a, b = max(a, 0), min(b, int(self.store.span_ns))
        self._change_range((a, b) if b > a else None)

    def _change_range(self, new: tuple[int, int] | None) -> None:
        """Every range change goes here: the one it replaces is kept for ``undo_range`` (u)."""
        if new != self.range:
            self.window = replace(self.window, range=new, history=(*self.window.history, self.range)[-RANGE_UNDO:])

    def undo_range(self) -> bool:
        """u: back to the range before the last change (a cleared one comes back). False when none."""
        history = self.window.history
        if not history:
            return False
        self.window = replace(self.window, range=history[-1], history=history[:-1])
        return True

    def range_from_selection(self) -> bool:
        span = self._selected_span()
        if span is None or span[1] <= span[0]:
            return False
        self.set_range(*span)
        return True

    def range_edge_at_selection(self, end: bool) -> bool:
        """shift+→ / shift+←: the range's end (start) at the selected slice's end (start)."""
        span = self._selected_span()
        if span is None:
            return False
        current = self.analysis_range()
        a, b = current.t0, current.t1
        if end:  # keep the start unless the new end comes before it: then the slice's own start
            self.set_range(a if a < span[1] else span[0], span[1])
        else:
            self.set_range(span[0], b if b > span[0] else span[1])
        return True

    def range_from_window(self) -> None:
        self.set_range(self.t0, self.t1)

    def analysis_range(self) -> TimeRange:
        """What tables and the call tree cover: the range, else the whole trace (the one range
        value the analyses take, built here at the app's edge)."""
        return time_range(self.store, *self.range) if self.range else time_range(self.store)

    def visible_track_ids(self) -> np.ndarray:
        return np.sort(self._visible_ids()).astype(np.int64)

    # ---- time axis ----------------------------------------------------------------------
    def toggle_origin(self) -> bool:
        """Times relative to the range's start, else the selected slice's start; again: from the
        trace start. False when there is nothing to count from."""
        if self.origin is not None:
            self.origin = None
        elif self.range is not None:
            self.origin = (self.range[0], "range start")
        elif self.selected >= 0:
            self.origin = (int(self.store.slices.start_ns[self.selected]), self.store.name(self.selected))
        else:
            return False
        return True

    @property
    def origin_ns(self) -> int:
        """What shown times subtract: 0 on the absolute axis."""
        return self.origin[0] if self.origin is not None else 0

    # ---- highlight and search ------------------------------------------------------------
    def set_highlight(self, rows: np.ndarray | None) -> None:
        if rows is None:
            mask = None
        else:
            mask = np.zeros(len(self.store.slices), dtype=bool)
            mask[rows] = True
        self.selection = replace(self.selection, highlight=mask, highlight_version=self.highlight_version + 1)

    def run_search(self, query: str) -> SearchResult:
        """Search the visible tracks (names, or args with "args:"); highlights the matches. UsageError on a bad regex."""
        found = search(self.store, query, tracks=self.visible_track_ids(), ignore_case=smart_case(query))
        self.set_found(replace(found, pattern=query))
        return found

    def set_found(self, found: SearchResult) -> None:
        self.selection = replace(self.selection, found=found, match=-1)
        self.set_highlight(found.rows)

    def next_match(self, forward: bool = True) -> bool:
        if self.found is None or not self.found.count:
            return False
        s = self.store.slices
        if self.selected >= 0 and 0 <= self.match < self.found.count and self.found.rows[self.match] == self.selected:
            self.match = (self.match + (1 if forward else -1)) % self.found.count
        else:
            here = int(s.start_ns[self.selected]) if self.selected >= 0 else self.t0 - 1
            self.match = step(self.found, self.store, here, forward) or 0
        row = int(self.found.rows[self.match])
        self.unhide_track_of(row)
        self.reveal(row)
        return True

    def clear(self) -> bool:
        """esc: drop the pending mark, else the highlight/search, else the range. False when nothing was set."""
        if self.mark_a >= 0:
            self.mark_a = -1
        elif self.highlight is not None or self.found is not None:
            self.selection = replace(self.selection, found=None, match=-1)
            self.set_highlight(None)
        elif self.range is not None:
            self._change_range(None)  # u brings it back
        else:
            return False
        return True

    # ---- measure ---------------------------------------------------------------------------
    def mark(self) -> Measurement | None:
        """m: the first press marks A, the second marks B and keeps the measurement."""
        if self.selected < 0:
            return None
        if self.mark_a < 0:
            self.mark_a = self.selected
            return None
        s = self.store.slices
        a, b = self.mark_a, self.selected
        self.mark_a = -1
        result = measure(self.store, (int(s.start_ns[a]), int(s.end_ns[a])), (int(s.start_ns[b]), int(s.end_ns[b])),
                         self.visible_track_ids())
        kept = sorted((*self.measurements, result), key=lambda m: (m.a, m.b))
        # The pane names A and B: the measurement orders them by time, so pair names with spans.
        spans = {(int(s.start_ns[r]), int(s.end_ns[r])): self.store.name(r) for r in (b, a)}
        names = {**self.mark_names, (result.a, result.b): (spans.get(result.a, "?"), spans.get(result.b, "?"))}
        self.selection = replace(self.selection, measurements=tuple(kept), mark_names=MappingProxyType(names))
        return result

    def clear_measurements(self) -> None:
        """M: every measurement and a pending mark A."""
        self.selection = changed(self.selection, mark_a=-1, measurements=(), mark_names=MappingProxyType({}))
