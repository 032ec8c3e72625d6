"""Turn decoded chunks of events into numpy columns with interned strings.

This is the hot path of loading: one list comprehension per field per chunk, no Python
object kept per event once a chunk is done (the garbage collector is the enemy here).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import compress
from typing import Any, Protocol

import numpy as np

from vtui.io.events import Event, phase_code
from vtui.io.exactts import NO_NS, chunk_times, times_of

# The optional C helper (_vtui_fastcols, from vtui/io/_fastcols.c) does add()'s per-event reads; the
# Python path below is the reference and the fallback (no compiler at install, a chunk it declines,
# a sink made with pure_python=True: LoadOptions.pure_python, VTUI_PURE_PYTHON=1 at the edge).
try:
    from _vtui_fastcols import extract as _extract
except ImportError:  # pragma: no cover - depends on the install
    _extract = None


def _hashable(value: Any) -> Any:
    """Lists/dicts used as names or ids become their text, so they can be interned."""
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


GLOBAL_ID = "global"  # the tag of an id2.global id: ("global", id), one id across processes


def is_global_id(ident: Any) -> bool:
    """An interned id from ``id2.global`` (with or without a ``scope`` around it)?"""
    if isinstance(ident, tuple) and len(ident) == 2 and isinstance(ident[1], tuple):
        ident = ident[1]
    return isinstance(ident, tuple) and len(ident) == 2 and ident[0] == GLOBAL_ID


def normalise_id(value: Any, id2: Any = None, scope: Any = None, flow: bool = False) -> Any:
    """One key for an id: id2 and scope namespace it. A string id is its text (async ids: Perfetto
    hashes the string, Catapult keys by it, so ``"0x10"`` and 16 are two ids), except a flow's
    (``flow``: s/t/f ids and ``bind_id``), which Perfetto reads as hex (``CStringToUInt64(s, 16)``:
    ``"10"`` is 16, ``"0x10"`` too; see ``flow_id_of_text``). A JSON true/false is its text
    (Python's True == 1 would make it meet the id 1); an integral float is the int."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif isinstance(value, str):
        if flow:
            value = flow_id_of_text(value)
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is None and isinstance(id2, dict) and id2:
        # As Perfetto's tokenizer: an id beats id2, and id2's global beats its local.
        if "global" in id2:
            value = (GLOBAL_ID, normalise_id(id2["global"]))
        elif "local" in id2:
            value = ("local", normalise_id(id2["local"]))
        else:
            kind, inner = next(iter(id2.items()))
            value = (str(kind), normalise_id(inner))
    value = _hashable(value)
    return value if scope is None else (_hashable(scope), value)


_C_SPACE = " \t\n\v\f\r"
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def flow_id_of_text(text: str) -> int | str:
    """A string flow id as Perfetto reads it: ``strtoull(text, 16)`` over the whole text (leading
    white space, a sign and a ``0x`` pass; past 64 bits it saturates), as the int64 of those 64
    bits, so ``"ffffffffffffffff"`` meets the id -1. A text that is not hex stays the text
    (Perfetto drops that flow, ``flow_invalid_id``; Catapult joins equal texts: vtui does)."""
    body = text.lstrip(_C_SPACE)
    negative = body[:1] == "-"
    if body[:1] in ("+", "-"):
        body = body[1:]
    if body[:2] in ("0x", "0X"):
        body = body[2:]
    if not body or not _HEX_DIGITS.issuperset(body):
        return text
    bits = min(int(body, 16), 2**64 - 1)
    if negative:
        bits = -bits % 2**64
    return bits - 2**64 if bits >= 2**63 else bits


def _is_flow(ph: Any) -> bool:
    """A v1 flow event's phase (s, t, f: only the first character counts, as in ``phase_code``)."""
    return isinstance(ph, str) and ph[:1] in ("s", "t", "f")


@dataclass
class Columns:
    """Events of one source, in file order, as columns. Row i is the i-th event object."""

    ph: np.ndarray  # int8 phase code
    ts: np.ndarray  # float64 µs: ts_ns / 1000 (beyond int64 ns: the double; NaN: not a number)
    dur: np.ndarray  # float64 µs, as ts
    name: np.ndarray  # int32 into ``strings``
    cat: np.ndarray  # int32 into ``strings``
    thread: np.ndarray  # int32 into ``thread_keys``
    args_off: np.ndarray  # int64 into ``args_blob``
    args_len: np.ndarray  # int32
    id_kind: np.ndarray  # int8: 0 no id, 1 an integer id (``id_val`` is it), 2 any other id (``id_val`` indexes ``ids``)
    id_val: np.ndarray  # int64
    scope: np.ndarray  # int8: 0 none/thread, 1 process, 2 global (instant ``s``)
    bp_enclosing: np.ndarray  # bool: flow ``bp == "e"``
    flow_v2: list[tuple[int, Any, bool, bool]]  # (row, bind_id, flow_in, flow_out)
    strings: list[Any]
    thread_keys: list[tuple[Any, Any]]
    ids: list[Any]  # the ids that are not plain integers (strings, id2, scoped), interned
    args_blob: bytes  # empty when the args went to an args file (offsets are into that file)
    by_phase: dict[str, int]
    # Absolute int64 ns of ts and dur read from their text (see vtui.io.exactts; NO_NS: none).
    # None: a source of another kind (nsys), whose doubles hold the ns (the merge rounds them).
    ts_ns: np.ndarray | None = None
    dur_ns: np.ndarray | None = None
    # (chunks, of them through the C helper) for `vtui info`
    chunks: tuple[int, int] = (0, 0)
    # (byte offset, ordinal) of event starts a raw scan can resume from, ascending (see ColumnSink.mark)
    checkpoints: list[tuple[int, int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ph)


_SCOPE = {"t": 0, "p": 1, "g": 2}


class ArgsWriter(Protocol):
    def put(self, data: bytes) -> int: ...  # store bytes, return their offset


@dataclass
class ColumnSink:
    """Accumulates chunks of ``Event`` into ``Columns``.

    With an ``args`` writer, each chunk's raw args go to it (a file) instead of RAM.
    """

    args: ArgsWriter | None = None
    pure_python: bool = False  # never the C helper (the reference path; LoadOptions.pure_python)
    # About how many bytes of events this sink will see (0: unknown). With it, and the bytes of the
    # first chunk (``add(..., nbytes=)``), each column is one buffer sized for the whole source:
    # no per-chunk arrays joined at ``finish`` (that join wrote every column twice, in fresh memory).
    expect_bytes: int = 0
    _parts: dict[str, _Growing] = field(default_factory=dict)
    _want: int = 0  # rows the next new buffer is made for
    _strings: dict[Any, int] = field(default_factory=dict)
    _threads: dict[tuple[Any, Any], int] = field(default_factory=dict)
    _ids: dict[Any, int] = field(default_factory=dict)
    _blob: list[bytes] = field(default_factory=list)
    _blob_size: int = 0
    _rows: int = 0
    _by_phase: Counter = field(default_factory=Counter)
    _flow_v2: list[tuple[int, Any, bool, bool]] = field(default_factory=list)
    # An event's "kind" is its (ph, name, cat, pid, tid): few distinct ones in a real trace, so
    # one dict lookup per event replaces four; ph code, string and thread ids come from the kind.
    _kinds: dict[tuple, int] = field(default_factory=dict)
    _kind_table: _KindTable = field(default_factory=lambda: _KindTable())
    _labels: dict[str, int] = field(default_factory=dict)  # ph as written -> small id, for by_phase
    _label_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _last_from_text: bool = True  # did the last add() read ts/dur from their text?
    _chunks: int = 0
    _fast_chunks: int = 0
    _marks: list[tuple[int, int]] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return self._rows

    def keep_exact_ts(self, events: list[Event], chunk: Callable[[], bytes]) -> None:
        """After ``add(events)``: where they held Python values for ts/dur (events the walk
        decoded one by one), read the times again from ``chunk()`` (the same events' JSON), so
        they are exact from the text too. Decoded chunks hold the text already: nothing to do."""
        if self._last_from_text or not events:
            return
        got = chunk_times(chunk(), len(events))
        if got is None:  # not JSON msgspec reads (leniently read events): keep the values' own ns
            return
        for key, (ns, us) in zip(("ts", "dur"), got):
            self._parts[key].replace_last(us)
            self._parts[key + "_ns"].replace_last(ns)

    def _kinds_of(self, events: list[Event]) -> np.ndarray:
        # One comprehension builds each key and looks it up (attribute loads in a comprehension
        # are specialised by the interpreter; ``attrgetter`` + ``map`` cost ~1.5x as much).
        get = self._kinds.get
        keys = None
        try:
            ids = [get((e.ph, e.name, e.cat, e.pid, e.tid), -1) for e in events]
        except TypeError:  # an unhashable name / pid (a list...): use its text
            keys = [_slow_kind_key(_KIND(e)) for e in events]
            ids = [get(k, -1) for k in keys]
        kind = np.fromiter(ids, dtype=np.int32, count=len(ids))  # np.array() costs ~4x: it inspects each item
        if -1 in ids:
            self._new_kinds(events, kind, keys)
        return kind

    def _new_kinds(self, events: list[Event], kind: np.ndarray, keys: list[tuple] | None = None) -> None:
        """The -1 entries of ``kind``: new kinds, interned in event order (so chunking never changes ids)."""
        for i in np.flatnonzero(kind < 0).tolist():
            kind[i] = self._new_kind(keys[i] if keys is not None else _KIND(events[i]))

    def _new_kind(self, key: tuple) -> int:
        kid = self._kinds.get(key)
        if kid is not None:
            return kid
        ph, name, cat, pid, tid = key
        label = ph if isinstance(ph, str) else "?"
        if label not in self._labels:
            self._labels[label] = len(self._labels)
            self._label_counts = np.append(self._label_counts, 0)
        strings = self._strings
        self._kind_table.append(
            phase_code(ph), strings.setdefault(name, len(strings)), strings.setdefault(cat, len(strings)),
            self._threads.setdefault((pid, tid), len(self._threads)), self._labels[label],
        )
        kid = self._kinds[key] = len(self._kinds)
        return kid

    def mark(self, pos: int) -> None:
        """The next event added starts at byte ``pos`` of the data, at the event array's level (a
        proven boundary: a decoded chunk starts there). Kept every ``MARK_STEP`` bytes or more, so
        an export reads from the mark before its first event instead of from the file's start."""
        if not self._marks or pos >= self._marks[-1][0] + MARK_STEP:
            self._marks.append((pos, self._rows))

    def add(self, events: list[Event], nbytes: int = 0) -> None:
        """``nbytes``: how many bytes of the source these events are (sizes the columns, see ``expect_bytes``)."""
        n = len(events)
        if not n:
            return
        self._size_for(n, nbytes)
        # The C helper's per-event reads, or None: this chunk takes the Python path (same result).
        fast = _extract(events, self._kinds) if _extract is not None and not self.pure_python else None
        self._chunks += 1
        if fast is not None:
            self._fast_chunks += 1
            kind_b, ts_b, dur_b, lens_b, chunk_blob, flags_b, id_cols = fast
            kind = np.frombuffer(kind_b, dtype=np.int32)  # a bytearray: writable, for the new kinds
            if (kind < 0).any():
                self._new_kinds(events, kind)
            ts_ns, dur_ns = np.frombuffer(ts_b, dtype=np.int64), np.frombuffer(dur_b, dtype=np.int64)
            ts, dur = _micros(ts_ns), _micros(dur_ns)
            self._last_from_text = True
            lens = np.frombuffer(lens_b, dtype=np.int64)
            flagged: Any = flags_b
        else:
            kind = self._kinds_of(events)
            ts_ns, ts, ts_text = times_of([e.ts for e in events])
            dur_ns, dur, dur_text = times_of([e.dur for e in events])
            self._last_from_text = ts_text and dur_text
            raws = [e.args for e in events]
            lens = np.fromiter(map(len, raws), dtype=np.int64, count=n)
            chunk_blob = b"".join(raws)
            del raws
            flagged = id_cols = None
        table = self._kind_table
        self._put("ph", table.ph[kind])
        self._put("name", table.name[kind])
        self._put("cat", table.cat[kind])
        self._put("thread", table.thread[kind])
        self._label_counts += np.bincount(table.label[kind], minlength=len(self._label_counts))
        self._put("ts", ts)
        self._put("dur", dur)
        self._put("ts_ns", ts_ns)
        self._put("dur_ns", dur_ns)

        offs = np.empty(n, dtype=np.int64)
        offs[0] = 0
        np.cumsum(lens[:-1], out=offs[1:])
        if self.args is not None:
            offs += self.args.put(chunk_blob)
        else:
            offs += self._blob_size
            self._blob.append(chunk_blob)
            self._blob_size += len(chunk_blob)
        self._put("args_off", offs)
        self._put("args_len", lens.astype(np.int32))

        if id_cols is not None:  # the helper's id columns: its common case (no id2, scope, bind_id; int64 ids)
            for name, data, dtype in zip(("id_kind", "id_val", "scope", "bp"), id_cols, _ID_DTYPES):
                self._put(name, np.frombuffer(data, dtype=dtype))
        else:
            self._ids_of(events, n, flagged)
        self._rows += n

    def _ids_of(self, events: list[Event], n: int, flags: bytes | None = None) -> None:
        """The id, scope, bp and bind_id columns: column-wise over the few events that have any.
        ``flags``: the C helper's flag per event (a byte 0/1), else computed here."""
        id_kind = np.zeros(n, dtype=np.int8)
        id_val = np.zeros(n, dtype=np.int64)
        scope = np.zeros(n, dtype=np.int8)
        bp = np.zeros(n, dtype=bool)
        # A flag per event (no int objects made, unlike enumerate), then the flagged events in C.
        if flags is not None:
            flagged: Any = flags
            any_flagged = 1 in flags
        else:
            flagged = [
                e.id is not None or e.id2 is not None or e.s is not None or e.bp is not None or e.bind_id is not None
                for e in events
            ]
            any_flagged = True in flagged
        if any_flagged:
            rows = np.flatnonzero(_bools(flagged))
            sub = list(compress(events, flagged))
            m = len(sub)
            # id2, scope and bind_id are rare: one pass says whether any is there.
            rare = True in [e.id2 is not None or e.scope is not None or e.bind_id is not None for e in sub]
            if rare or not self._int_ids(sub, rows, id_kind, id_val):
                self._other_ids(sub, rows.tolist(), id_kind, id_val)
            given = [e.s for e in sub]
            if given.count(None) != m:
                has = [v is not None for v in given]
                scope[rows[_bools(has)]] = [
                    _SCOPE.get(v, 0) if isinstance(v, str) else 0 for v in compress(given, has)]
            given = [e.bp for e in sub]
            if given.count(None) != m:
                bp[rows] = _bools([v == "e" for v in given])
            if rare:
                self._flow_v2.extend(
                    (self._rows + i, normalise_id(e.bind_id, flow=True), e.flow_in is True, e.flow_out is True)
                    for i, e in zip(rows.tolist(), sub) if e.bind_id is not None
                )
        self._put("id_kind", id_kind)
        self._put("id_val", id_val)
        self._put("scope", scope)
        self._put("bp", bp)

    @staticmethod
    def _int_ids(sub: list[Event], rows: np.ndarray, id_kind: np.ndarray, id_val: np.ndarray) -> bool:
        """Kineto's case, at numpy speed: every id a plain int64 (the caller checked there is no id2
        or scope). Integer ids (one per launch, millions) are kept as they are: interning them cost
        a dict entry per id here and again when ranges decoded apart are joined. False: not this
        case, nothing set."""
        idents = [e.id for e in sub]
        if not set(map(type, idents)) <= _INT_OR_NONE:  # bools, strings, floats: normalised one by one
            return False
        at = rows
        if None in idents:
            has = [v is not None for v in idents]
            at, idents = rows[_bools(has)], list(compress(idents, has))
        try:
            vals = np.fromiter(idents, dtype=np.int64, count=len(idents))
        except OverflowError:  # beyond int64: interned like strings
            return False
        id_val[at] = vals
        id_kind[at] = 1
        return True

    def _other_ids(self, sub: list[Event], sparse: list[int], id_kind: np.ndarray, id_val: np.ndarray) -> None:
        ids = self._ids
        int_rows: list[int] = []
        int_vals: list[int] = []
        for i, e in zip(sparse, sub):
            ident = e.id
            if ident is None and e.id2 is None:
                continue
            if not (type(ident) is int and e.id2 is None and e.scope is None):
                ident = normalise_id(ident, e.id2, e.scope, flow=_is_flow(e.ph))
            if type(ident) is int and _INT64_MIN <= ident <= _INT64_MAX:
                int_rows.append(i)
                int_vals.append(ident)
            else:  # interned in row order, so how the file is cut into chunks never changes the numbers
                id_kind[i], id_val[i] = 2, ids.setdefault(ident, len(ids))
        if int_rows:
            id_val[int_rows] = int_vals
            id_kind[int_rows] = 1

    def _size_for(self, n: int, nbytes: int) -> None:
        """How many rows a column's next buffer holds: from the first chunk's rows per byte times
        ``expect_bytes`` (+ 6 %), else (no estimate, or past it) half as many again as so far."""
        if self._want > self._rows + n:
            return
        if self.expect_bytes and nbytes and not self._rows:
            self._want = int(n * self.expect_bytes / nbytes * 1.06) + n
        else:
            self._want = self._rows + max(n, self._rows // 2, _MIN_ROWS)

    def absorb(self, cols: Columns, nbytes: int = 0) -> None:
        """Append columns decoded elsewhere (another byte range, another process), in order.

        Their strings, threads and non-integer ids are re-interned here; first-seen order is
        kept, so the result equals decoding the same events in this sink. Args offsets are taken as they
        are: both sides must write args to the same file.
        """
        n = len(cols)
        if not n:
            return
        if cols.args_blob:
            raise ValueError("absorb() needs columns whose args went to the shared args file")
        self._size_for(n, nbytes)
        s_map = np.array([self._strings.setdefault(v, len(self._strings)) for v in cols.strings] or [0], dtype=np.int32)
        t_map = np.array([self._threads.setdefault(k, len(self._threads)) for k in cols.thread_keys] or [0], dtype=np.int32)
        id_val = cols.id_val
        if cols.ids:
            i_map = np.array([self._ids.setdefault(k, len(self._ids)) for k in cols.ids], dtype=np.int64)
            other = cols.id_kind == 2
            id_val = id_val.copy()
            id_val[other] = i_map[id_val[other]]
        for name, arr in (("ph", cols.ph), ("ts", cols.ts), ("dur", cols.dur), ("ts_ns", _or_doubles(cols.ts_ns, cols.ts)),
                          ("dur_ns", _or_doubles(cols.dur_ns, cols.dur)), ("name", s_map[cols.name]),
                          ("cat", s_map[cols.cat]), ("thread", t_map[cols.thread]), ("args_off", cols.args_off),
                          ("args_len", cols.args_len), ("id_kind", cols.id_kind), ("id_val", id_val), ("scope", cols.scope),
                          ("bp", cols.bp_enclosing)):
            self._put(name, arr)
        # bind ids are normalised already; rows move by what this sink held before.
        self._flow_v2.extend((row + self._rows, key, fin, fout) for row, key, fin, fout in cols.flow_v2)
        self._by_phase.update(cols.by_phase)
        self._chunks += cols.chunks[0]
        self._fast_chunks += cols.chunks[1]
        self._marks.extend((pos, row + self._rows) for pos, row in cols.checkpoints)
        self._rows += n

    def _put(self, name: str, arr: np.ndarray) -> None:
        col = self._parts.get(name)
        if col is None:
            col = self._parts[name] = _Growing()
        col.put(arr, self._want - self._rows)

    def _phase_counts(self) -> dict[str, int]:
        counts = Counter(self._by_phase)
        for label, i in self._labels.items():
            if self._label_counts[i]:
                counts[label] += int(self._label_counts[i])
        return dict(counts)

    def finish(self) -> Columns:
        def cat(name: str, dtype) -> np.ndarray:
            col = self._parts.pop(name, None)
            return col.finish() if col is not None else np.zeros(0, dtype=dtype)

        return Columns(
            ph=cat("ph", np.int8),
            ts=cat("ts", np.float64),
            dur=cat("dur", np.float64),
            name=cat("name", np.int32),
            cat=cat("cat", np.int32),
            thread=cat("thread", np.int32),
            args_off=cat("args_off", np.int64),
            args_len=cat("args_len", np.int32),
            id_kind=cat("id_kind", np.int8),
            id_val=cat("id_val", np.int64),
            scope=cat("scope", np.int8),
            bp_enclosing=cat("bp", bool),
            flow_v2=self._flow_v2,
            strings=list(self._strings),
            thread_keys=list(self._threads),
            ids=list(self._ids),
            args_blob=b"".join(self._blob),
            by_phase=self._phase_counts(),
            ts_ns=cat("ts_ns", np.int64),
            dur_ns=cat("dur_ns", np.int64),
            chunks=(self._chunks, self._fast_chunks),
            checkpoints=list(self._marks),
        )


class _Growing:
    """One column's rows in order: written into a buffer made for the rows expected, so a
    source's column is (usually) one array, filled once. Arrays of another dtype, or rows past
    the buffer, start a new one; ``finish`` joins them as ``np.concatenate`` of the parts would."""

    __slots__ = ("blocks", "buf", "n", "last")

    def __init__(self) -> None:
        self.blocks: list[np.ndarray] = []  # full buffers and odd parts, in order, before ``buf``
        self.buf: np.ndarray | None = None
        self.n = 0  # rows of ``buf`` used
        self.last = 0  # where the last part put into ``buf`` starts

    def put(self, arr: np.ndarray, room: int) -> None:
        """Append ``arr``; ``room``: rows a new buffer should hold from here."""
        k = len(arr)
        buf = self.buf
        if buf is None or buf.dtype != arr.dtype or self.n + k > len(buf):
            self._seal()
            buf = self.buf = np.empty(max(room, k), dtype=arr.dtype)
        buf[self.n : self.n + k] = arr
        self.last = self.n
        self.n += k

    def replace_last(self, arr: np.ndarray) -> None:
        """The last part put, replaced by ``arr`` (as long)."""
        buf = self.buf  # (the times read again: the same dtypes as the first read's)
        assert buf is not None and len(arr) == self.n - self.last and buf.dtype == arr.dtype
        buf[self.last : self.n] = arr

    def _seal(self) -> None:
        if self.buf is not None and self.n:
            self.blocks.append(self.buf[: self.n])
        self.buf, self.n, self.last = None, 0, 0

    def finish(self) -> np.ndarray:
        if self.buf is not None and not self.blocks:
            out, self.buf = self.buf, None
            if self.n < len(out):
                try:  # give back the rows not used (in place: realloc)
                    out.resize(self.n, refcheck=False)
                except ValueError:  # (another reference to it: none is handed out; kept whole then)
                    out = out[: self.n]
            return out
        self._seal()
        blocks, self.blocks = self.blocks, []
        return blocks[0] if len(blocks) == 1 else np.concatenate(blocks)


_MIN_ROWS = 1 << 14  # rows of a column's first buffer when no estimate is given
MARK_STEP = 4 << 20  # bytes between kept checkpoints: ~256 per GB, and an export reads <= 4 MiB before its first event
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1  # integer ids outside this are interned like strings
_KIND = operator.attrgetter("ph", "name", "cat", "pid", "tid")
_INT_OR_NONE = {int, type(None)}
_ID_DTYPES = (np.int8, np.int64, np.int8, np.bool_)


class _KindTable:
    """Per kind: ph code, name id, cat id, thread id, label id, as growable numpy arrays."""

    def __init__(self) -> None:
        self.n = 0
        self._cap = 0
        self.ph = np.zeros(0, dtype=np.int8)
        self.name = np.zeros(0, dtype=np.int32)
        self.cat = np.zeros(0, dtype=np.int32)
        self.thread = np.zeros(0, dtype=np.int32)
        self.label = np.zeros(0, dtype=np.int32)

    def append(self, ph: int, name: int, cat: int, thread: int, label: int) -> None:
        if self.n == self._cap:  # double: amortised O(1) even when every event is its own kind
            self._cap = max(64, 2 * self._cap)
            for attr in ("ph", "name", "cat", "thread", "label"):
                arr = getattr(self, attr)
                grown = np.zeros(self._cap, dtype=arr.dtype)
                grown[: self.n] = arr[: self.n]
                setattr(self, attr, grown)
        i = self.n
        self.ph[i], self.name[i], self.cat[i], self.thread[i], self.label[i] = ph, name, cat, thread, label
        self.n += 1


def _slow_kind_key(key: tuple) -> tuple:
    ph = key[0]
    return (ph if isinstance(ph, str) else "?", *(_hashable(v) for v in key[1:]))


def _micros(ns: np.ndarray) -> np.ndarray:
    """µs as the Python path gives them (vtui.io.exactts.times_of) for ns the C helper read."""
    us = ns.astype(np.float64)
    us /= 1000.0
    us[ns == NO_NS] = np.nan
    return us


def _or_doubles(ns: np.ndarray | None, us: np.ndarray) -> np.ndarray:
    return ns if ns is not None else ns_from_doubles(us)


def ns_from_doubles(us: np.ndarray) -> np.ndarray:
    """int64 ns of µs doubles that hold them (nsys: integer ns / 1000), NO_NS where none."""
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = us * 1000.0
        ok = np.isfinite(scaled) & (np.abs(scaled) < 9.2e18)
    out = np.full(len(us), NO_NS, dtype=np.int64)
    out[ok] = np.rint(scaled[ok]).astype(np.int64)
    return out


def _bools(flags: list[bool] | bytes) -> np.ndarray:
    """A list of bools (or bytes of 0/1) as a numpy mask (via bytes: ~2x faster than fromiter or np.array)."""
    return np.frombuffer(bytes(flags), dtype=bool)
