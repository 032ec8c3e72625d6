"""`vtui info`: the facts of a load, and one clear line on bad input."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, QWEN, ROOT, raw_events
from vtui.cli import main


def test_info_json_reports_counts(capsys):
    assert main(["info", str(QWEN), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    events = raw_events(QWEN)
    assert info["events"] == len(events) == 18221
    phases: dict[str, int] = {}
    for e in events:
        phases[e["ph"]] = phases.get(e["ph"], 0) + 1
    assert info["by_phase"] == phases
    assert info["slices"] == phases["X"]
    assert info["repaired"] is False
    assert isinstance(info["tracks"], int) and info["tracks"] == len(info["track_list"])
    origin = min(e["ts"] for e in events if e["ph"] != "M")
    end = max(e["ts"] + e.get("dur", 0) for e in events if e["ph"] != "M")
    assert abs(info["span_ns"] - (end - origin) * 1000) <= 2
    assert isinstance(info["warnings"], list)


def test_info_text_mentions_tracks_and_warnings(capsys):
    assert main(["info", str(FIXTURES / "catapult__main_thread_has_unclosed_slices.json")]) == 0
    out = capsys.readouterr().out
    assert "array form" in out and "1,684 slices" in out
    assert "never closed" in out


def test_info_on_truncated_file_says_repaired(capsys):
    assert main(["info", str(FIXTURES / "speedscope__simple-partial-trailing-comma.json"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["repaired"] is True and info["events"] == 6


def _bad_inputs(tmp: Path) -> dict[str, Path]:
    (tmp / "empty.json").write_bytes(b"")
    (tmp / "ws.json").write_bytes(b"  \n\t ")
    (tmp / "notjson.json").write_bytes(b"hello world")
    (tmp / "number.json").write_bytes(b"42")
    (tmp / "noevents.json").write_bytes(b'{"foo": 1}')
    (tmp / "empty_array.json").write_bytes(b"[]")
    (tmp / "corrupt.json.gz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(200))
    (tmp / "folder").mkdir()
    (tmp / "folder" / "readme.txt").write_text("no traces here")
    return {p.name: p for p in [*tmp.iterdir(), tmp / "missing.json"]}


@pytest.mark.parametrize("name", ["empty.json", "ws.json", "notjson.json", "number.json", "noevents.json",
                                  "empty_array.json", "corrupt.json.gz", "folder", "missing.json"])
def test_bad_input_exits_nonzero_with_one_line(tmp_path: Path, name: str):
    path = _bad_inputs(tmp_path)[name]
    result = subprocess.run([sys.executable, "-m", "vtui", "info", str(path)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vtui: error:"), result.stderr
    assert "Traceback" not in result.stderr


def test_gzip_and_plain_give_the_same_store(tmp_path: Path):
    plain = tmp_path / "t.json"
    plain.write_bytes(gzip.decompress(QWEN.read_bytes()))
    from vtui.load.trace import load_trace

    a, b = load_trace(QWEN), load_trace(plain)
    assert a.event_count == b.event_count and len(a.slices) == len(b.slices)
    assert (a.slices.start_ns == b.slices.start_ns).all()
