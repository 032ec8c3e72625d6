"""The optional C helper (the module _vtui_fastcols, from vtui/io/_fastcols.c) gives the column sink exactly what its pure-Python
path gives: every array, string, thread key, id, phase count and args byte, on every fixture and
on generated chunks of odd events. Where the helper cannot match Python exactly it declines the
chunk (returns None) and the Python path runs."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import shutil
import sysconfig

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import FIXTURES
from vtui.io import columns
from vtui.io.columns import Columns, ColumnSink
from vtui.io.events import Event
from vtui.io.jsonscan import scan_trace

try:
    from _vtui_fastcols import extract
except ImportError:
    extract = None

needs_c = pytest.mark.skipif(
    extract is None, reason="_vtui_fastcols is not built (no C compiler at install): only the Python path exists")


def _has_compiler() -> bool:
    cc = (sysconfig.get_config_var("CC") or "gcc").split()[0]
    return bool(shutil.which(cc) or shutil.which("gcc"))


@pytest.mark.skipif(not _has_compiler(), reason="no C compiler: the helper is optional and not built")
def test_the_helper_is_built_where_a_compiler_exists():
    # An install on a machine with a compiler (CI) must build it; a silent build failure would
    # otherwise only show as a slower load.
    assert importlib.util.find_spec("_vtui_fastcols") is not None
    assert extract is not None


def _assert_same(a: Columns, b: Columns) -> None:
    for f in dataclasses.fields(Columns):
        if f.name == "chunks":  # how many took the helper: the one field that may differ
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray), f.name
            assert x.dtype == y.dtype and x.shape == y.shape, f.name
            assert x.tobytes() == y.tobytes(), f.name  # bit for bit, NaNs included
        else:
            assert type(x) is type(y), f.name
            assert x == y, f.name
            if isinstance(x, list):  # True == 1 and 1.0 == 1: the kinds of the values count too
                assert [type(v) for v in x] == [type(v) for v in y], f.name


def _sink_columns(use_c: bool, chunks: list[list[Event]]) -> Columns:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(columns, "_extract", extract if use_c else None)
        sink = ColumnSink()
        for chunk in chunks:
            sink.add(chunk)
        return sink.finish()


def _fixture_paths():
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and ".json" in p.name)


@needs_c
@pytest.mark.parametrize("path", _fixture_paths(), ids=lambda p: p.name)
def test_both_paths_give_the_same_columns_on_every_fixture(path, monkeypatch):
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    out = []
    for use_c in (False, True):
        with monkeypatch.context() as m:
            m.setattr(columns, "_extract", extract if use_c else None)
            sink = ColumnSink()
            scan_trace(data, sink)
            out.append(sink.finish())
    assert len(out[0]) > 0
    _assert_same(out[0], out[1])


# Field values of every kind a JSON decode can give, and a few it cannot (Python code building Events).
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.integers(-(2**1100), 2**1100),
    st.floats(allow_nan=False), st.sampled_from(["X", "B", "E", "i", "s", "f", "", "0x1f", "1.5", "name"]),
)
_VALUES = st.one_of(_SCALARS, st.lists(st.integers(0, 3), max_size=2), st.just({"k": 1}))
_NUMBERS = st.one_of(
    st.none(), st.booleans(), st.floats(), st.integers(-(2**60), 2**60), st.integers(2**1024, 2**1030),
    st.sampled_from(["1.5", "x", float("inf")]),
)
_RAWS = st.one_of(st.just(b""), st.binary(max_size=12)).map(msgspec.Raw)


def _decimal_text(negative: bool, whole: int, frac: str) -> msgspec.Raw:
    return msgspec.Raw(f"{'-' if negative else ''}{whole}{'.' + frac if frac else ''}".encode())


# ts/dur as the decoder leaves them: the number's text (plain decimals, the helper's case) or b"" (missing).
_PLAIN_TEXTS = st.one_of(
    st.just(msgspec.Raw(b"")),
    st.builds(_decimal_text, st.booleans(), st.integers(0, 9 * 10**15), st.text("0123456789", max_size=9)),
)
_ODD_TEXTS = st.one_of(_PLAIN_TEXTS, st.builds(_decimal_text, st.booleans(), st.integers(9 * 10**15, 10**20),
                                               st.text("0123456789", max_size=4)),
                       st.sampled_from([b"1e3", b'"12"', b'"1_000"', b"true", b"null", b"[1]", b"-0", b'" 1.5"']).map(msgspec.Raw))


@st.composite
def _events(draw, odd: bool) -> Event:
    common = st.sampled_from(["X", "a", 1, None])  # repeats, so kinds are shared
    value = st.one_of(common, _VALUES) if odd else common
    fields = {
        "ph": draw(st.one_of(st.sampled_from(["X", "B", "i", "s", "f"]), value) if odd else st.sampled_from("XBi")),
        "name": draw(value), "cat": draw(value), "pid": draw(value), "tid": draw(value),
        "ts": draw(st.one_of(_NUMBERS, _ODD_TEXTS) if odd else _PLAIN_TEXTS),
        "dur": draw(st.one_of(_NUMBERS, _ODD_TEXTS) if odd else _PLAIN_TEXTS),
        "id": draw(st.one_of(st.none(), st.none(), _VALUES)),
        "id2": draw(st.one_of(st.none(), st.none(), st.fixed_dictionaries({"local": st.integers(0, 3)}))),
        "scope": draw(st.one_of(st.none(), st.none(), st.sampled_from(["s1", 2]))),
        "s": draw(st.one_of(st.none(), st.none(), st.sampled_from(["t", "p", "g", 3]))),
        "bp": draw(st.one_of(st.none(), st.none(), st.sampled_from(["e", "x"]))),
        "bind_id": draw(st.one_of(st.none(), st.none(), st.integers(0, 5), st.just("0x5"))),
        "flow_in": draw(st.one_of(st.none(), st.booleans())),
        "flow_out": draw(st.one_of(st.none(), st.booleans())),
        "args": draw(_RAWS),
    }
    present = draw(st.sets(st.sampled_from(list(fields))))  # missing fields keep their defaults
    return Event(**{k: v for k, v in fields.items() if k in present})


def _cut(events: list[Event], cuts: list[int]) -> list[list[Event]]:
    bounds = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    return [events[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(_events(odd=True), max_size=30), st.lists(st.integers(0, 30), max_size=4))
def test_both_paths_give_the_same_columns_on_odd_events(events, cuts):
    chunks = _cut(events, cuts)
    _assert_same(_sink_columns(False, chunks), _sink_columns(True, chunks))


@needs_c
@settings(max_examples=150, deadline=None)
@given(st.lists(_events(odd=False), min_size=1, max_size=30), st.lists(st.integers(0, 30), max_size=4))
def test_the_helper_takes_plain_chunks_and_matches(events, cuts):
    """Chunks of plain values (what msgspec decodes from real traces) go through the helper."""
    taken = []

    def counting(evs, kinds):
        out = extract(evs, kinds)
        taken.append(out is not None)
        return out

    chunks = _cut(events, cuts)
    expected = _sink_columns(False, chunks)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(columns, "_extract", counting)
        sink = ColumnSink()
        for chunk in chunks:
            sink.add(chunk)
        got = sink.finish()
    assert taken and all(taken)
    _assert_same(expected, got)


def _odd_id(odd: dict) -> str:
    """A test id that is the same in every process (pytest-xdist's workers must agree): repr()
    of a msgspec.Raw or a memoryview holds its address."""
    def shown(value) -> str:
        if isinstance(value, msgspec.Raw):
            return f"Raw({bytes(value)!r})"
        if isinstance(value, memoryview):
            return f"memoryview(format={value.format!r})"
        return repr(value)
    return ",".join(f"{key}={shown(value)}" for key, value in odd.items())


@needs_c
@pytest.mark.parametrize("odd", [
    {"id": True}, {"id": "0x1f"}, {"id": 1.0}, {"id": 2**63}, {"id": -(2**63) - 1}, {"id2": {"local": 1}},
    {"scope": "x", "id": 5}, {"bind_id": 3}, {"s": ("t",)}, {"bp": b"e"},
], ids=_odd_id)
def test_extract_leaves_the_id_columns_to_python_outside_its_case(odd):
    events = [_plain(id=2**63 - 1, s="p", bp="e"), _plain(**odd)]
    assert extract(events[:1], {})[6] is not None
    out = extract(events, {})
    assert out is not None and out[6] is None


_INT_IDS = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.integers(-(2**64), 2**64))
_FLOW_EVENTS = st.builds(
    Event, ph=st.sampled_from(["s", "f", "t", "X", "b", "e"]), name=st.just("n"), cat=st.just("c"),
    pid=st.just(1), tid=st.just(2), ts=_PLAIN_TEXTS, id=_INT_IDS,
    s=st.one_of(st.none(), st.sampled_from(["t", "p", "g", "G", "", 1, True, 2.5, ["t"]])),
    bp=st.one_of(st.none(), st.sampled_from(["e", "E", "", "ee", 0, None, {"e": 1}])),
    scope=st.one_of(st.none(), st.none(), st.none(), st.just("sc")),
)


@needs_c
@settings(max_examples=200, deadline=None)
@given(st.lists(_FLOW_EVENTS, min_size=1, max_size=30), st.lists(st.integers(0, 30), max_size=3))
def test_both_paths_give_the_same_id_columns(events, cuts):
    """Integer ids, scopes and bp values of every JSON kind: the helper's id columns or Python's."""
    chunks = _cut(events, cuts)
    _assert_same(_sink_columns(False, chunks), _sink_columns(True, chunks))


def _plain(**kw) -> Event:
    base = {"ph": "X", "name": "k", "cat": "c", "ts": msgspec.Raw(b"1.5"), "dur": msgspec.Raw(b"2"), "pid": 1, "tid": 2,
            "args": msgspec.Raw(b'{"a":1}')}
    return Event(**{**base, **kw})


@needs_c
def test_extract_reads_each_field_as_the_python_path_does():
    raw = msgspec.Raw
    events = [_plain(), _plain(ts=None, dur=raw(b"0.0005"), args=msgspec.Raw(b""), id=7), _plain(name="new", bp="e"),
              _plain(ts=raw(b"-1152921504606846.9775"), dur=raw(b""), s="g"), _plain(bind_id=0, dur=raw(b"0.0015"))]
    kinds = {("X", "k", "c", 1, 2): 5}
    kind, ts, dur, lens, blob, flags, ids = extract(events, kinds)
    assert np.frombuffer(kind, dtype=np.int32).tolist() == [5, 5, -1, 5, 5]
    no = int(np.iinfo(np.int64).min)
    assert np.frombuffer(ts, dtype=np.int64).tolist() == [1500, no, 1500, -1152921504606846978, 1500]
    assert np.frombuffer(dur, dtype=np.int64).tolist() == [2000, 0, 2000, no, 2]  # sub-ns digits: half to even
    assert np.frombuffer(lens, dtype=np.int64).tolist() == [7, 0, 7, 7, 7]
    assert blob == b'{"a":1}' * 4
    assert list(flags) == [0, 1, 1, 1, 1]
    assert ids is None  # a bind_id: flow v2, Python's path makes the id columns
    id_kind, id_val, scope, bp = extract(events[:4], kinds)[6]
    assert list(id_kind) == [0, 1, 0, 0] and np.frombuffer(id_val, dtype=np.int64).tolist() == [0, 7, 0, 0]
    assert list(scope) == [0, 0, 0, 2] and list(bp) == [0, 0, 1, 0]
    assert extract([], kinds) is None  # nothing to do: add() never calls it so


@needs_c
@pytest.mark.parametrize("odd", [
    {"name": ["a", "list"]},  # unhashable: Python interns its text
    {"pid": {"a": 1}},
    {"ts": "1.5"},  # a Python value (an event built by the walk): Python reads it
    {"dur": "x"},
    {"ts": 2**1024},
    {"dur": [1]},
    {"ts": msgspec.Raw(b'"1.5"')},  # a string: Perfetto's rules, in Python
    {"ts": msgspec.Raw(b"1e3")},  # an exponent
    {"dur": msgspec.Raw(b"true")},
    {"ts": msgspec.Raw(b"9223372036854775.807")},  # ns near int64's end: Python decides
    {"args": "not a buffer"},
    {"args": memoryview(b"ab").cast("H")},  # a buffer whose len() is not its size in bytes
    {"args": bytearray(b"{}")},
], ids=_odd_id)
def test_extract_declines_what_only_python_handles(odd):
    events = [_plain(), _plain(**odd)]
    assert extract(events, {}) is None
    assert extract(events[:1], {}) is not None


@needs_c
def test_extract_declines_objects_that_are_not_the_first_ones_type():
    class Other(msgspec.Struct):
        ph: object = None

    class Sub(Event):  # the same layout, but only the first object's exact type is read by offset
        pass

    assert extract([_plain(), Sub(ph="X", args=msgspec.Raw(b""))], {}) is None
    assert extract([_plain(), Other()], {}) is None
    assert extract([Other()], {}) is None  # no such fields as slots: not read blindly
    assert extract([object()], {}) is None
    with pytest.raises(TypeError):
        extract((_plain(),), {})


@needs_c
def test_int_subclasses_are_not_read_as_ints():
    class Weird(int):
        def __float__(self) -> float:
            return 0.25

    assert extract([_plain(ts=Weird(3))], {}) is None


@pytest.mark.parametrize("env, pure", [("1", True), ("0", False), ("", False)])
def test_pure_python_switch_disables_the_helper(env, pure, monkeypatch):
    """VTUI_PURE_PYTHON is read at the edge (LoadOptions) and reaches the sink as an argument."""
    from vtui.options import LoadOptions

    assert LoadOptions.from_environ({"VTUI_PURE_PYTHON": env}).pure_python is pure
    calls = []
    monkeypatch.setattr(columns, "_extract", lambda evs, kinds: calls.append(len(evs)))  # None: Python path
    sink = ColumnSink(pure_python=pure)
    sink.add([_plain(ts=1.0), _plain(ts=2.0)])
    assert calls == ([] if pure else [2]) and len(sink.finish()) == 2
