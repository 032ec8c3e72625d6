"""Times exact to the ns from the decimal text: starts, durations and self times equal
``Decimal`` arithmetic over the same strings — a three-event case, random decimal µs
strings at three magnitudes, and `vtui stats` on every fixture and shared trace.

The oracle is plain Python: each ``ts``/``dur`` string read by ``Decimal``, rounded to the ns
half to even, the origin subtracted in integers; nesting and self time by the README's rule
(tests/core/test_exact_timestamps.py ``_oracle``).
"""

from __future__ import annotations

import gzip
import json
import os
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.test_exact_timestamps import _decimal_events, _oracle, _vtui
from tests.helpers import FIXTURES, SHARED_TRACES, cli_json
from vtui.load.trace import load_trace

THREE_EVENTS = """{"traceEvents": [
 {"ph": "i", "s": "g", "name": "start", "pid": 1, "tid": 1, "ts": 6520367067263.070},
 {"ph": "X", "name": "parent", "pid": 1, "tid": 1, "ts": 6520367067330.261, "dur": 174324.353},
 {"ph": "X", "name": "child",  "pid": 1, "tid": 1, "ts": 6520367067332.571, "dur": 174322.043}]}"""


def test_the_issues_three_event_case_gives_the_parent_its_2310_ns(tmp_path, capsys):
    path = tmp_path / "three.json"
    path.write_text(THREE_EVENTS)
    rows = {r["name"]: r for r in cli_json(capsys, "stats", path, "--no-cache", "--format", "json")["rows"]}
    assert rows["parent"]["self_ns"] == 2_310 and rows["parent"]["total_ns"] == 174_324_353
    assert rows["child"]["self_ns"] == 174_322_043
    store = load_trace(path, cache=False)
    ends = {store.name(r): int(store.slices.end_ns[r]) for r in range(len(store.slices))}
    assert ends == {"parent": 174_391_544, "child": 174_391_544}  # both end together: a child, not a sibling
    assert store.nesting_tolerance_ns == 0


def _text(units: int, decimals: int) -> str:
    """µs text of ``units`` 10**-decimals µs (``decimals`` 0: an integer)."""
    if not decimals:
        return str(units)
    scale = 10**decimals
    return f"{units // scale}.{units % scale:0{decimals}d}"


@st.composite
def _nested_trace(draw) -> str:
    """X slices on two threads near one of three magnitudes: children inside parents, some
    ending exactly with them, some 1 unit apart; fraction digits 0 to 6 (per event)."""
    base_us = draw(st.sampled_from([10**9, 5 * 10**12, 17 * 10**14])) + draw(st.integers(0, 10**6))
    events = []
    for tid in (1, 2):
        decimals = draw(st.integers(0, 6))
        scale = 10**decimals
        t = base_us * scale + draw(st.integers(0, scale))
        for _ in range(draw(st.integers(1, 4))):
            dur = draw(st.integers(0, 50 * scale))
            events.append((tid, t, dur, decimals))
            inner, room = t, dur
            for _ in range(draw(st.integers(0, 3))):
                shape = draw(st.sampled_from(["same_end", "inside", "tiny"]))
                off = draw(st.integers(0, room))
                d = room - off if shape == "same_end" else draw(st.integers(0, room - off)) if shape == "inside" else min(1, room - off)
                events.append((tid, inner + off, d, decimals))
                inner, room = inner + off, d
            t += dur + draw(st.integers(0, 3))
    parts = [f'{{"ph":"X","name":"s{k % 5}","pid":1,"tid":{tid},"ts":{_text(ts, dec)},"dur":{_text(dur, dec)}}}'
             for k, (tid, ts, dur, dec) in enumerate(events)]
    return '{"traceEvents":[' + ",".join(parts) + "]}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=_nested_trace())
def test_random_decimal_times_are_exact_to_the_ns(tmp_path, text):
    path = tmp_path / "t.json"
    path.write_text(text)
    store = load_trace(path, cache=False)
    assert _vtui(store) == _oracle(_decimal_events(text))


# ---- `vtui stats` on every fixture and shared trace ------------------------------------------------
# Every fixture, and the shared traces up to this size on disk (the oracle's Decimal parse and
# per-slice walk take ~1 s per MB compressed); VTUI_TESTS_ALL_TRACES=1 takes every shared trace.
SHARED_LIMIT = (1 << 40) if os.environ.get("VTUI_TESTS_ALL_TRACES") == "1" else 1 << 20


