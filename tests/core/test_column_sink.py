"""The column sink's vectorised passes give, row by row, what the plain per-event rules give,
whatever mix of ids, scopes, flow fields and odd values a chunk holds, and however it is cut."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal

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
