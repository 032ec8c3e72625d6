"""Whitespace runs in a trace (before the closing ``]``, between events, after the array) are
skipped in blocks stripped in C, not a byte at a time in Python (100 MB of spaces took 15 s),
and junk after the array is found without copying the tail."""

from __future__ import annotations

import json
import random

from vtui.io.jsonbytes import WS as _WS
from vtui.io.jsonbytes import rskip as _rskip
from vtui.io.jsonbytes import skip as _skip
from vtui.load.trace import load_trace


class Counting:
    """Bytes that count how often they are indexed or sliced."""

    def __init__(self, data: bytes) -> None:
        self.data, self.calls = data, 0

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, key):
        self.calls += 1
        return self.data[key]


def naive_skip(data: bytes, pos: int, chars: bytes) -> int:
    while pos < len(data) and data[pos] in chars:
        pos += 1
    return pos


def naive_rskip(data: bytes, end: int, chars: bytes) -> int:
    while end > 0 and data[end - 1] in chars:
        end -= 1
    return end


def test_skips_equal_a_byte_at_a_time():
    rng = random.Random(7)
    for _ in range(300):
        data = bytes(rng.choice(b" \t\r\n,x]") for _ in range(rng.randrange(0, 3000)))
        pos = rng.randrange(0, len(data) + 1)
        for chars in (_WS, _WS + b","):
            assert _skip(data, pos, chars) == naive_skip(data, pos, chars)
            assert _rskip(data, pos, chars) == naive_rskip(data, pos, chars)


def test_a_megabyte_of_spaces_is_a_few_block_reads():
    data = Counting(b"[" + b" " * 1_000_000 + b"]")
    assert _rskip(data, len(data) - 1, _WS) == 1 and data.calls < 20
    data.calls = 0
    assert _skip(data, 1, _WS) == len(data) - 1 and data.calls < 20


def test_spaces_before_the_close_and_junk_after_it_load_the_events(tmp_path):
    events = [{"ph": "X", "name": f"e{i}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5} for i in range(50)]
    body = json.dumps(events)
    spaced = tmp_path / "spaced.json"
    spaced.write_text(body[:-1] + " \n" * 2_000_000 + "]")
    junk = tmp_path / "junk.json"
    junk.write_bytes(body.encode() + b"\0" * 5_000_000)
    for path in (spaced, junk):
        store = load_trace(path, cache=False)
        assert len(store.slices) == 50
    assert load_trace(junk, cache=False).warnings == ["ignored data after the closing ] of the event array"]
