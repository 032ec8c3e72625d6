"""`vtui ranks`: every figure against a plain-Python reading of the raw JSON, on synthetic rank
folders with known answers and on the real HTA traces; the DuckDB engine must agree."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import msgspec
import pytest

from benchmarks.ranks_synth import rank_events, slow_rank, write_rank
from tests.helpers import FIXTURES, read_raw
from vtui.analysis.ranks.analyse import analyse_ranks
from vtui.analysis.ranks.tables import collective_kind, rank_number, rank_tables
from vtui.cli import main
from vtui.load.trace import load_trace, trace_files

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")
from vtui.query.ranks import run_ranks  # noqa: E402

NCCL_NAME = re.compile(r"(?i)^(nccl|rccl)\w*kernel")
DTYPE = {"float": 4, "half": 2, "bfloat16": 2, "long": 8, "int": 4, "unsigned char": 1, "signed char": 1, "byte": 1}
BUS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
       "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n}


# ---- the reference: plain Python over the raw JSON ---------------------------------------------
def _ns(v) -> int:
    return int(round(Decimal(str(v)) * 1000))


def _raw(path: Path) -> dict:
    doc = read_raw(path)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def _kind(name: str) -> str:
    return collective_kind(name)  # the name table only (checked on its own below)


def _elems(args: dict) -> int:
    n = max([v for v in (args.get("In msg nelems"), args.get("Out msg nelems")) if isinstance(v, int)] or [0])
    if not n and isinstance(args.get("Input Dims"), list):
        for d in args["Input Dims"]:
            if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
                p = 1
                for x in d:
                    p *= x
                n = max(n, p)
    return n


def _bytes(args: dict) -> int:
    size = DTYPE.get(str(args.get("dtype", "")).lower()) or DTYPE.get(str((args.get("Input type") or [""])[0]).lower(), 0)
    n = max([v for v in (args.get("In msg nelems"), args.get("Out msg nelems")) if isinstance(v, int)] or [0])
    if not n and isinstance(args.get("Input Dims"), list):
        for d in args["Input Dims"]:
            if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
                p = 1
                for x in d:
                    p *= x
                n = max(n, p)
    return n * size if n and size else -1


def reference(folder: Path, align: str = "epoch") -> dict:
    """The report's figures, by brute force over each file's events."""
    ranks = []
    for path in trace_files(folder):
        doc = _raw(path)
        ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
        base = doc.get("baseTimeNanoseconds") if isinstance(doc.get("baseTimeNanoseconds"), int) else 0
        gpu_pids = {e["pid"] for e in ev if e.get("cat") == "kernel"}
        def t(e, base=base):
            return _ns(e["ts"]) + base, _ns(e["ts"]) + _ns(e.get("dur", 0)) + base
        steps = sorted((t(e), e["name"]) for e in ev if re.fullmatch(r"ProfilerStep#\d+", e["name"])
                       and e["pid"] not in gpu_pids)
        by_corr = {(e["args"] or {}).get("correlation"): e for e in ev if e.get("cat") == "cuda_runtime"}
        flows = {}
        for e in doc["traceEvents"]:
            if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
                flows.setdefault(e["id"], {})[e["ph"]] = e
        ops = [e for e in ev if e["name"] == "record_param_comms" or e["name"].startswith("nccl:")]
        colls, comp = [], []
        for e in ev:
            if e.get("cat") != "kernel":
                continue
            if not NCCL_NAME.match(e["name"]):
                comp.append((e["pid"], *t(e)))
                continue
            args = e.get("args") or {}
            launch = by_corr.get(args.get("correlation"))
            around = [o for o in ops if launch is not None and o["pid"] == launch["pid"] and o["tid"] == launch["tid"]
                      and o["ts"] <= launch["ts"] and o["ts"] + o["dur"] >= launch["ts"] + launch["dur"]]
            around.sort(key=lambda o: o["name"] != "record_param_comms")
            found = [args] + [o.get("args") or {} for o in around]
            name = next((a["Collective name"] for a in found if a.get("Collective name")), None)
            name = name or next((o["name"] for o in around if o["name"].startswith("nccl:")), e["name"])
            group = next((str(a["Process Group Name"]) for a in found if "Process Group Name" in a), "")
            size = next((a["Group size"] for a in found if isinstance(a.get("Group size"), int)), 0)
            pg_ranks = next((a["Process Group Ranks"] for a in found if "Process Group Ranks" in a), None)
            if not size and pg_ranks is not None:
                size = len(json.loads(pg_ranks)) if isinstance(pg_ranks, str) else len(pg_ranks)
            world = (doc.get("distributedInfo") or {}).get("world_size")
            if not size and world and (group == "0" or any(a.get("Process Group Description") == "default_pg" for a in found)):
                size = world
            nbytes = next((b for b in map(_bytes, found) if b > 0), -1)
            elems = next((n for n in map(_elems, found) if n > 0), 0)
            colls.append(dict(start=t(e)[0], end=t(e)[1], kind=_kind(name), group=group, size=size, bytes=nbytes, elems=elems,
                              dev=e["pid"]))
        colls.sort(key=lambda c: c["start"])
        seen = {}
        for c in colls:
            c["gkey"] = c["group"] or "?" + c["kind"]
            c["seq"] = seen.get(c["gkey"], 0)
            seen[c["gkey"]] = c["seq"] + 1
        ranks.append(dict(rank=rank_number(doc, str(path)), steps=steps, colls=colls, comp=comp, file=path.name))
    if any(r["rank"] is None for r in ranks) or len({r["rank"] for r in ranks}) < len(ranks):
        for i, r in enumerate(ranks):
            r["rank"] = i
    ranks.sort(key=lambda r: r["rank"])
    # matches: a (group, seq) of 2+ ranks whose kernels disagree on kind, bytes or group size is rejected
    groups = {}
    for p, r in enumerate(ranks):
        for c in r["colls"]:
            groups.setdefault((c["gkey"], c["seq"]), []).append((p, c))
    rejected = {}
    for key, members in groups.items():
        if len(members) < 2:
            continue
        for field, why in (("kind", "kinds differ"), ("bytes", "sizes differ"), ("elems", "sizes differ"),
                           ("size", "group sizes differ")):
            known = {c[field] for _p, c in members if field == "kind" or c[field] > 0}
            if len(known) > 1:
                rejected[key] = why
                break
    groups = {k: v for k, v in groups.items() if k not in rejected}
    offsets = [0] * len(ranks)
    if align == "collective" and len(ranks) > 1:
        common = set.intersection(*({(c["gkey"], c["seq"]) for c in r["colls"]} for r in ranks)) - set(rejected)
        if common:
            first = min(common, key=lambda k: (k[1], k[0]))
            ends = [next(c["end"] for c in r["colls"] if (c["gkey"], c["seq"]) == first) for r in ranks]
            offsets = [ends[0] - e for e in ends]
    out_c = []
    for (gkey, seq), members in groups.items():
        durs = [c["end"] - c["start"] for _p, c in members]
        lat = min(durs)
        arr = [(c["start"] + offsets[p], p) for p, c in members]
        latest = max(a for a, _ in arr)
        last = min(p for a, p in arr if a == latest)
        first_c = members[0][1]
        n = max(c["size"] for _p, c in members)  # known sizes agree; 0: unknown, never the ranks present
        nbytes = max(c["bytes"] for _p, c in members)
        waits = [None] * len(ranks)
        for p, c in members:
            waits[p] = c["end"] - c["start"] - lat
        bw = nbytes / lat if nbytes > 0 and lat > 0 else None
        out_c.append(dict(name=first_c["kind"], group=first_c["group"], seq=seq, ranks=len(members), group_size=n or None,
                          bytes=nbytes if nbytes > 0 else None,
                          start_ns=min(a for a, _ in arr), latency_ns=lat, skew_ns=latest - min(a for a, _ in arr),
                          last_rank=ranks[last]["rank"], algbw_gbps=None if bw is None else round(bw, 4),
                          busbw_gbps=None if bw is None or not n else round(bw * BUS.get(first_c["kind"], lambda n: 1.0)(n), 4),
                          waits_ns=waits, _lost=sum(w for w in waits if w is not None) - waits[last], _last=last,
                          _key=(gkey, seq)))
    out_c.sort(key=lambda c: (c["start_ns"], c["_key"][0], c["_key"][1]))
    # exposed, per rank and GPU
    exposed = []
    for r in ranks:
        comm = over = 0
        for dev in {c["dev"] for c in r["colls"]}:
            cu = _union([(c["start"], c["end"]) for c in r["colls"] if c["dev"] == dev])
            ku = _union([(s, e) for d, s, e in r["comp"] if d == dev])
            comm += sum(e - s for s, e in cu)
            over += sum(max(0, min(e, ke) - max(s, ks)) for s, e in cu for ks, ke in ku)
        exposed.append(dict(rank=r["rank"], comm_ns=comm, overlapped_ns=over, exposed_ns=comm - over))
    # steps, by annotation
    names = sorted({n for r in ranks for _t, n in r["steps"]}, key=lambda s: int(s.split("#")[1]))
    steps = []
    for name in names:
        durs = [next((e - s for (s, e), n in r["steps"] if n == name), None) for r in ranks]
        have = [d for d in durs if d is not None]
        # the step's collectives: those the lowest rank with the step started inside it
        p0 = next(p for p, d in enumerate(durs) if d is not None)
        s0, e0 = next(w for w, n in ranks[p0]["steps"] if n == name)
        inside = [c for c in out_c if c["waits_ns"][p0] is not None and s0 + offsets[p0] <= next(
            x["start"] for x in ranks[p0]["colls"] if (x["gkey"], x["seq"]) == c["_key"]) + offsets[p0] < e0 + offsets[p0]]
        waits = [None if d is None else sum(c["waits_ns"][p] or 0 for c in inside) for p, d in enumerate(durs)]
        steps.append(dict(name=name, durations_ns=durs, skew_ns=max(have) - min(have), waits_ns=waits))
    counts = {}
    for c in out_c:
        counts.setdefault(c["_last"], []).append(c["_lost"])
    straggler = None
    if counts:
        who = max(counts, key=lambda p: (len(counts[p]), sum(counts[p]), -p))
        straggler = dict(rank=ranks[who]["rank"], collectives_last=len(counts[who]), lost_ns=sum(counts[who]))
    return dict(ranks=[r["rank"] for r in ranks], offsets=offsets, collectives=out_c, exposed=exposed, steps=steps,
                straggler=straggler, rejected=rejected, matches=sum(1 for v in groups.values() if len(v) > 1) + len(rejected))


def _union(iv: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def check(folder: Path, align: str = "epoch") -> dict:
    """Both engines against the reference; returns the Python engine's report as plain data."""
    ref = reference(folder, align)
    py, _ = analyse_ranks(rank_tables(load_trace(folder, cache=False)), align)
    sql = run_ranks(folder, align, cache=False)
    got = msgspec.to_builtins(py)
    assert got == msgspec.to_builtins(sql)  # both engines agree on everything
    assert [r["rank"] for r in got["ranks"]] == ref["ranks"]
    assert [r["offset_ns"] for r in got["ranks"]] == ref["offsets"]
    keys = ("name", "group", "seq", "ranks", "group_size", "bytes", "start_ns", "latency_ns", "skew_ns", "last_rank",
            "algbw_gbps", "busbw_gbps", "waits_ns")
    assert [{k: c[k] for k in keys} for c in got["collectives"]] == [{k: c[k] for k in keys} for c in ref["collectives"]]
    assert [{k: e[k] for k in ("rank", "comm_ns", "overlapped_ns", "exposed_ns")} for e in got["exposed"]] == ref["exposed"]
    if got["steps_aligned_by"] == "annotation":
        assert [{k: s[k] for k in ("name", "durations_ns", "skew_ns", "waits_ns")} for s in got["steps"]] == ref["steps"]
    rejects = [w for w in got["warnings"] if "matches rejected" in w]
    if ref["rejected"]:
        (w,) = rejects
        assert w.startswith(f"{len(ref['rejected'])} of {ref['matches']} matches rejected: ")
        for reason in set(ref["rejected"].values()):
            assert reason in w
        for gkey, seq in sorted(ref["rejected"])[:5]:
            assert f"{gkey} #{seq}: " in w  # each rejected match named
    else:
        assert not rejects
    if ref["straggler"] is not None:
        s = got["straggler"]
        assert {k: s[k] for k in ("rank", "collectives_last", "lost_ns")} == ref["straggler"]
    return got


