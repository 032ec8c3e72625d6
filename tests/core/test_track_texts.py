"""Track texts from the columns (many tracks): ``vtui info``'s track lines, ``--track REGEX``
and the app's filter ``t`` read each distinct process title / row title / label once and map it back
with numpy. They must match what the simple path (one ``Track`` per row, its properties) gives, on the
fixtures and on generated traces of many odd threads (odd ids, GPU labels, control characters), and
they must make no ``Track`` object at all."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from tests.core.test_trackset_columns import _odd_threads
from tests.helpers import FIXTURES, MI250, QWEN, STACK, UNCLOSED
from vtui.analysis.base.ranges import tracks_matching
from vtui.errors import UsageError
from vtui.load.trace import load_trace
from vtui.present.report import TITLE_WIDTH, _track_lines, info_out
from vtui.regex_guard import compile_user
from vtui.safe_text import safe_field
from vtui.store.tracks import show_id
from vtui.store.tracktable import TrackTable
from vtui.ui.timeline.view import ViewState

PATTERNS = ["1", "GPU", "proc 2 / t[0-4]", "^wide", "thread", "(a+)+$", "stream", "[", "KERNEL", "\\x1b"]


def _odd_store(tmp_path, seed: int, threads: int):
    rng = random.Random(seed)
    events = _odd_threads(rng, threads)
    for k in range(0, threads, 97):  # hostile names: escapes and over-long titles, shown safely
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": k,
                       "args": {"name": "\x1b[31mred\u202e" if k % 2 else "n" * (TITLE_WIDTH + 5)}})
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return load_trace(path, cache=False)


def _stores(tmp_path):
    for path in (MI250, QWEN, STACK, UNCLOSED, FIXTURES / "ranks"):
        yield path.name, load_trace(path, cache=False)
    for seed, threads in ((0, 5_000), (1, 700)):
        yield f"odd{seed}", _odd_store(tmp_path, seed, threads)


def _simple_lines(tracks: list) -> list[str]:
    """The per-Track track lines ``vtui info`` printed before the columns."""
    width = max((len(safe_field(t.process_title, TITLE_WIDTH)) for t in tracks), default=0)
    lines = []
    for t in tracks:
        counts = f"{t.slice_count:>9,} slices"
        if t.instant_count:
            counts += f" {t.instant_count:,} instants"
        if t.counter_count:
            counts += f" {t.counter_count:,} samples"
        process, title = safe_field(t.process_title, TITLE_WIDTH), safe_field(t.title, TITLE_WIDTH)
        lines.append(f"  {t.kind:<8} {process:<{width}}  {title} (pid {safe_field(show_id(t.pid), 40)}, "
                     f"tid {safe_field(show_id(t.tid), 40)}) {counts}")
    return lines


def _simple_matching(tracks: list, pattern: str) -> list[int]:
    rx = compile_user(pattern)
    return [t.id for t in tracks if rx.search(t.label)]


def _rows_made(monkeypatch) -> list:
    """Records every Track the table makes (one row: its id; all at once: "all")."""
    made: list = []
    make, make_all = TrackTable._make, TrackTable._make_all
    monkeypatch.setattr(TrackTable, "_make", lambda self, k: made.append(k) or make(self, k))
    monkeypatch.setattr(TrackTable, "_make_all", lambda self: made.append("all") or make_all(self))
    return made


def test_texts_from_columns_are_the_simple_paths(tmp_path, monkeypatch):
    for name, store in _stores(tmp_path):
        rows = [store.tracks._make(k) for k in range(len(store.tracks))]  # the reference, one by one
        fresh = TrackTable(store.tracks.columns, store.tracks.ids, store.tracks.text)
        store.tracks = fresh
        with monkeypatch.context() as m:
            made = _rows_made(m)
            lines = _track_lines(store)
            listed = info_out(store).track_list
            matched = {p: _matching_or_none(store, p) for p in PATTERNS}
            assert made == [], name  # nothing walked the tracks as objects
            view = ViewState(store)
            shown = {}
            for p in PATTERNS:
                view.filter_text = p
                shown[p] = view._visible_ids().tolist()
            assert "all" not in made, name  # the view makes a row per process header at most
        assert lines == _simple_lines(rows), name
        assert [(d.process, d.name, d.pid, d.tid, d.slices) for d in listed] == [
            (t.process_title, t.title, t.pid if t.pid is None or isinstance(t.pid, (int, str)) else str(t.pid),
             t.tid if t.tid is None or isinstance(t.tid, (int, str)) else str(t.tid), t.slice_count) for t in rows], name
        for p in PATTERNS:
            simple = _simple_matching(rows, p) if p != "[" else None
            assert matched[p] == (simple or None), (name, p)
            view.filter_text = p
            assert shown[p] == [t.id for t in rows if view.matches(t) and t.id not in view.hidden], (name, p)
        if name.startswith("odd"):  # a filter that picks some, not all
            assert any(shown[p] and len(shown[p]) < len(rows) for p in PATTERNS), name


def _matching_or_none(store, pattern: str) -> list[int] | None:
    try:
        return tracks_matching(store, pattern).tolist()
    except UsageError:
        return None


@pytest.mark.parametrize("form", ["{process} / {title}", "{process} {title} {kind}"])
def test_texts_map_back_to_every_track(tmp_path, form):
    store = _odd_store(tmp_path, 2, 900)
    code, texts = store.tracks.texts(form)
    want = [form.format(process=t.process_title, title=t.title, kind=t.kind) for t in store.tracks]
    assert [texts[c] for c in code.tolist()] == want
    assert len(texts) == len(set(texts)) < len(want)  # each distinct text once
    assert code.dtype.kind == "i" and np.all(code >= 0)
