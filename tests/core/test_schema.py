"""The JSON scripts read: every ``--json`` output carries its ``schema_version``, matches its
published schema, and a schema change without a new version fails here."""

from __future__ import annotations

import json
import re

import msgspec
import pytest

from tests.helpers import FIXTURES, QWEN, raw_events
from vtui.cli import main
from vtui.present.schema import OUTPUTS, VERSIONS, encode, json_schema, typed
from vtui.store.slicetime import time_range

SNAPSHOTS = FIXTURES.parent / "vtui" / "data" / "schema"
KINETO = FIXTURES / "kineto__before_fix_trace.json"


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_each_schema_is_its_versions_snapshot(name):
    """A field added, renamed, removed or retyped changes the generated schema: then the current
    version's snapshot differs, and the fix is a new version (scripts/schema_snapshots.py)."""
    path = SNAPSHOTS / f"{name}.v{VERSIONS[name]}.json"
    assert path.exists(), f"no snapshot for {name} v{VERSIONS[name]}: run python scripts/schema_snapshots.py"
    assert canonical(json.loads(path.read_text())) == canonical(json_schema(name)), (
        f"the {name} --json schema changed without a version bump: raise VERSIONS[{name!r}] in "
        "vtui/present/schema.py and run python scripts/schema_snapshots.py")


def canonical(schema):
    """The schema with each ``required`` list sorted: its order says nothing (the printed JSON
    puts ``schema_version`` first, so it leads the fields and their ``required`` list)."""
    if isinstance(schema, dict):
        return {k: sorted(v) if k == "required" and isinstance(v, list) else canonical(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [canonical(v) for v in schema]
    return schema


def test_snapshots_compare_required_fields_as_a_set_only():
    """Only the order of ``required`` is forgiven: a field made optional still differs."""
    assert canonical({"required": ["b", "a"]}) == canonical({"required": ["a", "b"]})
    assert canonical({"required": ["b", "a"]}) != canonical({"required": ["a"]})


def test_a_changed_struct_changes_its_schema():
    """The snapshot comparison can fail: a renamed field gives another schema."""
    class Before(msgspec.Struct):
        launch_delay: int

    class After(msgspec.Struct):
        launch_delay_from_call_start: int

    assert msgspec.json.schema(Before)["$defs"]["Before"]["properties"] != \
        msgspec.json.schema(After)["$defs"]["After"]["properties"]


def dump(name: str, doc: dict) -> str:
    return encode(typed(name, doc))


def test_typed_refuses_a_key_the_schema_does_not_know():
    """A section added to the output but not to its Struct is an error, not silently printed."""
    doc = {"pattern": "x", "in_args": False, "count": 0, "total_ns": 0, "matches": []}
    assert json.loads(dump("search", doc))["schema_version"] == VERSIONS["search"]
    with pytest.raises(msgspec.ValidationError, match="unknown field"):
        dump("search", {**doc, "serving": {}})
    with pytest.raises(msgspec.ValidationError):
        dump("search", {**doc, "count": "0"})


def _cli_json(capsys, *args: str) -> dict:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name,args", [
    ("info", ["info", str(KINETO), "--json"]),
    ("insights", ["insights", str(KINETO), "--json"]),
    ("stats", ["stats", str(KINETO), "--format", "json"]),
    ("search", ["search", str(KINETO), "op", "--json"]),
    ("tree", ["tree", str(KINETO), "--format", "json"]),
    ("tree-diff", ["tree", str(KINETO), "--format", "json", "--against", str(KINETO)]),
    ("diff", ["diff", str(KINETO), str(KINETO), "--json"]),
])
def test_every_json_output_starts_with_its_version(capsys, name, args):
    out = _cli_json(capsys, *args)
    assert list(out)[0] == "schema_version" and out["schema_version"] == VERSIONS[name]
    msgspec.convert(out, OUTPUTS[name])  # and it is what the published schema says


def test_schema_command_prints_the_published_schema(capsys):
    assert _cli_json(capsys, "schema", "insights") == json_schema("insights")
    assert main(["schema"]) == 0
    listed = capsys.readouterr().out
    assert all(re.search(rf"^{re.escape(n)}\s+schema_version {VERSIONS[n]}$", listed, re.M) for n in OUTPUTS)


def test_insights_keeps_the_old_launch_delay_keys(capsys):
    """Schema 1 named them launch_delay / launch_delay_after_return; scripts reading those still work."""
    gpu = _cli_json(capsys, "insights", str(QWEN), "--json")["gpu"]
    assert gpu["launch_delay"] is not None and gpu["launch_delay"] == gpu["launch_delay_from_call_start"]
    assert gpu["launch_delay_after_return"] == gpu["launch_delay_from_call_end"]
    # from call start is never shorter than from call end: the two are not swapped
    assert gpu["launch_delay"]["mean_ns"] >= gpu["launch_delay_after_return"]["mean_ns"]


def test_stats_json_rows_are_the_raw_slices(capsys):
    out = _cli_json(capsys, "stats", str(KINETO), "--format", "json", "--by", "name")
    counts: dict[str, int] = {}
    for e in raw_events(KINETO):
        if e.get("ph") == "X":
            counts[e["name"]] = counts.get(e["name"], 0) + 1
    assert {r["name"]: r["count"] for r in out["rows"]} == counts
    assert out["slices"] == sum(counts.values()) and out["by"] == "name"


def test_summary_metrics_from_insights_are_the_same_numbers(qwen_store):
    """``insights_metrics`` reuses compute_insights' reports; ``summary_metrics`` computes them."""
    from vtui.analysis.report.insights import compute_insights, insights_metrics, summary_metrics

    span = int(qwen_store.span_ns)
    for t0, t1 in ((0, None), (span // 4, span // 2)):
        got = insights_metrics(compute_insights(qwen_store, time_range(qwen_store, t0, t1)))
        assert got == summary_metrics(qwen_store, time_range(qwen_store, t0, t1))
        assert got["span_ns"] == (span if t1 is None else t1) - t0 and got["step_count"] is not None
