"""Perfetto's SQL on DuckDB: the queries a Perfetto user pastes, read as trace_processor reads them.

trace_processor runs SQLite with Perfetto's own statements, operator tables and standard library;
DuckDB differs in a few places that change an answer or fail a query. ``translate`` rewrites the
query's tokens (never inside a string or a comment) before DuckDB sees it:

- ``INCLUDE PERFETTO MODULE m;`` is dropped for the modules vtui has (their views are here, named
  by the query as any table is); any other module is one line saying which modules exist;
- ``CREATE PERFETTO VIEW|TABLE`` (and a plain ``CREATE VIEW|TABLE``) become the cursor's own
  ``CREATE OR REPLACE TEMP VIEW|TABLE`` (nothing outlives the query; a retried query re-creates);
  ``CREATE PERFETTO FUNCTION f(a INT) RETURNS T AS SELECT $a …`` becomes a DuckDB macro;
- ``LIKE`` is SQLite's, case-insensitive: ``ILIKE``; a ``GLOB`` pattern's ``[^…]`` is ``[!…]``;
- SQLite's scalar ``MAX(a, b, …)`` / ``MIN(a, b, …)`` (DuckDB's two-argument ``max`` is a top-n
  list) become ``GREATEST`` / ``LEAST``, NULL when an argument is NULL as in SQLite;
- ``SPAN_JOIN`` and the other Perfetto statements DuckDB cannot run are one line saying so.

``string_retry`` is SQLite's rule for a double-quoted word that names no column (Perfetto's docs
write ``name = "foo"``): it is the text ``'foo'``. ``SQL_OBJECTS`` are Perfetto's views and table
functions (``thread_slice``, ``ancestor_slice(id)``, ``trace_start()`` …), each created on the
cursor over the tables it reads, only when the query names it.
"""

from __future__ import annotations

import re

from vtui.errors import UsageError

# ---- tokens ---------------------------------------------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>'(?:[^']|'')*'?)
  | (?P<quoted>"(?:[^"]|"")*"?|`[^`]*`?|\[[^\]]*\]?)
  | (?P<param>\$\w+)
  | (?P<word>[A-Za-z_][\w$]*)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)
  | (?P<op>::|<=|>=|<>|!=|==|\|\||.)
