"""`vtui ranks --engine duckdb`: per-rank Parquet written rank by rank, then ranks.sql on DuckDB.

Each rank file is loaded alone (so peak memory is one rank's, whatever the number of ranks), its
steps, collective kernels and compute kernels are written as four small Parquet files beside the
index cache (reused while the trace file is unchanged), and the store is dropped before the next
rank. The cross-rank analysis is the SQL in ranks.sql; Python only assembles the result rows
(one per step, collective and rank) into the same `RanksReport` the Python engine builds.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vtui.analysis.ranks.analyse import (
    ALIGNS,
    Alignment,
    CollectiveRow,
    ExposedRow,
    RankRow,
    RanksReport,
    StepRow,
    Straggler,
    _detail,
    _natural,
    busbw_note,
    rejection_warning,
)
from vtui.analysis.ranks.tables import TABLES_VERSION, RankTable, rank_tables
from vtui.atomic import atomic_write
from vtui.errors import TraceLoadError, UsageError
from vtui.query import rank_cache
from vtui.tempfiles import temp_prefix

if TYPE_CHECKING:
    from vtui.options import LoadOptions

PARQUET = ("meta", "steps", "colls", "comp")
MEMORY_LIMIT = "1GB"  # DuckDB spills past it: the SQL's memory does not grow with the ranks either


def _libs():
    try:
        import duckdb
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("--engine duckdb needs duckdb and pyarrow: pip install 'vtui[sql]'") from None
    return duckdb, pa, pq


def sql_text() -> str:
    return resources.files("vtui.query").joinpath("ranks.sql").read_text(encoding="utf-8")


def statements(text: str) -> list[tuple[str, str, str]]:
    """(kind, name, sql) for each ``-- view: X`` / ``-- name: X`` block (``rank view`` / ``rank
    name``: run once per rank), in file order."""
    out: list[tuple[str, str, str]] = []
    for block in re.split(r"(?m)^-- (?=(?:rank )?(?:view|name): )", text)[1:]:
        head, _, body = block.partition("\n")
        kind, _, name = head.partition(": ")
        out.append((kind, name.strip(), body.strip().rstrip(";")))
    return out


def write_rank(table: RankTable, pos: int, folder: Path, pa, pq) -> None:
    """The four Parquet files of one rank (each written to a temp name, then renamed)."""
    i64 = pa.int64()
    n = len(table.coll_row)
    named = table.rank if table.rank is not None and 0 <= table.rank < 2**63 else None  # else: ranks by file order
    tables = {
        "meta": pa.table({"pos": pa.array([pos], i64), "named_rank": pa.array([named], i64),
                          "file": pa.array([table.file], pa.string()),
                          "world_size": pa.array([table.world_size], i64)}),
        "steps": pa.table({"pos": pa.array(np.full(len(table.step_names), pos), i64),
                           "idx": pa.array(np.arange(len(table.step_names)), i64),
                           "name": pa.array(table.step_names, pa.string()),
                           "start_ns": pa.array(table.step_start, i64), "end_ns": pa.array(table.step_end, i64)}),
        "colls": pa.table({"pos": pa.array(np.full(n, pos), i64), "idx": pa.array(np.arange(n), i64),
                           "kind": pa.array(table.coll_kind, pa.string()), "grp": pa.array(table.coll_group, pa.string()),
                           "group_size": pa.array(table.coll_size, i64), "bytes": pa.array(table.coll_bytes, i64),
                           "elems": pa.array(table.coll_elems, i64),
                           "start_ns": pa.array(table.coll_start, i64), "end_ns": pa.array(table.coll_end, i64),
                           "device": pa.array(table.coll_device, i64), "row": pa.array(table.coll_row, i64)}),
        "comp": pa.table({"pos": pa.array(np.full(len(table.comp_start), pos), i64),
                          "device": pa.array(table.comp_device, i64),
                          "start_ns": pa.array(table.comp_start, i64), "end_ns": pa.array(table.comp_end, i64)}),
    }
    folder.mkdir(parents=True, exist_ok=True)
    for name, t in tables.items():
        atomic_write(folder / f"{name}.parquet", partial(_write, pq, t))


def _write(pq, table, fh) -> None:
    pq.write_table(table, fh, compression="zstd")


def _rank_folder(root: Path, file: Path, pos: int, cache: bool) -> Path | None:
    if not cache:
        return None
    from vtui.store import cache as trace_cache

    key = trace_cache.entry_key([file])
    return None if key is None else root / f"{key}-t{TABLES_VERSION}-{pos}"


def prepare(path: str | os.PathLike, out: Path | None = None, cache: bool = True,
            progress: Callable[[int, int], None] | None = None,
            options: LoadOptions | None = None,
            skipped: list[str] | None = None) -> tuple[list[Path], Path | None]:
    """Per-rank Parquet folders for a trace folder (or file), loading one rank at a time; a
    rank whose folder is already complete is not loaded again, a rank that fails to load is
    left out and said in ``skipped``. Returns (folders, temp root to remove or None)."""
    skipped = [] if skipped is None else skipped
    from vtui.load.trace import load_trace, trace_files
    from vtui.store import cache as trace_cache

    _duckdb, pa, pq = _libs()
    files = trace_files(Path(path))
    temp = None
    if out is None and cache and trace_cache.work_dir() is not None:
        out = trace_cache.cache_root() / trace_cache.RANKS_FOLDER
    if out is None:
        temp = out = Path(tempfile.mkdtemp(prefix=temp_prefix("ranks", hidden=False)))
        cache = False
    folders: list[Path] = []
    skipped.clear()
    names = [f"{n}.parquet" for n in PARQUET]
    try:
        for pos, f in enumerate(files):
            folder = _rank_folder(out, f, pos, cache)
            if folder is not None and rank_cache.reusable(folder, names):
                os.utime(folder)  # used now: the cache's cap evicts the least recently used first
            else:
                if folder is None:
                    target = out / f"rank-file-{pos}"
                elif folder.exists() or folder.is_symlink():  # another user's: left alone, not used
                    temp = temp or Path(tempfile.mkdtemp(prefix=temp_prefix("ranks", hidden=False)))
                    target, folder = temp / f"rank-file-{pos}", None
                else:
                    target = folder
                try:
                    store = load_trace(f, cache=cache, options=options)
                except TraceLoadError as exc:  # as the Python engine: the rank is skipped, and said so
                    skipped.append(f"skipped {f.name}: {exc}")
                    continue
                rank_cache.make_folder(target)
                write_rank(rank_tables(store)[0], pos, target, pa, pq)
                del store  # before the next rank: one rank in memory at a time
                if folder is not None:
                    rank_cache.seal(folder, names)
                folder = target
            folders.append(folder)
            if progress:
                progress(pos + 1, len(files))
        if not folders:
            raise TraceLoadError(f"{path}: no rank could be loaded ({'; '.join(skipped)})")
    except BaseException:  # ctrl-c, SIGTERM, no rank loaded: no temp folder left behind
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
        raise
    return folders, temp


def _list(paths: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def run_sql(folders: list[Path], align: str = "epoch") -> RanksReport:
    """ranks.sql over the per-rank Parquet folders, as a `RanksReport`."""
    if align not in ALIGNS:
        raise UsageError(f"--align must be one of {', '.join(ALIGNS)}")
    duckdb, _pa, _pq = _libs()
    con = duckdb.connect()
    spill = tempfile.mkdtemp(prefix=temp_prefix("duckdb", hidden=False))
    try:
        con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        con.execute(f"SET temp_directory = '{spill.replace(chr(39), chr(39) * 2)}'")
        subs = {f"{n}_files": _list([f / f"{n}.parquet" for f in folders]) for n in PARQUET}
        subs.update(rank="named_rank", align=align, step_key="name")
        stmts = statements(sql_text())
        results: dict[str, list[tuple[Any, ...]]] = {}
        names = con.execute("SELECT count(*), count(DISTINCT named_rank), min(named_rank), count(named_rank) "
                            f"FROM read_parquet({subs['meta_files']})").fetchone()
        warnings = []
        if names[2] is None or names[2] < 0 or names[3] != names[0] or names[1] != names[0]:
            why = "some files name no rank" if names[3] != names[0] or (names[2] or 0) < 0 else \
                "two files name the same rank"
            warnings.append(f"{why}: ranks numbered by file order")
            subs["rank"] = "pos"
        def run(kind: str, name: str, sql: str, extra: dict[str, str]) -> None:
            values = {**subs, **extra}  # one pass: a "{rank}" inside a substituted path stays as it is
            text = re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), sql)
            if kind.endswith("view"):
                if name not in PARQUET:  # DuckDB recomputes a view at each use: keep the result instead
                    text = text.replace("CREATE OR REPLACE TEMP VIEW", "CREATE OR REPLACE TEMP TABLE", 1)
                con.execute(text)
            else:
                results.setdefault(name, []).extend(con.execute(text).fetchall())

        for kind, name, sql in stmts:
            if name == "steps" and kind == "name":  # the step alignment is known once step_shape ran
                repeated, shared, total = results["step_shape"][0]
                subs["step_key"] = "name" if total and not repeated and shared else "idx"
            if not kind.startswith("rank "):
                run(kind, name, sql, {})
        for folder in folders:  # rank by rank: one rank's kernels in memory at a time
            # its own pos: an export may lack a rank that failed, so the list's order is not it
            pos = int(con.execute(f"SELECT pos FROM read_parquet({_list([folder / 'meta.parquet'])})").fetchone()[0])
            extra = {"rank_colls": f"read_parquet({_list([folder / 'colls.parquet'])})",
                     "rank_comp": f"read_parquet({_list([folder / 'comp.parquet'])})", "rank_filter": f"r.pos = {pos}"}
            for kind, name, sql in stmts:
                if kind.startswith("rank "):
                    run(kind, name, sql, extra)
        results["exposed"].sort(key=lambda row: row[0])
        return _report(results, subs["step_key"], align, warnings + _rejects(results.get("rejected", [])))
    except duckdb.Error as exc:  # a Parquet file that went bad after its check, a limit hit …
        from vtui.query.engine import one_line

        raise UsageError(f"the ranks' SQL failed: {one_line(str(exc))[:500]}") from None
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def run_ranks(path: str | os.PathLike, align: str = "epoch", cache: bool = True,
              progress: Callable[[int, int], None] | None = None,
              options: LoadOptions | None = None) -> RanksReport:
    from vtui.store import cache as trace_cache

    skipped: list[str] = []
    folders, temp = prepare(path, cache=cache, progress=progress, options=options, skipped=skipped)
    try:
        report = run_sql(folders, align)
        report.warnings[:0] = skipped
        return report
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
        if cache and any(trace_cache.cache_root() in f.parents for f in folders):
            trace_cache.enforce_limit()  # the rank folders count in the cache's cap


def _rejects(rows: list[tuple]) -> list[str]:
    """The rejected-matches warning from the ``rejected`` query (one row per rejected match)."""
    out = []
    for gkey, seq, reason, kmin, kmax, bmin, bmax, zmin, zmax, emin, emax, _n in rows:
        kinds = [kmin, kmax]
        nbytes = [int(b) for b in (bmin, bmax) if b is not None]
        sizes = [int(z) for z in (zmin, zmax) if z is not None]
        elems = [int(e) for e in (emin, emax) if e is not None]
        out.append((str(gkey), int(seq), str(reason), _detail(str(reason), kinds, nbytes, sizes, elems)))
    out.sort(key=lambda x: (x[0], x[1]))
    return rejection_warning(int(rows[0][-1]) if rows else 0, out)


def _report(res: dict[str, list[tuple]], step_key: str, align: str, warnings: list[str]) -> RanksReport:
    rank_rows = res["ranks"]
    ids = [int(r[1]) for r in rank_rows]
    at = {r: i for i, r in enumerate(ids)}
    n = len(ids)
    ranks = [RankRow(int(r[1]), str(r[2]), int(r[5]), int(r[6]), int(r[4])) for r in rank_rows]
    common = res["first_common"]
    if align == "collective" and n > 1 and common:
        alignment = Alignment("collective", ids[0], f"the end of the first common collective ({common[0][0]} "
                                                    f"#{common[0][1]}) lined up with rank {ids[0]}'s")
    elif align == "collective" and n > 1:
        alignment = Alignment("epoch", None, "no collective common to every rank: epoch clocks kept")
    else:
        alignment = Alignment("epoch", None, "each rank's own epoch clock (Kineto baseTimeNanoseconds applied)")

    waits: dict[tuple[str, int], list[int | None]] = {}
    for gkey, seq, rank, wait, _row, _a in res["waits"]:
        waits.setdefault((gkey, int(seq)), [None] * n)[at[int(rank)]] = int(wait)
    collectives, last_of, lost_of = [], [], []
    for (gkey, seq, name, grp, nr, size, nbytes, start, lat, skew, last, algbw, busbw, lost) in res["collectives"]:
        collectives.append(CollectiveRow(
            name=name, group=grp, seq=int(seq), ranks=int(nr), group_size=int(size) if size and size > 0 else None,
            bytes=int(nbytes) if nbytes is not None and nbytes > 0 else None, start_ns=int(start),
            latency_ns=int(lat), skew_ns=int(skew), last_rank=int(last),
            algbw_gbps=None if algbw is None else round(float(algbw), 4),
            busbw_gbps=None if busbw is None else round(float(busbw), 4), waits_ns=waits[(gkey, int(seq))],
            busbw_note=busbw_note(int(nbytes) if nbytes is not None else -1, int(lat), int(size or 0))))
        last_of.append(at[int(last)])
        lost_of.append(int(lost or 0))

    by = "index" if step_key == "idx" else "annotation"
    per_step: dict[Any, list[tuple]] = {}
    for key, rank, name, dur, a_start, _a_end in res["steps"]:
        per_step.setdefault(key, []).append((int(rank), name, int(dur), int(a_start)))
    late_rows: dict[Any, list[tuple[int, int, int]]] = {}
    for key, last, cnt, lost in res["step_last"]:
        late_rows.setdefault(key, []).append((at[int(last)], int(cnt), int(lost or 0)))
    step_waits: dict[Any, dict[int, int]] = {}
    for key, rank, wait in res["step_waits"]:
        step_waits.setdefault(key, {})[at[int(rank)]] = int(wait)
    keys = sorted(per_step, key=_natural) if by == "annotation" else sorted(per_step)
    steps, step_late = [], []
    for i, key in enumerate(keys):
        rows = per_step[key]
        durs: list[int | None] = [None] * n
        for rank, _name, dur, _s in rows:
            durs[at[rank]] = dur
        starts = [s for *_x, s in rows]
        have = [d for d in durs if d is not None]
        slowest = max(range(n), key=lambda p: (durs[p] if durs[p] is not None else -1, -p))
        late = max(late_rows[key], key=lambda x: (x[1], x[2], -x[0]))[0] if key in late_rows else None
        step_late.append(late)
        waits = step_waits.get(key, {})
        steps.append(StepRow(i, rows[0][1] if by == "index" else str(key), durs, max(have) - min(have),
                             max(starts) - min(starts), ids[slowest], None if late is None else ids[late],
                             [None if d is None else waits.get(p, 0) for p, d in enumerate(durs)]))

    straggler = None
    if collectives:
        counts = np.bincount(last_of, minlength=n)
        lost_by = np.bincount(last_of, weights=lost_of, minlength=n).astype(np.int64)
        who = max(range(n), key=lambda p: (counts[p], lost_by[p], -p))
        straggler = Straggler(ids[who], sum(1 for x in step_late if x == who), int(counts[who]), int(lost_by[who]))

    exposed = []
    for rank, comm, over in res["exposed"]:
        comm, over = int(comm), int(over)
        exposed.append(ExposedRow(int(rank), comm, over, comm - over, round(100.0 * (comm - over) / comm, 2) if comm else 0.0))
    sizes = [int(r[3]) for r in rank_rows if r[3]]
    top = max(sizes) if sizes else (max(ids) + 1 if ids else 0)
    missing = [r for r in range(top) if r not in at] if top <= 1 << 16 else []
    return RanksReport(ranks=ranks, missing_ranks=missing, alignment=alignment, steps_aligned_by=by, steps=steps,
                       straggler=straggler, collectives=collectives, exposed=exposed, warnings=warnings)

