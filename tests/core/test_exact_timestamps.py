"""Timestamps too large for a double to hold to the ns (epoch µs) are read exactly from their text.

The oracle is plain Python over the raw JSON with ``decimal``: each X slice's start, end and self
time (duration minus the union of its direct children, the parent being the latest earlier slice
on the thread that contains it) must equal vtui's to the ns.
"""

from __future__ import annotations

import gzip
import json
import random
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import msgspec
import numpy as np
import pytest

from tests.helpers import SHARED_TRACES
from vtui.io.columns import ColumnSink
from vtui.io.exactts import NO_NS, texts_to_ns
from vtui.io.jsonscan import decode_range, scan_trace
from vtui.load.trace import load_trace

SHARED = SHARED_TRACES / "public"
HTA_EPOCH = SHARED / "hta__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
BASE = 1_700_000_000_000_000  # µs since 1970: a double holds 0.25 µs steps here


def _ns(value: Decimal) -> int:
    return int((value * 1000).to_integral_value(ROUND_HALF_EVEN))


def _decimal_events(text: str | bytes) -> list[dict]:
    doc = json.loads(text, parse_float=Decimal, parse_int=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _timed(e: dict) -> bool:
    """An event that has a time by the README's rules: not metadata, a number ts, and not an X
    with a negative dur (skipped, as Perfetto skips it)."""
    if e.get("ph") == "M" or not isinstance(e.get("ts"), Decimal):
        return False
    return not (e.get("ph") == "X" and isinstance(e.get("dur"), Decimal) and e["dur"] < 0)


def _oracle(events: list[dict]) -> dict[int, tuple[int, int, int]]:
    """Per X event (by its position in the file): (start ns, end ns, self ns), relative to the
    smallest ts of any timed event. An X with no dur runs to the trace end (the latest end of
    any timed event); one with a negative dur is no slice."""
    origin = _ns(min(e["ts"] for e in events if _timed(e)))

    def own_end(e: dict) -> int:
        dur = e.get("dur")
        return _ns(e["ts"]) - origin + (_ns(dur) if isinstance(dur, Decimal) and dur >= 0 else 0)

    trace_end = max(own_end(e) for e in events if _timed(e))
    by_thread: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    for k, e in enumerate(events):
        if e.get("ph") != "X" or not _timed(e):
            continue
        start = _ns(e["ts"]) - origin  # on the absolute ns grid, as Perfetto rounds
        end = own_end(e) if isinstance(e.get("dur"), Decimal) else trace_end
        by_thread.setdefault((repr(e.get("pid")), repr(e.get("tid"))), []).append((start, end, k))
    out = {}
    for slices in by_thread.values():
        slices.sort(key=lambda s: (s[0], s[0] - s[1], s[2]))  # by start, longer first, file order
        children: dict[int, list[tuple[int, int]]] = {k: [] for _, _, k in slices}
        stack: list[tuple[int, int, int]] = []
        for s in slices:
            while stack and stack[-1][1] < s[1]:
                stack.pop()  # ends before this one does: not its container
            if stack:
                children[stack[-1][2]].append((s[0], s[1]))
            stack.append(s)
        for start, end, k in slices:
            covered, reach = 0, start
            for a, b in sorted(children[k]):
                a, b = max(a, reach), min(b, end)
                if b > a:
                    covered += b - a
                    reach = b
            out[k] = (start, end, end - start - covered)
    return out


def _vtui(store) -> dict[int, tuple[int, int, int]]:
    s = store.slices
    self_ = store.self_ns
    return {int(s.ordinal[r]): (int(s.start_ns[r]), int(s.end_ns[r]), int(self_[r])) for r in range(len(s))}


def _us(value: int, decimals: int = 3) -> str:
    """µs text with ``decimals`` decimals (3: ns, as profilers write it) from a count of 10**-decimals µs."""
    unit = 10**decimals
    return f"{value // unit}.{value % unit:0{decimals}d}"


def _synthetic_trace(seed: int = 7, threads: int = 3, per_thread: int = 400, base: int = BASE, decimals: int = 3) -> str:
    """Nested X slices on a few threads at ``base`` µs, written as text (a double would round
    them), then a top-level key with a list so the array's tail is walked too. Times are counted
    in 10**-decimals µs."""
    rng = random.Random(seed)
    parts = ['{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"p"}}']
    unit = 10**decimals
    for tid in range(1, threads + 1):
        t = base * unit + rng.randrange(unit)
        open_ends: list[int] = []
        for _ in range(per_thread):
            while open_ends and (open_ends[-1] <= t or rng.random() < 0.3):
                t = max(t, open_ends.pop()) + rng.randrange(3)
            limit = open_ends[-1] - t if open_ends else 50 * unit
            if limit <= 0:
                continue
            dur = rng.choice([0, 1, limit, rng.randrange(limit + 1)])  # 1 ns and "ends with its parent" on purpose
            parts.append(f'{{"ph":"X","cat":"cpu_op","name":"op{rng.randrange(20)}","pid":1,"tid":{tid},'
                         f'"ts":{_us(t, decimals)},"dur":{_us(dur, decimals)},"args":{{"k":[{{"a":1}},{{"b":2}}]}}}}')
            open_ends.append(t + dur)
            t += rng.randrange(1, 4)
    parts.append(f'{{"ph":"i","name":"mark","pid":1,"tid":1,"s":"t","ts":{_us(base * unit + 5, decimals)}}}')
    return '{"traceEvents":[\n' + ",\n".join(parts) + '\n],"distributedInfo":{"ranks":[0,1]}}'


def test_texts_to_ns_equals_decimal():
    rng = random.Random(3)
    texts = []
    for _ in range(5000):
        kind = rng.random()
        if kind < 0.6:
            texts.append(f"{rng.randrange(10**16)}.{rng.randrange(10 ** rng.randint(1, 8))}")
        elif kind < 0.7:
            texts.append(str(rng.randrange(-10**15, 10**15)))
        elif kind < 0.8:
            texts.append(f"-{rng.randrange(10**15)}.{rng.randrange(10**6)}")
        elif kind < 0.9:
            texts.append(f"{rng.random() * 1e15:e}")
        else:
            texts.append(rng.choice(["0.0005", "0.0015", "2.0005", "-0.0005", "1.00050001", '"12.5"', "1E3",
                                     "9223372036854775.807"]))
    got = texts_to_ns([t.encode() for t in texts])
    expected = [_ns(Decimal(json.loads(t) if t.startswith('"') else t)) for t in texts]
    expected = [v if NO_NS < v < 2**63 else NO_NS for v in expected]  # past int64: no exact value
    assert got.tolist() == expected
    # No value, or none that fits: the double is used instead.
    assert texts_to_ns([b"", b"null", b'"abc"', b"true", b"9223372036854775.808", b"1e400"]).tolist() == [NO_NS] * 6


def test_epoch_trace_slices_and_self_times_are_exact(tmp_path: Path):
    text = _synthetic_trace()
    path = tmp_path / "epoch.json"
    path.write_text(text)
    store = load_trace(path, cache=False)
    expected = _oracle(_decimal_events(text))
    got = _vtui(store)
    assert got == expected
    assert store.nesting_tolerance_ns == 0
    assert store.overlapping_slices == 0  # nothing partly overlaps in the file, so nothing does here
    # The double path would not be exact here: the trace really needs the text.
    doubles = [float(e["ts"]) for e in _decimal_events(text) if e.get("ph") == "X"]
    assert any(round((d - BASE) * 1000) % 250 == 0 for d in doubles)


def test_sub_ns_digits_round_half_to_even_on_the_absolute_grid(tmp_path: Path):
    # Fuchsia writes µs with 4 decimals near 1.1e12: a double holds them, but how x.5 ns rounds
    # would be up to its noise; the text decides (half to even), on the absolute ns grid.
    text = _synthetic_trace(seed=11, base=1_124_609_194_129, decimals=4)
    path = tmp_path / "subns.json"
    path.write_text(text)
    store = load_trace(path, cache=False)
    assert _vtui(store) == _oracle(_decimal_events(text))


def test_rows_that_end_with_their_parent_nest_exactly(tmp_path: Path):
    # The parent starts at .001 (a double reads .0) and ends with its child at 10.001.
    events = [f'{{"ph":"X","name":"parent","pid":1,"tid":1,"ts":{BASE}.001,"dur":10.000}}',
              f'{{"ph":"X","name":"child","pid":1,"tid":1,"ts":{BASE + 5}.000,"dur":5.001}}']
    path = tmp_path / "t.json"
    path.write_text("[" + ",".join(events) + "]")
    store = load_trace(path, cache=False)
    by_name = {store.name(r): r for r in range(len(store.slices))}
    s = store.slices
    assert s.parent[by_name["child"]] == by_name["parent"]
    assert (s.start_ns[by_name["parent"]], s.end_ns[by_name["parent"]]) == (0, 10_000)
    assert (s.start_ns[by_name["child"]], s.end_ns[by_name["child"]]) == (4_999, 10_000)
    assert store.self_ns[by_name["parent"]] == 10_000 - 5_001


def test_ranges_decoded_apart_keep_exact_times():
    # The parallel decoder's workers decode byte ranges into their own sinks, then absorb in order.
    data = _synthetic_trace(per_thread=200).encode()
    whole = ColumnSink()
    scan_trace(data, whole)
    expected = whole.finish()
    start = data.index(b"[") + 1
    start = data.index(b"{", start)
    cut = data.index(b"},\n{", len(data) // 2) + 1
    first, joined = ColumnSink(), ColumnSink()
    assert decode_range(data, start, cut, first) == cut
    joined.absorb(_as_file_args(first.finish()))
    rest = ColumnSink()
    scan_trace(b"[" + data[cut + 2 : data.rindex(b"]")] + b"]", rest)
    joined.absorb(_as_file_args(rest.finish()))
    got = joined.finish()
    assert got.ts_ns is not None and expected.ts_ns is not None
    assert np.array_equal(got.ts_ns, expected.ts_ns)
    x = np.isfinite(expected.ts) & (expected.ts > 0)
    assert (expected.ts_ns[x] != NO_NS).all()


def _as_file_args(cols):
    cols.args_blob = b""  # absorb() takes columns whose args went to a shared file
    return cols


def test_decoded_chunks_take_their_times_from_the_text_once():
    from vtui.io.jsonscan import _DECODER

    text = b'[{"ph":"X","name":"a","pid":1,"tid":1,"ts":5188983415106.1455,"dur":1.5005}]'
    events = _DECODER.decode(text)
    sink = ColumnSink()
    sink.add(events)
    sink.keep_exact_ts(events, lambda: pytest.fail("the decoder kept the text: no second read"))
    cols = sink.finish()
    assert cols.ts_ns.tolist() == [5188983415106146] and cols.dur_ns.tolist() == [1500]  # half to even


@pytest.mark.skipif(not HTA_EPOCH.is_file(), reason="shared traces not present (the synthetic tests cover this)")
def test_hta_epoch_trace_self_times_equal_a_decimal_computation():
    store = load_trace(HTA_EPOCH, cache=False)
    with gzip.open(HTA_EPOCH, "rb") as fh:
        expected = _oracle(_decimal_events(fh.read()))
    got = {k: v for k, v in _vtui(store).items() if k in expected}
    assert got == expected
    assert store.nesting_tolerance_ns == 0


def test_integer_epoch_times_are_exact_without_reading_the_text_again():
    from vtui.io.jsonscan import _DECODER

    text = b'[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1623142623636299,"dur":12},{"ph":"i","name":"b","ts":null}]'
    events = _DECODER.decode(text)
    sink = ColumnSink()
    sink.add(events)
    sink.keep_exact_ts(events, lambda: pytest.fail("integers are exact as doubles: no second read"))
    assert sink.finish().ts_ns.tolist() == [1623142623636299000, NO_NS]


def test_sub_ns_digits_in_one_rank_and_the_origin_in_another(tmp_path: Path):
    # The origin (rank a, whole ns) is held by a double; rank b's sub-ns digits are read from the
    # text, and both meet on the absolute ns grid: 1000.0015 µs is 1_000_002 ns (half to even),
    # 2 ns after 1000 µs (a double computes (1000.0015 - 1000) × 1000 = 1.4999…, rounded to 1).
    folder = tmp_path / "ranks"
    folder.mkdir()
    (folder / "a.json").write_text('[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1000.000,"dur":1}]')
    (folder / "b.json").write_text('[{"ph":"X","name":"b","pid":1,"tid":1,"ts":1000.0015,"dur":1}]')
    store = load_trace(folder, cache=False)
    starts = {store.name(r): int(store.slices.start_ns[r]) for r in range(len(store.slices))}
    assert starts == {"a": 0, "b": 2}


def test_three_decimal_times_near_a_doubles_ns_step_are_exact():
    """Between 2**42 and 2**43 µs a double's step is ~1 ns: reading the text through a double
    would round some of these 1 ns off (``4458677117099.727`` came out ...726)."""
    from vtui.io.exactts import times_of

    rng = random.Random(7)
    texts = ["4458677117099.727"] + [f"{rng.randrange(2**41, 2**44)}.{rng.randrange(1000):03d}" for _ in range(20000)]
    ns, _us, _from_text = times_of([msgspec.Raw(t.encode()) for t in texts])
    assert ns.tolist() == [int(Decimal(t) * 1000) for t in texts]
