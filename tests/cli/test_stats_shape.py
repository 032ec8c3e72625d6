"""`vtui stats --by shape`: an op grouped by its recorded Input Dims (and tensor types)."""

from __future__ import annotations

import json

from tests.helpers import QWEN, cli_json, raw_events, raw_origin, raw_span_ns


def test_by_shape_counts_and_totals_equal_a_plain_grouping(capsys):
    got = {r["name"]: r for r in cli_json(capsys, "stats", QWEN, "--by", "shape", "--format", "json")["rows"]}
    events = raw_events(QWEN)
    origin = raw_origin(events)
    want: dict = {}
    for e in events:
        a = e.get("args") or {}
        if e.get("ph") != "X" or "Input Dims" not in a:
            continue
        kinds = ",".join(t for t in a.get("Input type", []) if t and t != "Scalar")
        label = f"{e['name']} {json.dumps(a['Input Dims'], separators=(',', ':'))}" + (f" ({kinds})" if kinds else "")
        start, end = raw_span_ns(origin, e)
        acc = want.setdefault(label, [0, 0])
        acc[0] += 1
        acc[1] += end - start
    assert len(want) > 100
    for label, (count, total) in want.items():
        assert (got[label]["count"], got[label]["total_ns"]) == (count, total), label
    mm = [k for k in want if k.startswith("aten::mm [[8944,1024],[1024,1024]]")]
    assert mm == ["aten::mm [[8944,1024],[1024,1024]] (c10::BFloat16,c10::BFloat16)"]


def test_bad_grouping_names_shape(capsys):
    from vtui.cli import main

    assert main(["stats", str(QWEN), "--by", "shapes"]) != 0
    assert "shape" in capsys.readouterr().err


def test_insights_text_and_json_carry_the_roofline_and_the_critical_path(capsys):
    from tests.helpers import MI250
    from vtui.cli import main

    assert main(["insights", str(MI250)]) == 0
    out = capsys.readouterr().out
    assert "Roofline: 10 calls" in out and "device: unknown — device 'AMD Radeon Graphics' is not in" in out
    assert "Critical path per step:" in out
    j = cli_json(capsys, "insights", QWEN, "--json")
    assert j["roofline"]["device"]["name"] == "NVIDIA H100 SXM" and j["roofline"]["ops"][0]["name"] == "aten::mm"
    st = j["critical_path"]["steps"][0]
    assert st["cpu_ns"] + st["gpu_ns"] + st["wait_ns"] == st["path_ns"] and j["critical_path"]["bound"] == "gpu"


def test_by_shape_reads_the_shapes_through_shape_ids(capsys, monkeypatch):
    """One reader for one job: `--by shape` interns the shapes with ``shape_ids`` (C-backed), not
    a second msgspec decoder; the same rows as the pure-Python path of that reader."""
    import vtui.analysis.base.shapes as shapes

    calls = []
    real = shapes.shape_ids
    monkeypatch.setattr(shapes, "shape_ids", lambda store, rows, **kw: calls.append(len(rows)) or real(store, rows, **kw))
    fast = cli_json(capsys, "stats", QWEN, "--by", "shape", "--format", "json")["rows"]
    assert calls and calls[0] > 100
    monkeypatch.setattr(shapes, "shape_ids", lambda store, rows, **kw: real(store, rows, pure_python=True))
    assert cli_json(capsys, "stats", QWEN, "--by", "shape", "--format", "json")["rows"] == fast