def _traces() -> list[Path]:
    found = [(p, 1 << 40) for p in sorted(FIXTURES.glob("*.json*"))]
    for sub in ("public", "generated"):
        found += [(p, SHARED_LIMIT) for p in sorted((SHARED_TRACES / sub).glob("*.json*"))]
    seen, out = set(), []
    for p, limit in found:
        if p.name not in seen and p.stat().st_size < limit:
            seen.add(p.name)
            out.append(p)
    return out


def _ns(text: Decimal) -> int:
    return int((text * 1000).to_integral_value(ROUND_HALF_EVEN))


def _key(value):
    """pid/tid as the README's rule keys threads (digit-only string tids are ints)."""
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value


def _expected_stats(events: list[dict]) -> tuple[dict, dict]:
    """Per name (X events only): (count, total ns); and self ns for names whose every slice sits
    on a thread that holds only X slices (B/E pairs there would be children the oracle does not
    pair)."""
    threads_with_pairs = set()
    for e in events:
        if e.get("ph") in ("B", "E"):
            threads_with_pairs.add(_thread(e))
    count: dict = defaultdict(int)
    total: dict = defaultdict(int)
    selfs = _oracle([{**e, "pid": _thread(e)[0], "tid": _thread(e)[1]} if e.get("ph") == "X" else e for e in events])
    self_by: dict = defaultdict(int)
    mixed = set()
    for k, (start, end, own) in selfs.items():  # the X slices (README: no dur runs to the end)
        e = events[k]
        count[e.get("name")] += 1
        total[e.get("name")] += end - start
        self_by[e.get("name")] += own
        if _thread(e) in threads_with_pairs:
            mixed.add(e.get("name"))
    return {n: (count[n], total[n]) for n in count}, {n: v for n, v in self_by.items() if n not in mixed}


def _thread(e: dict) -> tuple:
    pid = e.get("pid")
    pid = int(pid) if isinstance(pid, Decimal) and pid == pid.to_integral_value() else pid
    tid = _key(e.get("tid"))
    if tid is None and pid is not None:
        tid = pid
    return (repr(pid), repr(tid))


@pytest.mark.parametrize("path", _traces(), ids=lambda p: p.name)
def test_stats_count_total_and_self_equal_a_decimal_computation(path, capsys):
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        events = _decimal_events(raw)
    except (ValueError, json.JSONDecodeError):
        pytest.skip("not strict JSON (a cut or lenient file): the oracle reads strict JSON only")
    if not isinstance(events, list):
        pytest.skip("no event list")
    events = [e for e in events if isinstance(e, dict)]
    x_names = {e.get("name") for e in events if e.get("ph") == "X"}
    other_names = {e.get("name") for e in events if e.get("ph") in ("B", "E", "b", "e", "S", "F")}
    counts, selfs = _expected_stats(events)
    rows = cli_json(capsys, "stats", path, "--no-cache", "--format", "json")["rows"]
    got = {r["name"]: r for r in rows}
    checked = 0
    for name in x_names - other_names:
        if not isinstance(name, str) or name not in got or name == "":
            continue
        assert (got[name]["count"], got[name]["total_ns"]) == counts[name], name
        if name in selfs:
            assert got[name]["self_ns"] == selfs[name], name
        checked += 1
    assert checked or not (x_names - other_names)


def test_a_display_time_unit_of_ns_changes_no_time(tmp_path):
    # displayTimeUnit only picks the display unit (Catapult; Perfetto ignores it): ts stays µs.
    text = ('{"displayTimeUnit":"ns","traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":5188983415106.1455,'
            '"dur":2.0015},{"ph":"X","name":"b","pid":1,"tid":1,"ts":5188983415106.146,"dur":1}]}')
    path = tmp_path / "ns.json"
    path.write_text(text)
    store = load_trace(path, cache=False)
    assert _vtui(store) == _oracle(_decimal_events(text))
    spans = {store.name(r): (int(store.slices.start_ns[r]), int(store.slices.end_ns[r])) for r in range(len(store.slices))}
    assert spans == {"a": (0, 2_002), "b": (0, 1_000)}  # .1455 → .146 (half to even), 2.0015 → 2002 ns
