"""The benchmarks as products: the speed table generated from JSON-lines results, the cases run by
``benchmarks/child.py`` against the vtui root asked for, and every ``bench_*.py`` importable without
doing any work."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from benchmarks import table
from tests.helpers import ROOT

SAMPLE = [
    {"file": "/far/a.json", "runs": 3, "events": 60315, "load_avg_1_5_min": [7.42, 8.3],
     "compare_cpu_s": 0.23, "floor_one_selection_cpu_s": 0.012, "ratio_to_floor": 19.01,
     "all_compare_cpu_s": [0.23, 0.25, 0.21], "note": "not a figure"},
    {"trace": "x|y\x1b", "runs": 1, "first_cpu_s": {"with": 0.16, "without": 0.156, "added_pct": 2.9},
     "first_all_cpu_s": {"with": [0.16]}, "first_by_analysis_cpu_s": {"steps": 0.05}, "load_average": 7.67,
     "flag_s": True},
    {"slices": 6000, "root": "/other", "repaint_ms": 14.041, "zoom_ms": 1234.5, "load_cpu_s": 0.5, "sqlite_mb": 2.0,
     "peak_rss_mb": 44},
]
EXPECTED = [
    "| compare | a.json (60,315 events) | compare_cpu_s 0.23; floor_one_selection_cpu_s 0.012; ratio_to_floor 19.01"
    " | 3 | 7.42 / 8.3 |",
    "| compare | x\\|y  | first_cpu_s.with 0.16; first_cpu_s.without 0.156; first_cpu_s.added_pct 2.9 | 1 | 7.67 |",
    "| compare | 6,000 slices, code: /other | repaint_ms 14.04; zoom_ms 1,234.5; load_cpu_s 0.5; peak_rss_mb 44 |  |  |",
]


def test_a_results_file_becomes_one_row_per_line(tmp_path: Path):
    (tmp_path / "compare.jsonl").write_text("\n".join(json.dumps(r) for r in SAMPLE) + "\n\n")
    assert table.table(tmp_path).splitlines() == [*table.HEADER, *EXPECTED]


def test_the_table_goes_between_the_markers_and_nothing_else_changes(tmp_path: Path):
    (tmp_path / "compare.jsonl").write_text(json.dumps(SAMPLE[0]) + "\n")
    readme = tmp_path / "README.md"
    before, after = "# Speed\n\nprose\n\n", "\n\nmore prose\n"
    readme.write_text(before + table.START + "\nold row\n" + table.END + after)
    assert table.main(["--results", str(tmp_path), "--readme", str(readme), "--check"]) == 1
    assert table.main(["--results", str(tmp_path), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text == before + table.START + "\n" + "\n".join([*table.HEADER, EXPECTED[0]]) + "\n" + table.END + after
    assert table.main(["--results", str(tmp_path), "--readme", str(readme), "--check"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "compare.jsonl"]  # no temp file left


def test_a_line_that_is_not_a_json_object_is_one_clear_error(tmp_path: Path, capsys):
    (tmp_path / "bad.jsonl").write_text('{"runs": 1}\nwrote 8 events\n')
    readme = tmp_path / "README.md"
    readme.write_text(table.START + "\n" + table.END + "\n")
    assert table.main(["--results", str(tmp_path), "--readme", str(readme)]) == 2
    assert capsys.readouterr().err.strip() == "benchmarks table: bad.jsonl:2: not JSON (Expecting value)"


def test_the_committed_table_is_what_the_committed_results_give():
    readme = table.README.read_text(encoding="utf-8")
    assert list(table.RESULTS.glob("*.jsonl")), "no results kept"
    assert table.with_table(readme, table.table()) == readme, "run `python -m benchmarks table`"


def test_every_benchmark_imports_without_doing_work(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError(f"work at import: {a[:1]}")

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "argv", ["bench", "--help"])
    for name in ("run", "Popen", "check_output", "call"):
        monkeypatch.setattr(subprocess, name, refuse)
    paths = sorted((ROOT / "benchmarks").glob("bench_*.py"))
    assert len(paths) > 10
    for path in paths:
        spec = importlib.util.spec_from_file_location(f"_imported_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        out = io.StringIO()
        with redirect_stdout(out):
            spec.loader.exec_module(module)
        assert out.getvalue() == "", path.name


def _child(root: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "VTUI_BENCH_ROOT": str(root), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "child.py"), *args], capture_output=True,
                          text=True, env=env, cwd=tmp_path)


def test_a_case_runs_in_a_fresh_process_on_the_root_asked_for(tmp_path: Path):
    trace = tmp_path / "t.json"
    events = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5} for i in range(7)]
    trace.write_text(json.dumps({"traceEvents": events}))
    done = _child(ROOT, tmp_path, "fresh:open_trace", str(trace))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"events": len(events)}
    # Another tree: its vtui is the one the case imports, not this checkout's.
    other = tmp_path / "other"
    (other / "vtui" / "load").mkdir(parents=True)
    (other / "vtui" / "__init__.py").write_text("")
    (other / "vtui" / "load" / "__init__.py").write_text("")
    (other / "vtui" / "load" / "trace.py").write_text(
        "class _S:\n    event_count = -7\n\ndef load_trace(path):\n    return _S()\n")
    done = _child(other, tmp_path, "fresh:open_trace", str(trace))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"events": -7}


@pytest.mark.parametrize("args", [[], ["no_colon"]])
def test_child_usage_is_one_line(tmp_path: Path, args: list[str]):
    done = _child(ROOT, tmp_path, *args)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
