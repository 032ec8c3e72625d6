"""``vtui search --json`` is written piece by piece: the pieces make the same JSON at any chunk
size, and the matches are the raw file's."""

from __future__ import annotations

import json
import re

from tests.helpers import QWEN, raw_events, raw_origin
from vtui.analysis.slices.search import search
from vtui.cli import main
from vtui.present.search_json import search_json_parts


def test_pieces_join_to_one_document_at_any_chunk_size(qwen_store):
    result = search(qwen_store, "aten::")
    assert result.count > 1000
    whole = json.loads("".join(search_json_parts(qwen_store, result)))
    for chunk in (1, 7, 1000):
        parts = list(search_json_parts(qwen_store, result, chunk=chunk))
        assert len(parts) == 2 + -(-result.count // chunk)  # header, one piece per chunk, end
        assert json.loads("".join(parts)) == whole
    assert whole["count"] == len(whole["matches"]) == result.count


def test_search_json_matches_the_raw_events(capsys):
    assert main(["search", str(QWEN), "aten::(mm|addmm)$", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    events = raw_events(QWEN)
    origin = raw_origin(events)
    pattern = re.compile("aten::(mm|addmm)$")
    want = sorted((round((e["ts"] - origin) * 1000), e["name"], round(e["dur"] * 1000)) for e in events
                  if e.get("ph") == "X" and pattern.search(e["name"]))
    got = sorted((m["start_ns"], m["name"], m["dur_ns"]) for m in out["matches"])
    assert len(want) > 10 and got == want
    assert out["total_ns"] == sum(d for _, _, d in want) and out["count"] == len(want)
    starts = [m["start_ns"] for m in out["matches"]]
    assert starts == sorted(starts)  # time order


def test_hostile_names_stay_escaped_json(tmp_path, capsys):
    trace = tmp_path / "t.json"
    names = ["a\x1b]0;pwn\x07", "b\x9bc", "c\u202ed"]
    trace.write_text(json.dumps([{"ph": "X", "name": n, "ts": i, "dur": 1, "pid": 1, "tid": 1}
                                 for i, n in enumerate(names)]))
    assert main(["search", str(trace), ".", "--json"]) == 0
    raw = capsys.readouterr().out
    assert "\x1b" not in raw and "\x9b" not in raw
    assert [m["name"] for m in json.loads(raw)["matches"]] == names