# ---- synthetic folders ----------------------------------------------------------------------------
def _folder(tmp_path: Path, ranks=4, steps=3, slow=2, clocks=None, names=None, drop=(), dist=True, flows=True,
            bases=None) -> Path:
    folder = tmp_path / "ranks"
    folder.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        if r in drop:
            continue
        shift = (clocks or {}).get(r, 0)
        base = None if bases is None else bases[r]
        if base is not None:
            shift -= (base - bases[0]) // 1000  # the file's ts are relative to its own base time
        ev = rank_events(r, ranks, steps, slow_rank(slow), clock_us=shift, flows=flows and r % 2 == 0)
        name = names[r] if names else f"trace_rank{r}.json"
        write_rank(folder, name, ev, r if dist else None, ranks, base)
    return folder


def test_a_rank_that_computes_longer_is_the_straggler(tmp_path):
    got = check(_folder(tmp_path))
    c = got["collectives"]
    assert len(c) == 3 and all(x["last_rank"] == 2 and x["latency_ns"] == 200_000 for x in c)
    # rank r computes 1000 + 37 r (+500 on rank 2) µs: it waits for rank 2 that much less
    assert c[0]["waits_ns"] == [(1000 + 37 * 2 + 500 - (1000 + 37 * r)) * 1000 if r != 2 else 0 for r in range(4)]
    assert c[0]["skew_ns"] == (37 * 2 + 500) * 1000
    assert c[0]["algbw_gbps"] == round((1 << 20) * 4 / 200_000, 4)
    assert c[0]["busbw_gbps"] == round((1 << 20) * 4 / 200_000 * 2 * 3 / 4, 4)
    s = got["straggler"]
    assert (s["rank"], s["steps_last"], s["collectives_last"]) == (2, 3, 3)
    assert s["lost_ns"] == 3 * sum((574 - 37 * r) * 1000 for r in (0, 1, 3))
    # a rank's all-reduce kernel is its wait + the 200 µs transfer; 50 µs of it run beside a compute kernel
    waits = [(574 - 37 * r) * 1000 if r != 2 else 0 for r in range(4)]
    assert [x["exposed_ns"] for x in got["exposed"]] == [3 * (w + 150_000) for w in waits]
    assert got["steps_aligned_by"] == "annotation" and [s["skew_ns"] for s in got["steps"]] == [30_000] * 3
    assert all(s["waits_ns"] == waits for s in got["steps"])  # one all-reduce per step


