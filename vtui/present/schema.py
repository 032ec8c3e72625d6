"""The JSON that scripts read: one msgspec Struct per ``--json`` output, each with its own
``schema_version``.

Each command's ``compute(options)`` returns its output's Struct (the report); the ``--json`` /
``--format json`` text is ``encode(report)`` (msgspec's encoding, indented) and the MCP tool pages
``builtins(report)``. A report built from a dict goes through ``typed(name, doc)``: an unknown
key, a missing key or a wrong type is an error, so what is printed always matches the published
schema (``vtui schema NAME``). A test
compares each output's generated JSON Schema with its checked-in snapshot
(``vtui/data/schema/NAME.vN.json``); a changed field without a new ``N`` fails it.

Adding a section to insights whose analysis already returns a msgspec Struct is one line in
``Insights`` below (``serving: ServingReport | None = None``): ``insights_out`` copies any field
it does not build itself from the ``compute_insights`` result's attribute of the same name. Then
bump ``VERSIONS["insights"]`` and run ``python scripts/schema_snapshots.py``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from vtui.analysis.ranks.analyse import (
    Alignment,
    CollectiveRow,
    ExposedRow,
    RankRow,
    StepRow,
    Straggler,
)
from vtui.present.health_json import HealthItemOut
from vtui.present.schema_base import Out, Strict
from vtui.present.schema_diff import Diff, TreeDiff
from vtui.present.schema_insights import Insights
from vtui.safe_text import json_safe, json_text

Id = int | str | None  # pid / tid as written (numbers, strings or absent)


# ---- vtui info --json --------------------------------------------------------------------------

class Source(Strict):
    path: str
    label: str
    form: str
    repaired: bool
    events: int
    by_phase: dict[str, int]
    metadata_keys: list[str]


class DecodeChunks(Strict):
    chunks: int  # event chunks decoded
    compiled_helper: int  # of them, read by the optional C helper (the rest: the pure-Python path)


class TrackInfo(Strict):
    id: int
    kind: str
    pid: Id
    tid: Id
    process: str
    name: str
    slices: int
    instants: int
    counter_samples: int
    lanes: int
    overlapping: int


class Info(Out):
    sources: list[Source]
    form: str
    repaired: bool
    events: int
    by_phase: dict[str, int]
    tracks: int
    slices: int
    instants: int
    counter_samples: int
    flows: int
    span_ns: int
    origin_us: float
    overlapping_slices: int
    nesting_tolerance_ns: int
    decode_chunks: DecodeChunks
    warnings: list[str]
    health: list[HealthItemOut]
    track_list: list[TrackInfo]


# ---- vtui stats --format json ------------------------------------------------------------------

class AggRowOut(Strict):
    name: str
    count: int
    total_ns: int
    self_ns: int
    avg_ns: float
    min_ns: int
    max_ns: int
    pct: float


class Stats(Out):
    by: str
    t0_ns: int
    t1_ns: int
    slices: int
    tracks: int
    rows: list[AggRowOut]


# ---- vtui search --json ------------------------------------------------------------------------

class Match(Strict):
    name: str
    track: str
    start_ns: int
    dur_ns: int


class Search(Out):
    pattern: str
    in_args: bool
    count: int
    total_ns: int
    matches: list[Match]


# ---- vtui tree --format json -------------------------------------------------------------------

class TreeNode(Strict):
    path: list[str]
    name: str
    count: int
    total_ns: int
    self_ns: int
    gpu_ns: int
    gpu_self_ns: int
    pct: float
    children: list[TreeNode]


class TreeGpu(Strict):
    present: bool
    total_ns: int
    attributed_ns: int
    outside_ns: int
    unknown_ns: int


class HandOver(Strict):
    name: str
    count: int
    total_ns: int
    python_depth: int
    path: list[str]
    self_ns: int


class TreeFinding(Strict):
    kind: str
    message: str
    path: list[str]
    total_ns: int


class HandOverReport(Strict):
    present: bool
    python_self_ns: int
    op_total_ns: int
    python_pct: float
    median_depth: float
    handovers: list[HandOver]
    steps: int
    step_name: str
    findings: list[TreeFinding]


class Tree(Out, omit_defaults=True):
    t0_ns: int
    t1_ns: int
    inverted: bool
    weight: str
    slices: int
    nodes: int
    gpu: TreeGpu
    roots: list[TreeNode]
    handover: HandOverReport | None = None  # only with --handover


# ---- the registry ------------------------------------------------------------------------------

# ---- vtui ranks --json (the report is analysis.ranks.RanksReport; its parts are Structs there) ----

class Ranks(Out):
    trace: str
    engine: str
    ranks: list[RankRow]
    missing_ranks: list[int]
    alignment: Alignment
    steps_aligned_by: str
    steps: list[StepRow]
    straggler: Straggler | None
    collectives: list[CollectiveRow]
    exposed: list[ExposedRow]
    warnings: list[str]


# ---- vtui query --format json -------------------------------------------------------------------

class Query(Out):
    columns: list[str]
    types: list[str]  # DuckDB's type of each column
    rows: list[list[Any]]
    row_count: int
    truncated: bool


OUTPUTS: dict[str, type[Out]] = {
    "info": Info,
    "insights": Insights,
    "stats": Stats,
    "search": Search,
    "tree": Tree,
    "tree-diff": TreeDiff,
    "diff": Diff,
    "ranks": Ranks,
    "query": Query,
}
# Bump an output's version whenever its schema changes in any way (a key added, renamed, removed
# or retyped), and add its snapshot: scripts/schema_snapshots.py writes vtui/data/schema/NAME.vN.json.
VERSIONS: dict[str, int] = {
    "info": 2,
    "insights": 2,
    "stats": 1,
    "search": 1,
    "tree": 2,
    "tree-diff": 1,
    "diff": 2,
    "ranks": 2,
    "query": 1,
}


def typed(name: str, doc: dict[str, Any] | msgspec.Struct) -> Out:
    """``doc`` as output ``name``'s Struct, stamped with its version; a key the schema does not
    know, a missing one or a wrong type raises ``msgspec.ValidationError`` (a bug, not input)."""
    data = msgspec.to_builtins(doc, enc_hook=_numpy_scalar)  # numpy scalars become Python numbers
    return msgspec.convert({**data, "schema_version": VERSIONS[name]}, OUTPUTS[name])


def _numpy_scalar(value: Any) -> Any:
    item = getattr(value, "item", None)  # np.float64, np.int64, np.bool_ (no numpy import needed)
    if item is None:
        raise TypeError(f"{type(value).__name__} is not JSON data")
    return item()


def builtins(out: Out) -> dict[str, Any]:
    """Plain data (what the MCP tools page), ``schema_version`` first."""
    data = msgspec.to_builtins(out, enc_hook=_numpy_scalar)
    return {"schema_version": data.pop("schema_version"), **data}


def struct_sections(name: str, report: object, built: dict[str, Any]) -> dict[str, Any]:
    """``built`` plus each field of output ``name`` it lacks, taken from ``report``'s attribute of
    that name (a msgspec Struct, or None): a new section is one line in the output's Struct."""
    extra = {f: msgspec.to_builtins(getattr(report, f)) for f in OUTPUTS[name].__struct_fields__
             if f not in built and f != "schema_version" and hasattr(report, f)}
    return {**built, **extra}


def encode(report: Out, indent: int = 2) -> str:
    """The printed JSON of a report: msgspec's encoding of its Struct, indented, terminal-safe
    (DEL, C1, bidi and invisible characters as escapes; see ``safe_text.json_safe``)."""
    try:
        raw = msgspec.json.encode(report, enc_hook=_numpy_scalar)
    except UnicodeEncodeError:  # a lone surrogate (a \ud800 escape in the trace): as json writes it
        return json_text(builtins(report), indent=indent)
    return json_safe(msgspec.json.format(raw, indent=indent).decode())


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of output ``name`` (what ``vtui schema NAME`` prints)."""
    schema = msgspec.json.schema(OUTPUTS[name])
    return {"title": f"vtui {name} --json", "schema_version": VERSIONS[name], **schema}
