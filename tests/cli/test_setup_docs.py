"""The set-up a newcomer reads: the README's first screen names the Python it needs and the
extras `vtui query` / `vtui mcp` need; pytest prints why a test was skipped."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.helpers import ROOT


def _first_screen() -> str:
    """The README up to its first section heading (what a newcomer reads before scrolling)."""
    text = (ROOT / "README.md").read_text()
    return text[:text.index("\n## ")]


def test_readme_first_screen_names_python_and_the_extras():
    head = _first_screen()
    assert re.search(r"Python ≥ 3\.11", head)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.11"' in pyproject  # the README says what the package enforces
    assert "vtui query" in head and "'.[sql]'" in head
    assert "vtui mcp" in head and "'.[mcp]'" in head


def test_pytest_prints_the_reason_of_a_skip(tmp_path):
    """The project's pytest options (pyproject addopts) print skip reasons in the summary."""
    test = tmp_path / "test_skipping.py"
    test.write_text("import pytest\n\n\ndef test_x():\n    pytest.skip('the shared traces are absent here')\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
                          "-n", "0", "-p", "no:cacheprovider", str(test)], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert "SKIPPED" in out.stdout and "the shared traces are absent here" in out.stdout, out.stdout[-2000:]
