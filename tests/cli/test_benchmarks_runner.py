"""``python -m benchmarks``: one runner for every benchmark (names listed, a wrong name one line)."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks", *args], cwd=ROOT, capture_output=True, text=True)


def test_lists_every_benchmark_and_runs_one_by_name():
    listed = _run().stdout
    names = sorted(p.stem.removeprefix("bench_") for p in (ROOT / "benchmarks").glob("bench_*.py"))
    assert all(n in listed for n in names)
    out = _run("health", "--help")
    assert out.returncode == 0 and "bench_health.py" in out.stdout


def test_an_unknown_name_is_one_line_and_exit_2():
    out = _run("no_such")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "no benchmark 'no_such'" in out.stderr
