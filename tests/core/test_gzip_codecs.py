"""Gzip traces read the same with ISA-L (when installed) and with the standard library's zlib:
whole, cut at many points, corrupt in the middle, and as concatenated members."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest

from vtui.errors import TraceLoadError
from vtui.io import reader
from vtui.load.trace import load_trace

CODECS = ["zlib"]
try:
    from isal import isal_zlib  # noqa: F401

    CODECS.append("isal")
except ImportError:
    pass


def _use(monkeypatch, codec: str) -> None:
    if codec == "zlib":
        monkeypatch.setattr(reader, "_gzip_codec", zlib)
        monkeypatch.setattr(reader, "_INFLATE_ERRORS", (zlib.error,))
    else:
        from isal import isal_zlib

        monkeypatch.setattr(reader, "_gzip_codec", isal_zlib)
        monkeypatch.setattr(reader, "_INFLATE_ERRORS", (zlib.error, isal_zlib.error))


def _trace(n: int) -> bytes:
    events = [{"ph": "X", "name": f"op{i % 9}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5, "args": {"i": i}}
              for i in range(n)]
    return json.dumps({"traceEvents": events}).encode()


def _outcome(path) -> tuple:
    try:
        store = load_trace(path, cache=False)
    except TraceLoadError as exc:
        return ("error", str(exc).split(" (")[0])  # the codec's own detail in brackets may differ
    return (len(store.slices), store.sources[0].repaired, tuple(w.split(" after ")[0] for w in store.warnings))


@pytest.mark.parametrize("codec", CODECS)
def test_gzip_outcomes_match_the_standard_library(tmp_path, monkeypatch, codec):
    raw = _trace(400)
    whole = gzip.compress(raw)
    cases = {"whole": whole, "two members": gzip.compress(raw[:5000]) + gzip.compress(raw[5000:]),
             "corrupt middle": whole[: len(whole) // 2] + bytes(64) + whole[len(whole) // 2 + 64:]}
    cases.update({f"cut {k}": whole[:k] for k in range(20, len(whole), max(1, len(whole) // 25))})
    outcomes = {}
    for mode in ("zlib", codec):
        _use(monkeypatch, mode)
        got = {}
        for name, data in cases.items():
            path = tmp_path / f"{name}.json.gz"
            path.write_bytes(data)
            got[name] = _outcome(path)
        outcomes[mode] = got
    assert outcomes[codec] == outcomes["zlib"]
    assert outcomes["zlib"]["whole"] == (400, False, ())
    assert outcomes["zlib"]["two members"][0] == 400
