"""Each sharing test gets its own private runtime folder ($XDG_RUNTIME_DIR), short enough for a
socket path, removed after."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def runtime_dir(monkeypatch) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="vtrt-"))  # mkdtemp: 0700, this user's
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
