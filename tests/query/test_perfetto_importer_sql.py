"""The SQL tables give trace_processor's answer where its JSON importer files events its own way
(google/perfetto, ``src/trace_processor/importers/json/json_trace_parser.cc``, and the slice stack
of ``importers/common/slice_tracker.cc``): instants are slices of dur 0 with their args, names are
the trace's exact text (NULL where it gave none), counter series are named ``name[ id: ID] key``,
and the stack is half-open. Each expected answer is worked out here by plain Python over the raw
events, following those sources."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, QWEN, X, norm, raw_events, raw_origin, raw_span_ns, write_trace
from vtui.load.trace import load_trace

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

from vtui.query.engine import run_query  # noqa: E402

KINETO = FIXTURES / "kineto__worker0_first_step.json.gz"
THREAD_INSTANT = ("i", "I", "R")


def rows(store, sql):
    return run_query(store, sql, max_rows=None).rows


def _memory(ts, nbytes, total, **more):
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 7, "ts": ts, "cat": "cpu_instant_event",
            "args": {"Device Type": 1, "Device Id": 0, "Addr": 1000 + ts, "Bytes": nbytes,
                     "Total Allocated": total, "Total Reserved": 4096, **more}}


MEMORY_EVENTS = [X("step", 0, 100, tid=7), X("aten::empty", 10, 5, tid=7), _memory(11, 512, 512),
                 _memory(20, 1024, 1536), _memory(20, -512, 1024), _memory(105, 256, 1280),
                 {"ph": "i", "s": "p", "name": "proc mark", "pid": 1, "tid": 7, "ts": 30},
                 {"ph": "I", "s": "g", "name": "global mark", "pid": 1, "tid": 7, "ts": 40, "args": {"why": "sync"}}]


# ---- instants are slices (json_trace_parser.cc, case 'i': slice_tracker->Scoped(ts, track, ..., 0, args)) --
def test_instants_are_slices_of_dur_0_with_their_args(tmp_path):
    store = load_trace(write_trace(tmp_path, MEMORY_EVENTS), cache=False)
    raw = [e for e in MEMORY_EVENTS if e["ph"] in ("X", *THREAD_INSTANT)]
    assert rows(store, "SELECT COUNT(*) FROM slice") == [[len(raw)]]
    memory = [e for e in raw if e["name"] == "[memory]"]
    got = rows(store, "SELECT s.ts, s.dur, t.tid, extract_arg(s.arg_set_id, 'args.Bytes')::BIGINT FROM slice s "
                      "JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) "
                      "WHERE s.name = '[memory]' ORDER BY s.id")
    origin = raw_origin(MEMORY_EVENTS)
    assert got == [[raw_span_ns(origin, e)[0], 0, e["tid"], e["args"]["Bytes"]] for e in memory]
    # every arg, as the importer's args.<key> (the everyday idiom: args joined on arg_set_id)
    keys = rows(store, "SELECT a.key, COUNT(*) FROM slice s JOIN args a USING (arg_set_id) "
                       "WHERE s.name = '[memory]' GROUP BY a.key ORDER BY a.key")
    assert keys == sorted([f"args.{k}", len(memory)] for k in memory[0]["args"])
    # a process-scoped instant sits on a process track, a global one on a track of no process
    scoped = rows(store, "SELECT s.name, extract_arg(s.arg_set_id, 'args.why'), t.upid IS NULL FROM slice s "
                         "JOIN track t ON s.track_id = t.id WHERE s.name LIKE '%mark' ORDER BY s.name")
    assert scoped == [["global mark", "sync", True], ["proc mark", None, False]]
    # nested on the thread's stack: inside the op open at their time, stacked at one time
    want, modelled = _raw_tree(MEMORY_EVENTS, zero_only=False)
    assert modelled == 1 and _sql_tree(store) == want


def test_the_memory_series_are_counters(tmp_path):
    store = load_trace(write_trace(tmp_path, MEMORY_EVENTS), cache=False)
    origin = raw_origin(MEMORY_EVENTS)
    memory = sorted(((raw_span_ns(origin, e)[0], e["args"]) for e in MEMORY_EVENTS if e["name"] == "[memory]"),
                    key=lambda m: m[0])  # (stable: file order at one time)
    got = rows(store, "SELECT t.name, c.ts, c.value FROM counter c JOIN counter_track t ON c.track_id = t.id "
                      "WHERE t.name LIKE '[memory]%' ORDER BY t.name, c.ts, c.id")
    want = [["[memory] cuda:0 allocated", ts, float(a["Total Allocated"])] for ts, a in memory]
    want += [["[memory] cuda:0 reserved", ts, float(a["Total Reserved"])] for ts, a in memory]
    assert got == want
    assert rows(store, "SELECT COUNT(*) FROM process_counter_track WHERE name LIKE '[memory]%'") == [[2]]


def test_a_real_traces_memory_events_are_all_in_slice():
    store = load_trace(QWEN, cache=False)
    raw = [e for e in raw_events(QWEN) if e.get("ph") in THREAD_INSTANT and e.get("name") == "[memory]"]
    assert len(raw) > 1000
    got = rows(store, "SELECT COUNT(*), SUM(extract_arg(arg_set_id, 'args.Bytes')::BIGINT), MAX(dur) "
                      "FROM slice WHERE name = '[memory]'")
    assert got == [[len(raw), sum(e["args"]["Bytes"] for e in raw), 0]]


# ---- EXTRACT_ARG in every clause -----------------------------------------------------------------------
def test_extract_arg_works_in_where_join_and_with_aliases(tmp_path):
    events = [X("a", 0, 10, tid=1, k=1, label="x"), X("b", 20, 10, tid=1, k=2, nested={"v": [5, 6]}),
              X("c", 40, 1, tid=1, k=3), X("d", 50, 1, tid=2)]
    store = load_trace(write_trace(tmp_path, events), cache=False)
    k = {e["name"]: e["args"].get("k") for e in events}
    want = sorted(n for n, v in k.items() if v is not None and v >= 2)
    assert rows(store, "SELECT name FROM slice WHERE extract_arg(arg_set_id, 'args.k')::INT >= 2 ORDER BY name") == \
        [[n] for n in want]
    assert rows(store, "SELECT s.name FROM slice s WHERE extract_arg(s.arg_set_id, 'args.k') = '2'") == [["b"]]
    assert rows(store, "SELECT name FROM slice WHERE extract_arg(arg_set_id, 'args.nested.v[1]') = '6'") == [["b"]]
    assert rows(store, "SELECT name FROM slice WHERE extract_arg(arg_set_id, 'args.label') = 'x'") == [["a"]]
    pairs = rows(store, "SELECT a.name, b.name FROM slice a JOIN slice b "
                        "ON extract_arg(a.arg_set_id, 'args.k')::INT + 1 = extract_arg(b.arg_set_id, 'args.k')::INT "
                        "ORDER BY a.name")
    assert pairs == [[x, y] for x in sorted(k) for y in sorted(k)
                     if k[x] is not None and k[y] is not None and k[x] + 1 == k[y]]
    assert rows(store, "SELECT name, extract_arg(arg_set_id, 'args.k') FROM slice ORDER BY name") == \
        [[n, None if v is None else str(v)] for n, v in sorted(k.items())]


# ---- names: exact, NULL where the trace gave none -------------------------------------------------------
def _perfetto_counter_names(events: list[dict]) -> Counter:
    """json_trace_parser.cc, case 'C': the name, " id: " + the id when it is a JSON string, then
    " " + each args key (one track per name in the process)."""
    names: Counter = Counter()
    seen = set()
    for e in events:
        if e.get("ph") != "C":
            continue
        prefix = e.get("name", "") + (f" id: {e['id']}" if isinstance(e.get("id"), str) else "")
        for key in e["args"]:
            if (e["pid"], prefix, key) not in seen:
                seen.add((e["pid"], prefix, key))
                names[f"{prefix} {key}"] += 1
    return names


def test_names_are_the_traces_exact_text_or_null(tmp_path):
    # json_trace_parser.cc, case 'M': a thread_name / process_name is interned as written (no trim),
    # and nothing else names a thread with a numeric tid: the thread table's name stays NULL.
    events = [X("a", 0, 10, pid=1, tid=6583), X("b", 0, 10, pid=1, tid=7), X("c", 0, 10, pid=2, tid=2),
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "stream 7 "}},
              {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": " worker "}},
              {"ph": "C", "name": "mem", "pid": 1, "ts": 1, "args": {"value": 3, "free": 4}},
              {"ph": "C", "name": "queue", "id": "0x1f", "pid": 1, "ts": 1, "args": {"depth": 2}},
              {"ph": "C", "name": "queue", "id": 5, "pid": 2, "ts": 1, "args": {"depth": 2}},
              {"ph": "C", "name": "mem", "pid": 1, "ts": 2, "args": {"value": 5}}]
    store = load_trace(write_trace(tmp_path, events), cache=False)
    thread_names = {(norm(e["pid"]), norm(e["tid"])): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    threads = sorted({(e["pid"], e["tid"]) for e in events if e["ph"] == "X"})
    assert rows(store, "SELECT p.pid, t.tid, t.name FROM thread t JOIN process p USING (upid) ORDER BY 1, 2") == \
        [[pid, tid, thread_names.get((pid, tid))] for pid, tid in threads]
    process_names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert rows(store, "SELECT pid, name FROM process ORDER BY pid") == \
        [[pid, process_names.get(pid)] for pid in sorted({p for p, _ in threads})]
    assert rows(store, "SELECT COUNT(*) FROM thread WHERE name = 'stream 7 '") == [[1]]  # an exact match holds
    # a string tid names its thread, a string pid its process (the parser's UpdateThreadName /
    # SetProcessMetadata on every event that has one); their numbers are NULL
    named = load_trace(write_trace(tmp_path, [X("w", 0, 1, pid=3, tid="loader "), X("v", 0, 1, pid="job")], "s.json"),
                       cache=False)
    assert rows(named, "SELECT t.tid, t.name, p.pid, p.name FROM thread t JOIN process p USING (upid) ORDER BY p.name") == \
        [[1, None, None, "job"], [None, "loader ", 3, None]]
    got = Counter(name for (name,) in rows(store, "SELECT name FROM counter_track"))
    assert got == _perfetto_counter_names(events)
    assert rows(store, "SELECT COUNT(*) FROM track WHERE type = 'counter' AND name = 'queue id: 0x1f depth'") == [[1]]


def test_the_app_keeps_its_friendly_titles(tmp_path):
    events = [X("a", 0, 10, pid=1, tid=6583), X("b", 0, 10, pid=1, tid=7),
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "stream 7 "}},
              {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": " worker "}}]
    store = load_trace(write_trace(tmp_path, events), cache=False)
    assert sorted(t.title for t in store.tracks) == ["stream 7", "thread 6583"]
    assert {t.process_title for t in store.tracks} == {"worker 1"}


# ---- Perfetto's stack: half-open, zero-length ones stacking (slice_tracker.cc, MaybeCloseStack) ---------
def _perfetto_stack(events: list[dict], origin: float) -> list[tuple] | None:
    """One thread's X events and instants through the slice stack: each as (name, ts, dur, depth,
    parent (name, ts, dur)); None where the thread has what this sketch does not model (B/E, an
    X without dur, a partial overlap, which trace_processor moves to another track)."""
    if any(e["ph"] not in ("X", *THREAD_INSTANT) or (e["ph"] == "X" and "dur" not in e) for e in events):
        return None
    spans = [raw_span_ns(origin, e) for e in events]
    # trace_sorter.h: at one time, X with a duration longest first, the rest in file order
    order = sorted(range(len(events)), key=lambda k: (spans[k][0], spans[k][0] - spans[k][1] if events[k]["ph"] == "X" else 0, k))
    stack: list[int] = []
    out = []
    for k in order:
        start, end = spans[k]
        while stack:
            top_start, top_end = spans[stack[-1]]
            both_zero = top_end == top_start and end == start
            if top_end < start or (top_end == start and not both_zero):
                stack.pop()
                continue
            if start < top_end < end:
                return None
            break
        up = stack[-1] if stack else None
        parent = None if up is None else (events[up]["name"], *spans[up][:1], spans[up][1] - spans[up][0])
        out.append((events[k]["name"], start, end - start, len(stack), parent))
        stack.append(k)
    return out


def _sql_tree(store, where: str = "TRUE") -> Counter:
    got = rows(store, f"""SELECT COALESCE(p.pid::VARCHAR, p.name), COALESCE(t.tid::VARCHAR, t.name), s.name, s.ts, s.dur, s.depth, u.name, u.ts, u.dur FROM slice s
        JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) JOIN process p USING (upid)
        LEFT JOIN slice u ON s.parent_id = u.id WHERE {where}""")
    return Counter((pid, tid, name, ts, dur, depth, None if up is None else (up, up_ts, up_dur))
                   for pid, tid, name, ts, dur, depth, up, up_ts, up_dur in got)


def _raw_tree(path_or_events, zero_only: bool) -> tuple[Counter, int]:
    events = raw_events(path_or_events) if isinstance(path_or_events, Path) else path_or_events
    origin = raw_origin(events)
    threads: dict[tuple, list[dict]] = {}
    for e in events:
        if e.get("ph") in ("X", "B", "E") or (e.get("ph") in THREAD_INSTANT and e.get("s") in (None, "t")):
            pid = norm(e.get("pid"))  # a string pid or tid: SQL has it as the name
            tid, pid = str(norm(e.get("tid")) if e.get("tid") is not None else pid), str(pid)
            threads.setdefault((pid, tid), []).append(e)
    want: Counter = Counter()
    modelled = 0
    for (pid, tid), mine in threads.items():
        tree = _perfetto_stack(mine, origin)
        if tree is None:
            continue
        modelled += 1
        want.update((pid, tid, *row) for row in tree if not zero_only or row[2] == 0)
    return want, modelled


def test_a_zero_length_slice_at_a_slices_end_is_its_sibling(tmp_path):
    events = [X("A", 0, 10, tid=1), X("end", 10, 0, tid=1), X("inside", 5, 0, tid=1), X("start", 0, 0, tid=1),
              {"ph": "i", "name": "i@end", "pid": 1, "tid": 1, "ts": 10},  # stacks on "end" (both zero)
              {"ph": "i", "name": "i@end2", "pid": 1, "tid": 1, "ts": 10},
              X("B", 20, 10, tid=1), X("C", 20, 10, tid=1), X("z@C", 30, 0, tid=1),  # closes C and B
              X("D", 40, 5, tid=1), {"ph": "i", "name": "i@D", "pid": 1, "tid": 1, "ts": 40}, X("E", 45, 5, tid=1),
              X("z@E", 50, 0, tid=1)]
    store = load_trace(write_trace(tmp_path, events), cache=False)
    want, modelled = _raw_tree(events, zero_only=False)
    assert modelled == 1
    assert _sql_tree(store) == want
    # the store keeps its own (closed) containment for the app's analyses
    (end,) = [r for r in range(len(store.slices)) if store.name(r) == "end"]
    assert store.name(int(store.slices.parent[end])) == "A"


def test_a_real_trace_nests_as_perfettos_stack_does():
    """Every slice of the threads the sketch models (Kineto's: no B/E, no partial overlap), among
    them back-to-back zero-length cudaOccupancy… calls. (Qwen's [memory] thread has partial
    overlaps, which trace_processor moves to a track of their own: not comparable.)"""
    store = load_trace(KINETO, cache=False)
    want, modelled = _raw_tree(KINETO, zero_only=False)
    assert modelled >= 3 and sum(want.values()) == len(store.slices)
    threads = {(w[0], w[1]) for w in want}
    got = _sql_tree(store)
    assert {k: v for k, v in got.items() if (k[0], k[1]) in threads} == want
    assert sum(n for k, n in want.items() if k[4] == 0) > 100
    s = store.slices  # not vacuous: the store nests some in a slice they sit at the end of
    inside = (s.dur_ns == 0) & (s.parent >= 0)
    assert (s.end_ns[s.parent[inside]] == s.start_ns[inside]).sum() >= 3


def test_a_shared_traces_memory_instants_nest_as_perfettos_stack_does(shared_traces):
    """Kineto's worker trace: 12,838 [memory] instants inside the ops that allocate, and 41
    zero-length calls the store nests at a slice's end; every row of the threads the sketch models."""
    path = shared_traces / "public" / "kineto__worker0.1623143089861.pt.trace.json.gz"
    store = load_trace(path, cache=False)
    events = raw_events(path)
    want, modelled = _raw_tree(events, zero_only=False)
    memory = sum(n for k, n in want.items() if k[2] == "[memory]")
    assert modelled >= 3 and memory > 10_000
    assert memory == sum(1 for e in events if e.get("ph") in THREAD_INSTANT and e.get("name") == "[memory]")
    threads = {(w[0], w[1]) for w in want}
    got = _sql_tree(store)
    assert {k: v for k, v in got.items() if (k[0], k[1]) in threads} == want