def test_clock_offsets_are_undone_by_collective_alignment(tmp_path):
    clean = check(_folder(tmp_path / "a"))
    skewed_dir = _folder(tmp_path / "b", clocks={1: 70_000, 3: -4_000})
    epoch = check(skewed_dir)
    assert epoch["collectives"][0]["skew_ns"] != clean["collectives"][0]["skew_ns"]
    aligned = check(skewed_dir, "collective")
    assert [r["offset_ns"] for r in aligned["ranks"]] == [0, -70_000_000, 0, 4_000_000]
    for a, b in zip(aligned["collectives"], clean["collectives"]):
        assert (a["skew_ns"], a["last_rank"], a["waits_ns"]) == (b["skew_ns"], b["last_rank"], b["waits_ns"])
    assert aligned["alignment"]["method"] == "collective"


def test_kineto_base_times_put_ranks_on_one_epoch(tmp_path):
    clean = check(_folder(tmp_path / "a"))
    based = check(_folder(tmp_path / "b", bases=[1_700_000_000_000_000_000 + k * 3_000_000 for k in range(4)]))
    for a, b in zip(based["collectives"], clean["collectives"]):
        assert (a["skew_ns"], a["last_rank"], a["waits_ns"]) == (b["skew_ns"], b["last_rank"], b["waits_ns"])