""", re.VERBOSE | re.DOTALL)


def tokens(sql: str) -> list[tuple[str, str]]:
    """(kind, text) of every token, spaces and comments included, so ``"".join`` gives ``sql``."""
    return [(m.lastgroup or "op", m.group()) for m in _TOKEN.finditer(sql)]


def _is(tok: tuple[str, str], *words: str) -> bool:
    return tok[0] == "word" and tok[1].upper() in words


def _code(toks: list[tuple[str, str]], i: int) -> int:
    """The index of the first token at or after ``i`` that is not a space or a comment."""
    while i < len(toks) and toks[i][0] in ("space", "comment"):
        i += 1
    return i


def _close(toks: list[tuple[str, str]], i: int) -> int:
    """``toks[i]`` is ``(``: the index of its ``)`` (or the end)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j] == ("op", "("):
            depth += 1
        elif toks[j] == ("op", ")"):
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def _statement_end(toks: list[tuple[str, str]], i: int) -> int:
    """The index of the ``;`` ending the statement that holds ``toks[i]`` (or the end)."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j] == ("op", "("):
            depth += 1
        elif toks[j] == ("op", ")"):
            depth -= 1
        elif toks[j] == ("op", ";") and depth <= 0:
            return j
    return len(toks)


# ---- modules ---------------------------------------------------------------------------------------
# Perfetto's stdlib modules whose tables vtui has (under Perfetto's names; named in a query, they are
# made as any table is). A module of one of these packages with a wildcard (slices.*) is accepted too.
MODULES = {
    "slices.with_context": "thread_slice, process_slice, thread_or_process_slice",
    "slices.self_dur": "slice_self_dur",
    "slices.hierarchy": "ancestor_slice, descendant_slice (and _and_self), direct_children_slice",
    "slices.flow": "directly_connected_flow, following_flow, preceding_flow",
    "slices.slices": "thread_slice, process_slice",
    "time.conversion": "time_to_us, time_to_ms, time_to_s, time_from_us, time_from_ms, time_from_s",
}

# Perfetto statements DuckDB has no form of: the line each answers with.
UNSUPPORTED = {
    "SPAN_JOIN": "SPAN_JOIN is Perfetto's own operator table and DuckDB has none: intersect with a join "
                 "ON a.ts < b.ts + b.dur AND b.ts < a.ts + a.dur (overlap: LEAST(a.ts + a.dur, b.ts + b.dur) "
                 "- GREATEST(a.ts, b.ts))",
    "SPAN_LEFT_JOIN": "SPAN_LEFT_JOIN is Perfetto's own operator table and DuckDB has none: use a LEFT JOIN "
                      "ON a.ts < b.ts + b.dur AND b.ts < a.ts + a.dur",
    "SPAN_OUTER_JOIN": "SPAN_OUTER_JOIN is Perfetto's own operator table and DuckDB has none: use a FULL JOIN "
                       "ON a.ts < b.ts + b.dur AND b.ts < a.ts + a.dur",
}


def translate(sql: str) -> str:
    """``sql`` with Perfetto's SQLite forms rewritten for DuckDB (see the module's doc)."""
    toks = tokens(sql)
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        j = _code(toks, i + 1)
        if _is(tok, "INCLUDE") and j < len(toks) and _is(toks[j], "PERFETTO"):
            end = _statement_end(toks, i)
            m = _code(toks, j + 1)
            m = _code(toks, m + 1) if m < len(toks) and _is(toks[m], "MODULE") else m
            _check_module("".join(t for _, t in toks[m:end]).strip())
            i = end + 1
            continue
        if _is(tok, "CREATE"):
            replaced = _create(toks, i)
            if replaced is not None:
                made, i = replaced
                out += made
                continue
        if tok[0] == "word" and tok[1].upper() in UNSUPPORTED:
            raise UsageError(UNSUPPORTED[tok[1].upper()])
        if _is(tok, "LIKE"):
            out.append(("word", "ILIKE"))  # SQLite's LIKE ignores ASCII case
        elif _is(tok, "GLOB") and j < len(toks) and toks[j][0] == "string":
            out += toks[i:j] + [("string", toks[j][1].replace("[^", "[!"))]  # SQLite's negated set
            i = j + 1
            continue
        elif _is(tok, "MAX", "MIN") and j < len(toks) and toks[j] == ("op", "(") and not _after_dot(out):
            scalar = _scalar_extreme(toks, i, j)
            if scalar is not None:
                made, i = scalar
                out += made
                continue
            out.append(tok)
        else:
            out.append(tok)
        i += 1
    return "".join(t for _, t in out)


def _after_dot(out: list[tuple[str, str]]) -> bool:
    k = len(out) - 1
    while k >= 0 and out[k][0] in ("space", "comment"):
        k -= 1
    return k >= 0 and out[k] == ("op", ".")


def _check_module(name: str) -> None:
    known = name in MODULES or (name.endswith(".*") and any(m.startswith(name[:-1]) for m in MODULES))
    if not known:
        have = "; ".join(f"{m} ({what})" for m, what in MODULES.items())
        raise UsageError(f"Perfetto's module {name or '(none)'} is not in vtui; it has {have}")


def _args(toks: list[tuple[str, str]], open_: int, close: int) -> list[list[tuple[str, str]]]:
    """The comma-separated arguments between ``toks[open_]`` ``(`` and ``toks[close]`` ``)``."""
    parts: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for tok in toks[open_ + 1:close]:
        if tok == ("op", "("):
            depth += 1
        elif tok == ("op", ")"):
            depth -= 1
        if tok == ("op", ",") and depth == 0:
            parts.append([])
        else:
            parts[-1].append(tok)
    return parts


def _scalar_extreme(toks: list[tuple[str, str]], i: int, open_: int) -> tuple[list[tuple[str, str]], int] | None:
    """SQLite's multi-argument MAX / MIN at ``toks[i]`` as GREATEST / LEAST (NULL if any argument is
    NULL, as SQLite's); None for the one-argument aggregate."""
    close = _close(toks, open_)
    parts = _args(toks, open_, close)
    if len(parts) < 2:
        return None
    texts = [translate("".join(t for _, t in p)).strip() for p in parts]
    fn = "GREATEST" if toks[i][1].upper() == "MAX" else "LEAST"
    nulls = " OR ".join(f"({t}) IS NULL" for t in texts)
    made = f"(CASE WHEN {nulls} THEN NULL ELSE {fn}({', '.join(texts)}) END)"
    return [("op", made)], close + 1


