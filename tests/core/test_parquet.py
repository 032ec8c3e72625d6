"""Parquet export, queried with DuckDB across the two sampled HTA ranks, checked against plain json."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

from tests.helpers import FIXTURES, SHARED_TRACES
from vtui.load.trace import load_trace

pa = pytest.importorskip("pyarrow", reason="pyarrow not installed (pip install 'vtui[parquet]')")
duckdb = pytest.importorskip("duckdb", reason="duckdb not installed")

from vtui.export.parquet import write_parquet  # noqa: E402


def _ranks():
    """The two sampled HTA ranks: from ../shared where present, else their copies in fixtures/ranks."""
    names = [f"hta__sampled_rank-{r}.json.gz" for r in (0, 1)]
    shared = [SHARED_TRACES / "public" / n for n in names]
    return shared if all(p.exists() for p in shared) else [FIXTURES / "ranks" / n for n in names]


def test_duckdb_over_a_folder_of_ranks(tmp_path):
    out = tmp_path / "pq"
    expected = {}
    for path in _ranks():
        write_parquet(load_trace(path, cache=False), out)
        doc = json.loads(gzip.decompress(path.read_bytes()))
        kernels = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
        by_name = defaultdict(int)
        for e in kernels:
            by_name[e["name"]] += round(e["dur"] * 1000)
        slowest = max(by_name.items(), key=lambda kv: kv[1])
        expected[doc["distributedInfo"]["rank"]] = (len(kernels), sum(by_name.values()), slowest)
    assert sorted(p.name.split(".")[0] for p in out.iterdir()) == ["rank0", "rank1"]
    con = duckdb.connect()
    rows = con.execute(f"""
        SELECT rank, count(*) AS kernels, sum(dur_ns) AS busy_ns
        FROM read_parquet('{out}/*/slices.parquet') WHERE cat = 'kernel' GROUP BY rank ORDER BY rank
    """).fetchall()
    assert [(r, n, busy) for r, n, busy in rows] == [(r, expected[r][0], expected[r][1]) for r in (0, 1)]
    top = con.execute(f"""
        SELECT rank, name, sum(dur_ns) AS t FROM read_parquet('{out}/*/slices.parquet')
        WHERE cat = 'kernel' GROUP BY rank, name QUALIFY row_number() OVER (PARTITION BY rank ORDER BY t DESC) = 1
        ORDER BY rank
    """).fetchall()
    assert [(name, t) for _, name, t in top] == [expected[r][2] for r in (0, 1)]
    # The README's straggler query: per step, the spread of its duration across ranks.
    steps: dict[str, dict[int, int]] = defaultdict(dict)
    for r, path in enumerate(_ranks()):
        for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]:
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"):
                steps[e["name"]][r] = round(e["dur"] * 1000)
    skew = con.execute(f"""
        SELECT name AS step, max(dur_ns) - min(dur_ns) AS skew_ns, arg_max(rank, dur_ns) AS slowest_rank
        FROM read_parquet('{out}/*/slices.parquet') WHERE name LIKE 'ProfilerStep#%'
        GROUP BY name ORDER BY skew_ns DESC
    """).fetchall()
    assert skew and sorted(skew) == sorted(
        (name, max(d.values()) - min(d.values()), max(d, key=d.get)) for name, d in steps.items())
    tracks = con.execute(f"SELECT count(*) FROM read_parquet('{out}/*/tracks.parquet')").fetchone()[0]
    assert tracks > 2


def test_every_table_round_trips(tmp_path):
    store = load_trace(FIXTURES / "hf_llama_stack.json.gz", cache=False)
    files = write_parquet(store, tmp_path, with_args=True)
    assert {f.stem for f in files} == {"slices", "instants", "counters", "flows", "tracks"}
    import pyarrow.parquet as pq

    folder = files[0].parent
    slices = pq.read_table(folder / "slices.parquet").to_pydict()
    assert len(slices["name"]) == len(store.slices)
    for k in (0, len(store.slices) // 2, len(store.slices) - 1):
        row = slices["row"][k]
        assert slices["name"][k] == store.name(row)
        assert slices["dur_ns"][k] == int(store.slices.end_ns[row] - store.slices.start_ns[row])
        assert json.loads(slices["args"][k]) == store.slice_args(row)
    flows = pq.read_table(folder / "flows.parquet")
    assert flows.num_rows == len(store.flows)
    assert pq.read_table(folder / "tracks.parquet").num_rows == len(store.tracks)


def test_vtui_export_format_parquet(tmp_path, capsys):
    from vtui.cli import main

    trace = FIXTURES / "hf_llama_stack.json.gz"
    out = tmp_path / "pq"
    assert main(["export", str(trace), "--format", "parquet", "-o", str(out)]) == 0
    assert "wrote 5 Parquet files for 1 rank(s)" in capsys.readouterr().out
    import pyarrow.parquet as pq

    folder = next(out.iterdir())
    assert pq.read_table(folder / "slices.parquet").num_rows == len(load_trace(trace).slices)
    assert main(["export", str(trace), "--format", "parquet", "-o", str(out)]) == 1  # exists: needs --force
    assert "already exists" in capsys.readouterr().err
    assert main(["export", str(trace), "--format", "parquet", "-o", str(out), "--force"]) == 0
    assert main(["export", str(trace), "--format", "parquet", "-o", str(out), "--range", "0:1ms"]) == 1
    assert "apply to JSON export" in capsys.readouterr().err
