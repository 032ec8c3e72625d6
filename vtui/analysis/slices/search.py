"""Regex search over slice names (or their args), results in time order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtui.analysis.base.selection import slice_rows
from vtui.regex_guard import Budget, UserRegex, compile_user
from vtui.store.slicetime import TimeRange, over
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


def parse_query(text: str, ignore_case: bool = False) -> tuple[UserRegex, bool]:
    """``"aten::.*mm"`` -> names; ``"args:256"`` -> args. Raises UsageError on a bad regex."""
    if text.startswith(ARGS_PREFIX):
        return compile_user(text[len(ARGS_PREFIX):], ignore_case), True
    return compile_user(text, ignore_case), False


def search(store: TraceStore, query: str, rng: TimeRange | None = None,
           tracks: np.ndarray | None = None, ignore_case: bool = False, budget: Budget | None = None) -> SearchResult:
    """Slices in ``rng`` (the whole trace when None) on ``tracks`` whose name (or args) the guarded
    regex finds; RegexStopped past ``budget``'s limit or on cancel."""
    regex, in_args = parse_query(query, ignore_case)
    rng = over(store, rng)
    whole = rng.whole and tracks is None
    rows = np.arange(len(store.slices), dtype=np.int64) if whole else slice_rows(store, rng.t0, rng.t1, tracks)
    if in_args:
        hit = _args_match(store, regex, rows, budget)
    else:  # a trace has few distinct names: test each name once, then one gather over the rows
        hit = regex.mask(store.strings, budget)[store.slices.name_id[rows]]
    rows = rows[hit]
    order = np.lexsort((store.slices.track[rows], store.slices.start_ns[rows]))
    rows = rows[order]
    total = int(store.slices.durations(rows).sum()) if len(rows) else 0
    return SearchResult(pattern=query, in_args=in_args, rows=rows, total_ns=total)


def _args_match(store: TraceStore, regex: UserRegex, rows: np.ndarray, budget: Budget | None) -> np.ndarray:
    """Match the regex against each slice's args as written (JSON text, UTF-8), without decoding them."""
    blob = store.args_blob
    off, length = store.slices.args_off[rows], store.slices.args_len[rows]
    has = np.flatnonzero(length > 0)
    out = np.zeros(len(rows), dtype=bool)
    step = 65_536  # bytes objects made a batch at a time: a million slices' args never sit in memory at once
    for k in range(0, len(has), step):
        part = has[k : k + step]
        texts = [bytes(blob[a : a + n]) for a, n in zip(off[part].tolist(), length[part].tolist())]
        out[part] = regex.mask_bytes(texts, budget)
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