def _create(toks: list[tuple[str, str]], i: int) -> tuple[list[tuple[str, str]], int] | None:
    """``CREATE [PERFETTO] VIEW|TABLE name`` → the cursor's ``CREATE OR REPLACE TEMP VIEW|TABLE name``;
    ``CREATE PERFETTO FUNCTION`` → a macro; ``CREATE VIRTUAL TABLE`` / ``PERFETTO MACRO`` / ``INDEX``
    → one line. None: another CREATE (left to DuckDB)."""
    k = _code(toks, i + 1)
    perfetto = k < len(toks) and _is(toks[k], "PERFETTO")
    if perfetto:
        k = _code(toks, k + 1)
    if k < len(toks) and _is(toks[k], "OR"):  # CREATE OR REPLACE …
        k = _code(toks, _code(toks, k + 1) + 1)
    temp = k < len(toks) and _is(toks[k], "TEMP", "TEMPORARY")
    if temp:
        k = _code(toks, k + 1)
    if k >= len(toks):
        return None
    what = toks[k][1].upper() if toks[k][0] == "word" else ""
    if what == "VIRTUAL":
        end = _statement_end(toks, i)
        body = " ".join(t.upper() for kind, t in toks[k:end] if kind == "word")
        for word, line in UNSUPPORTED.items():
            if word in body.split():
                raise UsageError(line)
        raise UsageError("CREATE VIRTUAL TABLE is SQLite's; DuckDB has no virtual tables: use a view")
    if what == "FUNCTION" and perfetto:
        return _function(toks, i, k)
    if what == "MACRO" and perfetto:
        raise UsageError("CREATE PERFETTO MACRO is Perfetto's own; write a DuckDB macro instead: "
                         "CREATE MACRO name(a, b) AS expression (or AS TABLE SELECT …)")
    if what in ("INDEX",) and perfetto:
        raise UsageError("CREATE PERFETTO INDEX is Perfetto's own: DuckDB needs no index here, drop it")
    if what not in ("VIEW", "TABLE"):
        return None
    n = _code(toks, k + 1)
    if n < len(toks) and _is(toks[n], "IF"):  # IF NOT EXISTS: a replace does as well
        n = _code(toks, _code(toks, _code(toks, n + 1) + 1) + 1)
    if n >= len(toks):
        return None
    made = [("word", f"CREATE OR REPLACE TEMP {what} "), toks[n], ("space", " ")]
    after = _code(toks, n + 1)
    if perfetto and after < len(toks) and toks[after] == ("op", "("):  # a typed schema: (col TYPE, …)
        close = _close(toks, after)
        names = [_first_word(p) for p in _args(toks, after, close)]
        if what == "VIEW" and all(names):
            made.append(("op", "(" + ", ".join(names) + ")"))
        after = close + 1
    return made, after


def _first_word(part: list[tuple[str, str]]) -> str:
    for kind, text in part:
        if kind in ("word", "quoted"):
            return text
    return ""


