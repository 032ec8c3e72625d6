"""Queries from Perfetto's docs, stdlib and diff tests, pasted as a Perfetto user pastes them: each
gives trace_processor's answer (checked by plain Python over the written events or the store's own
parent/flow arrays), or one line saying what DuckDB cannot do."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import FIXTURES, X, write_trace
from vtui.errors import UsageError
from vtui.io.events import PH_CODE
from vtui.load.trace import load_trace

pytest.importorskip("duckdb")

from vtui.query.engine import run_query  # noqa: E402

KINETO = FIXTURES / "kineto__worker0_first_step.json.gz"
WEBVIEW = FIXTURES / "catapult__webview.json.gz"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    events = [X("Outer", 10, 100, tid=7), X("inner", 20, 30, tid=7, k=1, s="x"), X("INNER", 60, 10, tid=7),
              X("leaf", 21, 5, tid=7), X("other", 10, 50, pid=1, tid=8), X("aten::mm", 5, 1, pid=2, tid=2),
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "python main"}},
              {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "proc"}}]
    return load_trace(write_trace(tmp_path_factory.mktemp("p"), events), cache=False)


@pytest.fixture(scope="module")
def kineto():
    return load_trace(KINETO, cache=False)


def rows(store, sql):
    return run_query(store, sql, max_rows=None).rows


def test_like_is_sqlites_case_insensitive_and_glob_its_own(small):
    names = ["Outer", "inner", "INNER", "leaf", "other", "aten::mm"]
    assert rows(small, "SELECT COUNT(*) FROM slice WHERE name LIKE '%inner%'") == [[2]]
    assert rows(small, "SELECT COUNT(*) FROM slice WHERE name NOT LIKE 'o%'") == [[len(names) - 2]]
    assert rows(small, "SELECT COUNT(*) FROM slice WHERE name GLOB 'in*'") == [[1]]  # GLOB keeps case
    assert rows(small, "SELECT COUNT(*) FROM slice WHERE name GLOB '[^io]*'") == [[sum(n[0] not in "io" for n in names)]]
    assert rows(small, "SELECT COUNT(*) FROM slice WHERE name = 'x LIKE y'") == [[0]]  # text stays text


def test_double_quoted_text_and_scalar_max_min(small):
    assert rows(small, 'SELECT COUNT(*) FROM slice WHERE name = "inner"') == [[1]]
    assert rows(small, 'SELECT name FROM slice WHERE name IN ("leaf", "other") ORDER BY name') == [["leaf"], ["other"]]
    got = rows(small, "SELECT MAX(ts, 15000) AS a, MIN(dur, 20000) AS b FROM slice WHERE name = 'Outer'")
    assert got == [[15_000, 20_000]]
    assert rows(small, "SELECT MAX(dur) FROM slice") == [[100_000]]  # the aggregate stays one
    assert rows(small, "SELECT MAX(ts, NULL) FROM slice LIMIT 1") == [[None]]  # SQLite: NULL in, NULL out


def test_include_and_with_context_views(small):
    got = rows(small, """INCLUDE PERFETTO MODULE slices.with_context;
        SELECT name, thread_name, tid, is_main_thread, process_name, pid FROM thread_slice ORDER BY ts, name""")
    assert got[:2] == [["aten::mm", got[0][1], 2, True, None, 2], ["Outer", "python main", 7, False, "proc", 1]]
    assert len(got) == 6
    both = rows(small, "INCLUDE PERFETTO MODULE slices.with_context; SELECT COUNT(*) FROM thread_or_process_slice")
    assert both == [[6]]
    with pytest.raises(UsageError, match="module android.startup.startups is not in vtui; it has slices.with_context"):
        run_query(small, "INCLUDE PERFETTO MODULE android.startup.startups; SELECT 1")


def test_process_slice_holds_the_async_slices():
    store = load_trace(WEBVIEW, cache=False)
    process_tracks = np.flatnonzero(store.tracks.kind_is("async", "process"))
    want = int(np.isin(store.slices.track, process_tracks).sum())
    assert want > 0
    # and the async steps (n) and process-scoped instants, slices of dur 0 on those tracks in Perfetto
    i = store.instants
    want += int((np.isin(i.track, process_tracks) & np.isin(i.ph, [PH_CODE[p] for p in "iIRn"])).sum())
    assert rows(store, "INCLUDE PERFETTO MODULE slices.with_context; SELECT COUNT(*) FROM process_slice") == [[want]]


def test_self_dur_equals_dur_less_the_children(small):
    got = dict(map(tuple, rows(small, "INCLUDE PERFETTO MODULE slices.self_dur; "
                                      "SELECT s.name, self_dur FROM slice_self_dur JOIN slice s USING (id)")))
    assert got["Outer"] == 100_000 - 30_000 - 10_000 and got["inner"] == 30_000 - 5_000 and got["leaf"] == 5_000


def _ancestors(parent: np.ndarray, i: int) -> list[int]:
    out = []
    while parent[i] >= 0:
        i = int(parent[i])
        out.append(i)
    return sorted(out)


def test_ancestor_and_descendant_slice_follow_the_parents(kineto):
    parent = kineto.slices.parent
    deep = [int(i) for i in np.flatnonzero(kineto.slices.depth >= 2)[:20]]
    for i in deep:
        assert [r[0] for r in rows(kineto, f"SELECT id FROM ancestor_slice({i}) ORDER BY id")] == _ancestors(parent, i)
    top = int(parent[deep[0]]) if parent[deep[0]] >= 0 else deep[0]
    while parent[top] >= 0:
        top = int(parent[top])
    below = sorted(j for j in range(len(parent)) if top in _ancestors(parent, j))
    assert [r[0] for r in rows(kineto, f"SELECT id FROM descendant_slice({top}) ORDER BY id")] == below
    # the docs' lateral form: each slice's top-level ancestor
    got = rows(kineto, f"""SELECT s.id, a.id FROM slice s LEFT JOIN ancestor_slice(s.id) a ON a.depth = 0
                          WHERE s.id IN ({', '.join(map(str, deep))}) ORDER BY s.id""")
    assert got == [[i, _ancestors(parent, i)[0]] for i in sorted(deep)]


def test_directly_connected_flow_follows_the_chain(kineto):
    f = kineto.flows
    both = np.intersect1d(f.src_slice[f.src_slice >= 0], f.dst_slice[f.dst_slice >= 0])
    start = int(both[0]) if len(both) else int(f.dst_slice[f.dst_slice >= 0][0])  # a chain back as well
    want, frontier = set(), {start}
    while frontier:  # forward chain: out of the slice, on from where each flow lands
        hit = {k for k in range(len(f)) if f.src_slice[k] in frontier and k not in want}
        want |= hit
        frontier = {int(f.dst_slice[k]) for k in hit}
    frontier = {start}
    seen_back: set[int] = set()
    while frontier:
        hit = {k for k in range(len(f)) if f.dst_slice[k] in frontier and k not in seen_back}
        seen_back |= hit
        frontier = {int(f.src_slice[k]) for k in hit}
    got = {r[0] for r in rows(kineto, f"SELECT id FROM directly_connected_flow({start})")}
    assert got == want | seen_back and got


def test_perfetto_statements_run_or_say_why(small):
    assert rows(small, "CREATE PERFETTO VIEW big(name STRING, dur LONG) AS SELECT name, dur FROM slice WHERE dur > 40000; "
                       "SELECT name FROM big ORDER BY name") == [["Outer"], ["other"]]
    assert rows(small, "CREATE PERFETTO TABLE t AS SELECT 1 AS x; SELECT x FROM t") == [[1]]
    assert rows(small, "CREATE PERFETTO FUNCTION plus_one(x INT) RETURNS INT AS SELECT $x + 1; SELECT plus_one(41)") == [[42]]
    assert rows(small, "CREATE PERFETTO FUNCTION on_thread(t INT) RETURNS TABLE(name STRING) AS "
                       "SELECT name FROM thread_slice WHERE tid = $t; SELECT COUNT(*) FROM on_thread(8)") == [[1]]
    # a view made by one query is gone for the next (the MCP server runs many in one process)
    with pytest.raises(UsageError, match="no table big"):
        run_query(small, "SELECT * FROM big")
    with pytest.raises(UsageError, match="SPAN_JOIN is Perfetto's own operator table and DuckDB has none"):
        run_query(small, "CREATE VIRTUAL TABLE sj USING SPAN_JOIN(slice PARTITIONED track_id, slice)")
    with pytest.raises(UsageError, match="sched: Perfetto's table of CPU scheduling.*vtui's tables: .*thread_slice"):
        run_query(small, "SELECT * FROM sched")


def test_trace_bounds_args_id_and_iif(small):
    assert rows(small, "SELECT * FROM trace_bounds") == [[0, small.span_ns]]
    assert rows(small, "SELECT trace_start(), trace_end(), trace_dur()") == [[0, small.span_ns, small.span_ns]]
    got = rows(small, "SELECT args.key, args.display_value FROM slice JOIN args USING (arg_set_id) "
                      "WHERE slice.name = 'inner' ORDER BY args.id")
    assert got == [["args.k", "1"], ["args.s", "x"]]  # as written
    assert rows(small, "SELECT IIF(dur > 40000, 'long', 'short') k, COUNT(*) FROM slice GROUP BY k ORDER BY k") == \
        [["long", 2], ["short", 4]]
