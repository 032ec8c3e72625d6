"""Regex search over slice names (or their args), results in time order."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from vtui.analysis.ranges import compile_regex
from vtui.analysis.selection import slice_rows
from vtui.store.slicetime import window
from vtui.store.store import TraceStore

ARGS_PREFIX = "args:"  # "args:Input Dims.*256" searches the args' JSON text instead of names


@dataclass(frozen=True)
class SearchResult:
    pattern: str
    in_args: bool
    rows: np.ndarray  # slice rows, sorted by (start, track)
    total_ns: int  # summed durations of the matches (not a union)

    @property
    def count(self) -> int:
        return len(self.rows)


def parse_query(text: str) -> tuple[re.Pattern[str], bool]:
    """``"aten::.*mm"`` -> names; ``"args:256"`` -> args. Raises UsageError on a bad regex."""
    if text.startswith(ARGS_PREFIX):
        return compile_regex(text[len(ARGS_PREFIX):]), True
    return compile_regex(text), False


def search(store: TraceStore, query: str, t0: int | None = None, t1: int | None = None,
           tracks: np.ndarray | None = None) -> SearchResult:
    regex, in_args = parse_query(query)
    t0, t1 = window(store, t0, t1)
    whole = t0 <= 0 and t1 >= store.span_ns and tracks is None
    rows = np.arange(len(store.slices), dtype=np.int64) if whole else slice_rows(store, t0, t1, tracks)
    if in_args:
        hit = _args_match(store, regex, rows)
    else:  # a trace has few distinct names: test each name once, then one isin over the rows
        ids = [i for i, s in enumerate(store.strings) if regex.search(s)]
        hit = np.isin(store.slices.name_id[rows], np.asarray(ids, dtype=np.int32))
    rows = rows[hit]
    order = np.lexsort((store.slices.track[rows], store.slices.start_ns[rows]))
    rows = rows[order]
    total = int(store.slices.durations(rows).sum()) if len(rows) else 0
    return SearchResult(pattern=query, in_args=in_args, rows=rows, total_ns=total)


def _args_match(store: TraceStore, regex: re.Pattern[str], rows: np.ndarray) -> np.ndarray:
    """Match the regex against each slice's args as written (JSON text), without decoding them."""
    blob = store.args_blob
    off, length = store.slices.args_off[rows], store.slices.args_len[rows]
    out = np.zeros(len(rows), dtype=bool)
    for i, (a, n) in enumerate(zip(off.tolist(), length.tolist())):
        if n > 0 and regex.search(blob[a : a + n].decode("utf-8", "replace")):
            out[i] = True
    return out


def step(result: SearchResult, store: TraceStore, current_ns: int, forward: bool = True) -> int | None:
    """Index of the next (or previous) match after ``current_ns`` (wrapping), or None without matches."""
    if not result.count:
        return None
    starts = store.slices.start_ns[result.rows]
    if forward:
        i = int(np.searchsorted(starts, current_ns, side="right"))
        return i % result.count
    i = int(np.searchsorted(starts, current_ns, side="left")) - 1
    return i % result.count
