"""Shared helpers: where fixtures and the shared traces live, and a stdlib reader."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# VTUI_TESTS_WITHOUT_SHARED=1 runs the suite as CI does, where ../shared is absent.
SHARED_TRACES = (ROOT / "no-shared-traces" if os.environ.get("VTUI_TESTS_WITHOUT_SHARED")
                 else ROOT.parent / "shared" / "traces")


def read_raw(path: Path) -> dict | list:
    """The independent path: stdlib gzip + json, Chrome's repair for a cut array."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(text.rstrip().rstrip(",") + "]")


def raw_events(path: Path) -> list[dict]:
    doc = read_raw(path)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def norm(value):
    """Same pid/tid normalisation rule as documented: digit strings are numbers."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip("../shared/traces is not present")
    return SHARED_TRACES


def pytest_configure(config) -> None:
    """Before any fixture (module- and session-scoped ones load traces too): the index cache
    goes to a throw-away folder, never the real ~/.cache."""
    folder = tempfile.mkdtemp(prefix="vtui-test-cache-")
    config._vtui_cache_home = (folder, os.environ.get("XDG_CACHE_HOME"))
    os.environ["XDG_CACHE_HOME"] = folder


def pytest_unconfigure(config) -> None:
    folder, before = getattr(config, "_vtui_cache_home", (None, None))
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        if before is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Never write the index cache into the real ~/.cache: each test gets its own folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