def _function(toks: list[tuple[str, str]], i: int, k: int) -> tuple[list[tuple[str, str]], int]:
    """``CREATE PERFETTO FUNCTION f(a INT, …) RETURNS T AS body`` → ``CREATE OR REPLACE TEMP MACRO
    f(a, …) AS (body)`` with ``$a`` → ``a``; ``RETURNS TABLE(…)`` → ``AS TABLE body``."""
    bad = UsageError("CREATE PERFETTO FUNCTION: write it as NAME(arg TYPE, …) RETURNS TYPE AS SELECT …")
    name = _code(toks, k + 1)
    open_ = _code(toks, name + 1)
    if name >= len(toks) or toks[name][0] != "word" or open_ >= len(toks) or toks[open_] != ("op", "("):
        raise bad
    close = _close(toks, open_)
    params = [_first_word(p) for p in _args(toks, open_, close) if any(kind != "space" for kind, _ in p)]
    r = _code(toks, close + 1)
    if r >= len(toks) or not _is(toks[r], "RETURNS"):
        raise bad
    r = _code(toks, r + 1)
    table = _is(toks[r], "TABLE") if r < len(toks) else False
    a = r
    while a < len(toks) and not _is(toks[a], "AS"):
        a = _close(toks, a) + 1 if toks[a] == ("op", "(") else a + 1
    if a >= len(toks):
        raise bad
    end = _statement_end(toks, a)
    body = "".join(text[1:] if kind == "param" else text for kind, text in toks[a + 1:end])
    body = translate(body).strip()
    head = f"CREATE OR REPLACE TEMP MACRO {toks[name][1]}({', '.join(params)}) AS "
    return [("op", head + (f"TABLE {body}" if table else f"({body})"))], end


# ---- SQLite's double-quoted text ------------------------------------------------------------------------
_MISSING_COLUMN = re.compile(r'Referenced column "((?:[^"]|"")*)" not found')


def string_retry(sql: str, message: str) -> str | None:
    """SQLite's rule: a double-quoted word that names no column is text. When DuckDB's ``message``
    says ``"x"`` names no column and ``sql`` writes ``"x"``, the query with ``'x'`` there; else None."""
    m = _MISSING_COLUMN.search(message)
    if not m:
        return None
    word = m.group(1)
    toks = tokens(sql)
    hit = False
    for n, (kind, text) in enumerate(toks):
        if kind == "quoted" and text.startswith('"') and text[1:-1].replace('""', '"') == word:
            toks[n] = ("string", "'" + word.replace("'", "''") + "'")
            hit = True
    return "".join(t for _, t in toks) if hit else None


# ---- tables Perfetto has and a JSON trace does not ----------------------------------------------------
NO_SUCH_DATA = {
    "sched": "CPU scheduling", "sched_slice": "CPU scheduling", "thread_state": "thread states",
    "cpu": "CPUs", "ftrace_event": "ftrace events", "raw": "ftrace events",
    "cpu_counter_track": "CPU counters", "heap_profile_allocation": "heap profiles",
    "perf_sample": "CPU samples", "cpu_profile_stack_sample": "CPU samples",
    "stack_profile_frame": "stack samples", "stack_profile_callsite": "stack samples",
    "android_logs": "Android logs", "metadata": "trace metadata", "gpu_slice": "GPU render stages",
    "ancestor_slice_by_stack": "stack ids", "descendant_slice_by_stack": "stack ids",
}
_MISSING_TABLE = re.compile(r"Table( Function)? with name (\w+) does not exist")
VIEWS = ("thread_slice", "process_slice", "thread_or_process_slice", "slice_self_dur", "process_track",
         "process_counter_track")
TABLE_FUNCTIONS = ("ancestor_slice", "ancestor_slice_and_self", "descendant_slice", "descendant_slice_and_self",
                   "direct_children_slice", "directly_connected_flow", "following_flow", "preceding_flow")


def missing_table_line(message: str, tables: list[str]) -> str | None:
    """The line for a query naming a table (or table function) vtui has not: why (Perfetto's, of data
    this trace format lacks) and the ones there are."""
    m = _MISSING_TABLE.search(message)
    if not m:
        return None
    function, name = bool(m.group(1)), m.group(2)
    if function:
        return f"no table function {name}; vtui's: {', '.join(TABLE_FUNCTIONS)}"
    lead = (f"{name}: Perfetto's table of {NO_SUCH_DATA[name.lower()]}, which this trace format does not carry"
            if name.lower() in NO_SUCH_DATA else f"no table {name}")
    return f"{lead}; vtui's tables: {', '.join(sorted([*tables, *VIEWS]))}"