def test_a_missing_rank(tmp_path):
    got = check(_folder(tmp_path, drop=(1,)))
    assert got["missing_ranks"] == [1] and [r["rank"] for r in got["ranks"]] == [0, 2, 3]
    assert all(c["ranks"] == 3 and c["group_size"] == 4 and c["waits_ns"][1] == 0 for c in got["collectives"])


def test_ranks_from_old_and_new_file_names(tmp_path):
    names = ["job_dp0_pp0_tp0_dcp0_ep0_rank0.1773709742.pt.trace.json", "worker-rank-1.1700.pt.trace.json",
             "rank-2.Jul_15_10_52_41.1074.pt.trace.json", "host_rank3.json"]
    got = check(_folder(tmp_path, names=names, dist=False, flows=False))
    assert [r["file"] for r in got["ranks"]] == names
    assert got["straggler"]["rank"] == 2 and not got["warnings"]


def test_rank_number_rules():
    assert rank_number({"distributedInfo": {"rank": 5}}, "x_rank3.json") == 5
    assert rank_number({}, "a_dp0_pp0_tp3_dcp0_ep0_rank3.123.pt.trace.json.gz") == 3
    assert rank_number({}, "x-rank-12.json") == 12
    assert rank_number({}, "rank-34.Jul_15.json") == 34
    assert rank_number({}, "frankly.json") is None and rank_number({}, "trace.json") is None
    assert [collective_kind(x) for x in ("allreduce", "nccl:_all_gather_base", "_reduce_scatter_base",
                                         "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", "all_to_all")] == \
        ["all_reduce", "all_gather", "reduce_scatter", "all_reduce", "all_to_all"]


