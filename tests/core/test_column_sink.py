"""The column sink's vectorised passes give, row by row, what the plain per-event rules give,
whatever mix of ids, scopes, flow fields and odd values a chunk holds, and however it is cut."""

from __future__ import annotations

import json
import math
from decimal import ROUND_HALF_EVEN, Decimal

import msgspec
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vtui.io.columns import ColumnSink, normalise_id
from vtui.io.events import Event, phase_code
from vtui.io.exactts import NO_NS

IDS = st.one_of(
    st.none(), st.integers(-(2**70), 2**70), st.booleans(), st.sampled_from(["0x1f", "31", "abc", " 0X10 "]),
    st.floats(allow_nan=False, allow_infinity=False, width=32), st.lists(st.integers(0, 3), max_size=2),
)
NUMBERS = st.one_of(st.none(), st.floats(width=32), st.integers(-(2**40), 2**40), st.sampled_from(["1.5", "x", True]))
EVENTS = st.builds(
    Event,
    ph=st.sampled_from(["X", "s", "f", "i", "b", "e", "M", "Z", 5]),
    name=st.sampled_from(["a", "b", "kernel"]),
    cat=st.sampled_from(["c", "ac2g", None]),
    pid=st.sampled_from([1, 2, "p"]),
    tid=st.sampled_from([1, 7]),
    ts=NUMBERS,
    dur=NUMBERS,
    id=IDS,
    id2=st.one_of(st.none(), st.none(), st.fixed_dictionaries({"local": st.integers(0, 3)})),
    scope=st.one_of(st.none(), st.none(), st.sampled_from(["s1", "s2"])),
    s=st.one_of(st.none(), st.sampled_from(["t", "p", "g", "q", 3])),
    bp=st.one_of(st.none(), st.sampled_from(["e", "x", 1])),
    bind_id=st.one_of(st.none(), st.none(), st.integers(0, 5), st.just("0x5")),
    flow_in=st.one_of(st.none(), st.booleans()),
    flow_out=st.one_of(st.none(), st.booleans()),
)


def _expected(events: list[Event]):
    """Per event, as the trace format defines the fields (ids normalised, in-range ints kept)."""
    interned: dict = {}
    rows = []
    for e in events:
        kind, val = 0, 0
        if e.id is not None or e.id2 is not None:
            key = normalise_id(e.id, e.id2, e.scope, flow=e.ph in ("s", "f"))  # a flow's string id is hex
            if type(key) is int and -(2**63) <= key < 2**63:
                kind, val = 1, key
            else:
                kind, val = 2, interned.setdefault(key, len(interned))
        scope = {"t": 0, "p": 1, "g": 2}.get(e.s, 0) if isinstance(e.s, str) else 0
        rows.append((kind, val, scope, e.bp == "e"))
    flows = [(i, normalise_id(e.bind_id, flow=True), e.flow_in is True, e.flow_out is True)
             for i, e in enumerate(events) if e.bind_id is not None]
    return rows, flows, list(interned)


@settings(max_examples=300, deadline=None)
@given(st.lists(EVENTS, max_size=40), st.integers(1, 40))
def test_columns_match_the_per_event_rules_however_the_chunks_fall(events, cut):
    sink = ColumnSink()
    for at in range(0, len(events), cut):
        sink.add(events[at : at + cut])
    cols = sink.finish()
    rows, flows, ids = _expected(events)
    assert [(int(k), int(v), int(s), bool(b)) for k, v, s, b in
            zip(cols.id_kind, cols.id_val, cols.scope, cols.bp_enclosing)] == rows
    assert cols.flow_v2 == flows
    assert cols.ids == ids
    assert cols.ph.tolist() == [phase_code(e.ph) for e in events]
    assert [cols.strings[i] for i in cols.name] == [e.name for e in events]
    assert [cols.thread_keys[i] for i in cols.thread] == [(e.pid, e.tid) for e in events]
    # ts: a Python number (an event built, not decoded) as the ns of its shortest text, half to
    # even below the ns; µs is ns / 1000; None is no ns and NaN.
    for ns, us, e in zip(cols.ts_ns.tolist(), cols.ts.tolist(), events):
        if e.ts is None:
            assert ns == NO_NS and math.isnan(us)
        elif type(e.ts) in (int, float) and math.isfinite(e.ts) and abs(e.ts) < 1e15:
            assert ns == int((Decimal(repr(e.ts)) * 1000).to_integral_value(ROUND_HALF_EVEN))
            assert us == ns / 1000
    none_dur = np.array([e.dur is None for e in events], dtype=bool)
    assert np.isnan(cols.dur[none_dur]).all() and (cols.dur_ns[none_dur] == NO_NS).all()