# ---- Perfetto's views and functions over vtui's tables ------------------------------------------------
# name -> (the tables it reads, the SQL creating it on the cursor). Created in this order, so one may
# read an earlier one.
_THREAD_SLICE = """
CREATE OR REPLACE TEMP VIEW thread_slice AS
SELECT slice.id, slice.ts, slice.dur, slice.category, slice.name, slice.track_id,
       thread_track.name AS track_name, thread.name AS thread_name, thread.utid, thread.tid,
       thread.is_main_thread, process.name AS process_name, process.upid, process.pid,
       slice.depth, slice.parent_id, slice.arg_set_id
FROM slice JOIN thread_track ON slice.track_id = thread_track.id
JOIN thread USING (utid) LEFT JOIN process USING (upid)"""
_PROCESS_SLICE = """
CREATE OR REPLACE TEMP VIEW process_slice AS
SELECT slice.id, slice.ts, slice.dur, slice.category, slice.name, slice.track_id,
       process_track.name AS track_name, process.name AS process_name, process.upid, process.pid,
       slice.depth, slice.parent_id, slice.arg_set_id
FROM slice JOIN process_track ON slice.track_id = process_track.id JOIN process USING (upid)"""
_THREAD_OR_PROCESS = """
CREATE OR REPLACE TEMP VIEW thread_or_process_slice AS
SELECT id, ts, dur, category, name, track_id, track_name, thread_name, utid, tid, process_name, upid, pid,
       depth, parent_id, arg_set_id FROM thread_slice
UNION ALL
SELECT id, ts, dur, category, name, track_id, track_name, NULL, NULL, NULL, process_name, upid, pid,
       depth, parent_id, arg_set_id FROM process_slice"""
_HIERARCHY = """
CREATE OR REPLACE TEMP MACRO ancestor_slice(sid) AS TABLE
WITH RECURSIVE up(id) AS (
  SELECT parent_id FROM slice WHERE id = sid AND parent_id IS NOT NULL
  UNION ALL SELECT s.parent_id FROM slice s JOIN up ON s.id = up.id WHERE s.parent_id IS NOT NULL)
SELECT * FROM slice WHERE id IN (SELECT id FROM up);
CREATE OR REPLACE TEMP MACRO ancestor_slice_and_self(sid) AS TABLE
SELECT * FROM ancestor_slice(sid) UNION ALL SELECT * FROM slice WHERE id = sid;
CREATE OR REPLACE TEMP MACRO descendant_slice(sid) AS TABLE
WITH RECURSIVE down(id) AS (
  SELECT id FROM slice WHERE parent_id = sid
  UNION ALL SELECT s.id FROM slice s JOIN down ON s.parent_id = down.id)
SELECT * FROM slice WHERE id IN (SELECT id FROM down);
CREATE OR REPLACE TEMP MACRO descendant_slice_and_self(sid) AS TABLE
SELECT * FROM slice WHERE id = sid UNION ALL SELECT * FROM descendant_slice(sid);
CREATE OR REPLACE TEMP MACRO direct_children_slice(sid) AS TABLE SELECT * FROM slice WHERE parent_id = sid"""
_FLOWS = """
CREATE OR REPLACE TEMP MACRO directly_connected_flow(sid) AS TABLE
WITH RECURSIVE fwd(id, next) AS (
  SELECT id, slice_in FROM flow WHERE slice_out = sid
  UNION SELECT f.id, f.slice_in FROM flow f JOIN fwd ON f.slice_out = fwd.next),
back(id, prev) AS (
  SELECT id, slice_out FROM flow WHERE slice_in = sid
  UNION SELECT f.id, f.slice_out FROM flow f JOIN back ON f.slice_in = back.prev)
SELECT * FROM flow WHERE id IN (SELECT id FROM fwd UNION SELECT id FROM back);
CREATE OR REPLACE TEMP MACRO following_flow(sid) AS TABLE
WITH RECURSIVE reach(slice_id, flow_id) AS (
  SELECT sid, NULL::BIGINT
  UNION
  SELECT f.slice_in, f.id
  FROM reach r JOIN slice x ON x.id = r.slice_id
  JOIN slice d ON d.track_id = x.track_id AND d.ts >= x.ts AND d.ts + d.dur <= x.ts + x.dur
                     AND (d.depth > x.depth OR d.id = x.id)
  JOIN flow f ON f.slice_out = d.id)
SELECT * FROM flow WHERE id IN (SELECT flow_id FROM reach);
CREATE OR REPLACE TEMP MACRO preceding_flow(sid) AS TABLE
WITH RECURSIVE reach(slice_id, flow_id) AS (
  SELECT sid, NULL::BIGINT
  UNION
  SELECT f.slice_out, f.id
  FROM reach r JOIN ancestor_slice_and_self(r.slice_id) a ON TRUE
  JOIN flow f ON f.slice_in = a.id)
SELECT * FROM flow WHERE id IN (SELECT flow_id FROM reach)"""
_SELF_DUR = """
CREATE OR REPLACE TEMP VIEW slice_self_dur AS
SELECT slice.id, slice.dur - COALESCE(c.child_dur, 0) AS self_dur
FROM slice LEFT JOIN (SELECT parent_id AS id, SUM(dur) AS child_dur FROM slice
                      WHERE parent_id IS NOT NULL GROUP BY parent_id) c USING (id)"""
