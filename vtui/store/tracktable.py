"""The store's tracks as columns: a million tracks reopen from the cache as a few arrays.

A ``Track`` object per row cost ~40 s to rebuild from the cache for a trace of 1,000,000 tracks
(``benchmarks/bench_many_tracks.py``). Here every field is a numpy column (texts and pid/tid values as ids into
two small lists), and a ``Track`` is made only when a caller asks for that row, once, and kept:
the timeline and the details show a few dozen. It reads as the list of tracks it replaces
(``len``, ``[i]``, iteration, slicing); whole-table questions (``kind_is``, ``overlapping``)
stay vectorised.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import attrgetter
from typing import Any, overload

import numpy as np

from vtui.gcpause import gc_paused
from vtui.store.grouping import group_key
from vtui.store.tracks import ASYNC, COUNTER, GLOBAL, GPU, PROCESS, THREAD, Track, process_title_of, title_of

KINDS = (THREAD, GPU, ASYNC, COUNTER, PROCESS, GLOBAL)  # a kind's code is its position here
KIND_CODE = {k: i for i, k in enumerate(KINDS)}
_KIND_CODE = KIND_CODE

# Every column and its dtype (the cache checks an entry's against these, not against itself).
REFS = ("pid", "tid", "name", "process_name", "process_label", "group", "exact_name")  # ids into ``ids`` / ``text``
COUNTS = ("slice_count", "instant_count", "counter_count", "lanes", "nested_lanes", "overlapping")
COLUMN_DTYPES = {"kind": "|i1", "source": "<i4", **{c: "<i4" for c in REFS}, **{c: "<i8" for c in COUNTS}}
_ID_REFS = ("pid", "tid")  # into ``ids``; the other refs are into ``text``


class TrackTable(Sequence[Track]):
    """Columns of the tracks, in display order (a track's id is its row)."""

    def __init__(self, columns: dict[str, np.ndarray], ids: list[Any], text: list[str]) -> None:
        # Plain views of mapped columns: indexing an np.memmap runs Python code per access.
        self.columns = {name: np.asarray(arr) for name, arr in columns.items()}
        self.ids = ids  # distinct pid / tid values (int, str or None)
        self.text = text  # distinct names and titles
        self._made: dict[int, Track] = {}

    # ---- building ------------------------------------------------------------------
    @classmethod
    def from_tracks(cls, tracks: list[Track]) -> TrackTable:
        """The table of ``tracks`` (whose ids must be 0..n-1 in order). One pass per column."""
        ids: dict[tuple[type, Any], int] = {}  # by type too: 1 and True, "1" and 1 stay apart
        text: dict[str, int] = {}
        n = len(tracks)

        def column(name: str, code) -> np.ndarray:
            return np.fromiter(map(code, map(attrgetter(name), tracks)), dtype=COLUMN_DTYPES[name], count=n)

        columns = {"kind": column("kind", _KIND_CODE.__getitem__), "source": column("source", int)}
        for c in _ID_REFS:
            columns[c] = column(c, lambda v: ids.setdefault((type(v), v), len(ids)))
        for c in REFS[2:]:
            columns[c] = column(c, lambda v: text.setdefault(v, len(text)))
        for c in COUNTS:
            columns[c] = column(c, int)
        return cls(columns, [value for _, value in ids], list(text))

    # ---- reading as a list of Track --------------------------------------------------
    def __len__(self) -> int:
        return len(self.columns["kind"])

    @overload
    def __getitem__(self, i: int) -> Track: ...

    @overload
    def __getitem__(self, i: slice) -> list[Track]: ...

    def __getitem__(self, i: int | slice) -> Track | list[Track]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        k = int(i)  # numpy integers too
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(f"track {i} out of range")
        got = self._made.get(k)
        if got is None:
            got = self._made[k] = self._make(k)
        return got

    def __iter__(self) -> Iterator[Track]:
        if len(self._made) < len(self):
            self._make_all()
        return (self._made[k] for k in range(len(self)))

    def _make_all(self) -> None:
        """Every row at once, from whole columns as lists (a million: ~1 s, not ~10 s row by row)."""
        c = {name: arr.tolist() for name, arr in self.columns.items()}
        ids, text = self.ids, self.text
        with gc_paused():
            self._fill(c, ids, text)

    def _fill(self, c: dict[str, list], ids: list[Any], text: list[str]) -> None:
        for k, kind, src, pid, tid, name, pname, plabel, group, exact, *counts in zip(
                range(len(self)), c["kind"], c["source"], c["pid"], c["tid"], c["name"], c["process_name"],
                c["process_label"], c["group"], c["exact_name"], *(c[n] for n in COUNTS)):
            if k not in self._made:
                self._made[k] = Track(k, KINDS[kind], src, ids[pid], ids[tid], text[name], text[pname], text[plabel],
                                      text[group], text[exact], *counts)

    def _make(self, k: int) -> Track:
        c = self.columns
        return Track(
            id=k, kind=KINDS[int(c["kind"][k])], source=int(c["source"][k]),
            pid=self.ids[int(c["pid"][k])], tid=self.ids[int(c["tid"][k])], name=self.text[int(c["name"][k])],
            process_name=self.text[int(c["process_name"][k])], process_label=self.text[int(c["process_label"][k])],
            group=self.text[int(c["group"][k])], exact_name=self.text[int(c["exact_name"][k])],
            **{n: int(c[n][k]) for n in COUNTS},
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TrackTable):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable Track rows: not hashable, as a list is not

    def __getstate__(self) -> dict[str, Any]:
        return {"columns": self.columns, "ids": self.ids, "text": self.text}  # Track objects are remade

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["columns"], state["ids"], state["text"])  # type: ignore[misc]

    # ---- whole-table questions, vectorised ---------------------------------------------
    def kind_is(self, *kinds: str) -> np.ndarray:
        """Per track: is its kind one of ``kinds``."""
        return np.isin(self.columns["kind"], [_KIND_CODE[k] for k in kinds])

    def process_ids(self) -> np.ndarray:
        """Per track: one id per (source, pid), equal exactly where both are."""
        return group_key(self.columns["source"], self.columns["pid"])

    def process_titles(self) -> tuple[np.ndarray, list[str]]:
        """Per track an index into the distinct process titles, and those titles: each made once per
        distinct (global, group, label, name, pid), not once per track."""
        c = self.columns
        key = group_key((c["kind"] == _KIND_CODE[GLOBAL]).astype(np.int64), c["group"], c["process_label"],
                        c["process_name"], c["pid"])
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        text, ids = self.text, self.ids
        titles = [process_title_of(kind == _KIND_CODE[GLOBAL], text[g], text[lab], text[nm], ids[pid])
                  for kind, g, lab, nm, pid in zip(*(c[n][first].tolist() for n in
                                                     ("kind", "group", "process_label", "process_name", "pid")))]
        return _distinct(inverse, titles)

    def titles(self) -> tuple[np.ndarray, list[str]]:
        """Per track an index into the distinct row titles, and those titles (once per (name, tid))."""
        c = self.columns
        _, first, inverse = np.unique(group_key(c["name"], c["tid"]), return_index=True, return_inverse=True)
        text, ids = self.text, self.ids
        titles = [title_of(text[nm], ids[tid]) for nm, tid in zip(c["name"][first].tolist(), c["tid"][first].tolist())]
        return _distinct(inverse, titles)

    def texts(self, form: str) -> tuple[np.ndarray, list[str]]:
        """Per track an index into distinct texts, and those texts, each ``form.format(process=…, title=…,
        kind=…)`` of a track: what a track filter matches, made once per distinct text."""
        pcode, ptitles = self.process_titles()
        tcode, ttitles = self.titles()
        kind = self.columns["kind"].astype(np.int64)
        _, first, inverse = np.unique(group_key(pcode, tcode, kind), return_index=True, return_inverse=True)
        texts = [form.format(process=ptitles[p], title=ttitles[t], kind=KINDS[k])
                 for p, t, k in zip(pcode[first].tolist(), tcode[first].tolist(), kind[first].tolist())]
        return _distinct(inverse, texts)

    @property
    def overlapping(self) -> int:
        return int(self.columns["overlapping"].sum())

    def check(self) -> str | None:
        """What is wrong with the columns (a cache entry's), or None: lengths, ranges of the ids."""
        n = len(self)
        for name, arr in self.columns.items():
            if arr.dtype.str != COLUMN_DTYPES.get(name) or arr.shape != (n,):
                return f"track column {name}: unexpected dtype or shape"
        if set(self.columns) != set(COLUMN_DTYPES):
            return "track columns missing or extra"
        if not n:
            return None
        bad = [(c, len(self.ids) if c in _ID_REFS else len(self.text)) for c in REFS]
        for name, limit in [("kind", len(KINDS)), *bad]:
            arr = self.columns[name]
            if int(arr.min()) < 0 or int(arr.max()) >= limit:
                return f"track column {name}: an id out of range"
        if any(int(self.columns[c].min()) < 0 for c in COUNTS):
            return "a negative track count"
        if not all(v is None or isinstance(v, (int, str)) for v in self.ids):
            return "a track id that is not a number or text"
        return None



def _distinct(code: np.ndarray, texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """``code`` (per track, into ``texts``) and ``texts`` with equal texts made one (two pids' titles may read alike)."""
    if len(set(texts)) == len(texts):  # the common case (every thread its own title): one cheap check
        return code.reshape(-1), texts
    seen: dict[str, int] = {}
    remap = np.fromiter((seen.setdefault(t, len(seen)) for t in texts), dtype=np.int64, count=len(texts))
    return remap[code.reshape(-1)], list(seen)