def test_files_naming_no_rank_are_numbered_by_order(tmp_path):
    got = check(_folder(tmp_path, names=["a.json", "b.json", "c.json", "d.json"], dist=False))
    assert got["warnings"] and [r["rank"] for r in got["ranks"]] == [0, 1, 2, 3]


# ---- real traces ----------------------------------------------------------------------------------
def test_hta_sampled_ranks(tmp_path):
    folder = tmp_path / "sampled"
    folder.mkdir()
    for r in (0, 1):
        (folder / f"hta__sampled_rank-{r}.json.gz").write_bytes((FIXTURES / "ranks" / f"hta__sampled_rank-{r}.json.gz").read_bytes())
    for align in ("epoch", "collective"):
        got = check(folder, align)
        # 10 kernels each, paired by order: 6 pairs are collectives of different sizes (an all-reduce
        # of 107,822,144 B against one of 105,033,720 B), left unmatched; 4 hold.
        assert len(got["collectives"]) == 4 and got["missing_ranks"] == list(range(2, 128))
        (w,) = got["warnings"]
        assert w.startswith("6 of 10 matches rejected: sizes differ (") and "105,033,720 vs 107,822,144 B" in w
        # No group recorded: the world size (128) is not assumed, nor the 2 files in the folder.
        assert all(c["group_size"] is None and c["busbw_gbps"] is None and "group size unknown" in c["busbw_note"]
                   and c["algbw_gbps"] is not None for c in got["collectives"])
    assert got["steps"][1]["durations_ns"] == [622_928_000, 630_639_000]


def test_hta_nccl_trace(shared_traces, tmp_path):
    """HTA's NCCL trace (rank 0 of 2): args on the kernel and on record_param_comms, ac2g flows."""
    got = check(shared_traces / "public" / "hta__nccl_data.json.gz")
    c = got["collectives"]
    assert len(c) == 21 and {x["name"] for x in c} == {"all_reduce", "broadcast"} and got["missing_ranks"] == [1]
    assert all(x["group"] == "0" and x["group_size"] == 2 for x in c)
    raw = [e for e in json.loads(json.dumps(read_raw(shared_traces / "public" / "hta__nccl_data.json.gz")))["traceEvents"]
           if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel_AllReduce")]
    assert sorted(x["bytes"] for x in c if x["name"] == "all_reduce") == sorted(e["args"]["In msg nelems"] * 4 for e in raw)


# ---- the command ------------------------------------------------------------------------------------
def test_cli_json_and_formats(tmp_path, capsys):
    folder = _folder(tmp_path)
    for engine in ("python", "duckdb"):
        assert main(["ranks", str(folder), "--json", "--engine", engine]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["straggler"]["rank"] == 2 and doc["engine"] == engine
    assert main(["ranks", str(folder), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "# collectives" in out and "all_reduce,0,0,4,4194304,200000,574000,2," in out
    assert main(["ranks", str(folder)]) == 0
    assert "straggler: rank 2" in capsys.readouterr().out


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    assert main(["ranks", str(tmp_path / "nope")]) != 0
    err = capsys.readouterr().err
    assert "no such file" in err and "Traceback" not in err


def test_duckdb_reuses_the_parquet_beside_the_cache(tmp_path):
    folder = _folder(tmp_path)
    first = msgspec.to_builtins(run_ranks(folder))
    from vtui.store.cache import cache_root

    written = sorted((cache_root() / "ranks-parquet").glob("*/colls.parquet"))
    assert len(written) == 4
    stamps = [p.stat().st_mtime_ns for p in written]
    assert msgspec.to_builtins(run_ranks(folder)) == first
    assert [p.stat().st_mtime_ns for p in written] == stamps  # read again, not rewritten
    from vtui.analysis.ranks.tables import TABLES_VERSION

    # the tables' rules are in the folder's name: a version that changed them writes new ones
    assert all(p.parent.name.endswith(f"-t{TABLES_VERSION}-{p.parent.name.rsplit('-', 1)[1]}") for p in written)


def test_a_trace_without_steps_or_collectives(tmp_path):
    got = check(FIXTURES / "kineto__before_fix_trace.json")
    assert got["collectives"] == [] and got["straggler"] is None and got["exposed"][0]["comm_ns"] == 0


def test_duckdb_engine_without_duckdb_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "duckdb", None)  # import duckdb now raises ImportError
    assert main(["ranks", str(FIXTURES / "ranks"), "--engine", "duckdb"]) != 0
    err = capsys.readouterr().err
    assert "pip install 'vtui[sql]'" in err and "Traceback" not in err