_BOUNDS = """
CREATE OR REPLACE TEMP MACRO trace_start() AS (SELECT start_ts FROM trace_bounds);
CREATE OR REPLACE TEMP MACRO trace_end() AS (SELECT end_ts FROM trace_bounds);
CREATE OR REPLACE TEMP MACRO trace_dur() AS (SELECT end_ts - start_ts FROM trace_bounds)"""
_SCALARS = """
CREATE OR REPLACE TEMP MACRO iif(c, a, b) AS CASE WHEN c THEN a ELSE b END;
CREATE OR REPLACE TEMP MACRO time_to_us(t) AS t / 1e3;
CREATE OR REPLACE TEMP MACRO time_to_ms(t) AS t / 1e6;
CREATE OR REPLACE TEMP MACRO time_to_s(t) AS t / 1e9;
CREATE OR REPLACE TEMP MACRO time_from_us(t) AS CAST(round(t * 1e3) AS BIGINT);
CREATE OR REPLACE TEMP MACRO time_from_ms(t) AS CAST(round(t * 1e6) AS BIGINT);
CREATE OR REPLACE TEMP MACRO time_from_s(t) AS CAST(round(t * 1e9) AS BIGINT)"""
_PROCESS_TRACKS = """
CREATE OR REPLACE TEMP VIEW process_track AS SELECT id, name, type, upid FROM track WHERE type IN ('async', 'process');
CREATE OR REPLACE TEMP VIEW process_counter_track AS SELECT id, name, upid FROM counter_track WHERE upid IS NOT NULL"""

SQL_OBJECTS: dict[tuple[str, ...], tuple[tuple[str, ...], str]] = {
    # (names that make it wanted) -> (tables it reads, SQL)
    ("process_track", "process_counter_track", "process_slice", "thread_or_process_slice"):
        (("track", "counter_track"), _PROCESS_TRACKS),
    ("thread_slice", "thread_or_process_slice"): (("slice", "thread_track", "thread", "process"), _THREAD_SLICE),
    ("process_slice", "thread_or_process_slice"): (("slice", "process"), _PROCESS_SLICE),
    ("thread_or_process_slice",): ((), _THREAD_OR_PROCESS),
    ("slice_self_dur",): (("slice",), _SELF_DUR),
    ("ancestor_slice", "ancestor_slice_and_self", "descendant_slice", "descendant_slice_and_self",
     "direct_children_slice", "preceding_flow"): (("slice",), _HIERARCHY),
    ("directly_connected_flow", "following_flow", "preceding_flow"): (("slice", "flow"), _FLOWS),
    ("trace_start", "trace_end", "trace_dur"): (("trace_bounds",), _BOUNDS),
    ("iif", "time_to_us", "time_to_ms", "time_to_s", "time_from_us", "time_from_ms", "time_from_s"): ((), _SCALARS),
}


def object_names() -> list[str]:
    return sorted({n for names in SQL_OBJECTS for n in names})


def wanted_objects(named: set[str]) -> list[tuple[tuple[str, ...], str]]:
    """(tables read, SQL) of every object the query's ``named`` words call for, in creation order."""
    return [(reads, sql) for names, (reads, sql) in SQL_OBJECTS.items() if named & set(names)]