def _same_columns(a, b) -> None:
    for f in a.__dataclass_fields__:
        x, y = getattr(a, f), getattr(b, f)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, f
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f
        else:
            assert x == y, f


def _decoded(count: int) -> tuple[list[Event], bytes]:
    """``count`` events as the chunk decoder gives them (times as text), and their JSON."""
    text = ",".join(
        f'{{"ph":"{"XBi"[k % 3]}","name":"n{k % 5}","pid":1,"tid":{k % 4},"ts":{k}.5{k % 10},"dur":{k % 7},'
        f'"id":{k},"args":{{"k":{k}}}}}' for k in range(count)).encode()
    return msgspec.json.Decoder(list[Event]).decode(b"[" + text + b"]"), text


@settings(max_examples=100, deadline=None)
@given(st.lists(EVENTS, max_size=40), st.integers(1, 40), st.sampled_from([0.05, 0.5, 1.0, 3.0, 40.0]))
def test_columns_are_the_same_whatever_size_was_expected(built, cut, guess):
    """The buffers sized from ``expect_bytes`` (too small, right, too big, none) hold exactly the
    rows the per-chunk arrays held: decoded chunks, built events (ts read again from their text:
    ``keep_exact_ts`` replaces the last part) and columns absorbed from another sink."""
    decoded, text = _decoded(60)
    per_byte = len(text) / len(decoded)

    def fill(sink: ColumnSink) -> None:
        for at in range(0, len(decoded), cut):
            sink.add(decoded[at : at + cut], int(per_byte * len(decoded[at : at + cut])))
        for at in range(0, len(built), cut):
            sink.add(built[at : at + cut])
        # Times as Python values, as the event-by-event walk makes them; their text has ns a double drops.
        walked_text = b",".join(b'{"ph":"X","ts":17121954955%05d.123,"dur":1.0001}' % k for k in range(9))
        walked = [Event(**obj) for obj in json.loads(b"[" + walked_text + b"]")]
        sink.add(walked)
        sink.keep_exact_ts(walked, lambda: walked_text)
        other = ColumnSink(args=_Args(), expect_bytes=int(guess * len(text)))
        other.add(decoded[:7], int(per_byte * 7))
        sink.absorb(other.finish(), int(per_byte * 7))

    plain, sized = ColumnSink(args=_Args()), ColumnSink(args=_Args(), expect_bytes=int(guess * len(text) * 2))
    fill(plain)
    fill(sized)
    got = sized.finish()
    _same_columns(plain.finish(), got)
    walked = slice(len(decoded) + len(built), len(decoded) + len(built) + 9)
    assert got.ts_ns[walked].tolist() == [1712195495500000123 + k * 1000 for k in range(9)]  # from the text


class _Args:
    def __init__(self) -> None:
        self.size = 0

    def put(self, data: bytes) -> int:
        at, self.size = self.size, self.size + len(data)
        return at


def test_a_good_estimate_fills_each_column_once_in_one_array():
    """With ``expect_bytes`` each column is one buffer made for the whole source, and ``finish``
    hands it over, trimmed, instead of joining per-chunk arrays (which wrote every column twice)."""
    decoded, text = _decoded(3000)
    sink = ColumnSink(args=_Args(), expect_bytes=len(text))
    step = 100
    for at in range(0, len(decoded), step):
        sink.add(decoded[at : at + step], len(text) * step // len(decoded))
    assert all(not col.blocks for col in sink._parts.values())  # never outgrown: one buffer each
    cols = sink.finish()
    for name in ("ph", "ts", "ts_ns", "name", "args_off", "id_val"):
        arr = getattr(cols, name)
        assert len(arr) == len(decoded) and arr.base is None  # the buffer itself, no copy, no slack
    assert cols.ts_ns.tolist()[:3] == [500, 1510, 2520]


def test_parts_of_another_dtype_join_as_concatenate_joins_them():
    from vtui.io.columns import _Growing

    col = _Growing()
    parts = [np.array([1, 2], dtype=np.int32), np.array([3], dtype=np.int32), np.array([2**40], dtype=np.int64),
             np.array([4], dtype=np.int32)]
    for arr in parts:
        col.put(arr, room=10)
    got, want = col.finish(), np.concatenate(parts)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
