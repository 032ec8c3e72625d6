"""Shared helpers: where fixtures and the shared traces live, and a stdlib reader."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED_TRACES = ROOT.parent / "shared" / "traces"


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


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Never write the index cache into the real ~/.cache: each test gets its own folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
