"""Fixtures for every test folder (plain functions and paths are in helpers.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.helpers import QWEN, SHARED_TRACES, STEPLOOP
from vtui.load.trace import load_trace


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
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))  # no user keys.toml


# One load per test module (as each module had its own before): the app tests share these stores.
@pytest.fixture(scope="module")
def steploop_store():
    return load_trace(STEPLOOP)


@pytest.fixture(scope="module")
def qwen_store():
    return load_trace(QWEN)


@pytest.fixture
def open_app():
    """``async with open_app(trace, size) as (app, pilot)``: the app on a trace (a path, loaded
    without the cache, or a store), at a terminal size, settled after its first frame."""
    from contextlib import asynccontextmanager

    from tests.helpers import settle
    from vtui.ui.app import VtuiApp

    @asynccontextmanager
    async def opened(trace, size: tuple[int, int] = (160, 48)):
        if isinstance(trace, (str, Path)):
            path, store = Path(trace), load_trace(trace, cache=False)
        else:
            store = trace
            path = Path(store.sources[0].path)
        app = VtuiApp(path, store=store)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            yield app, pilot

    return opened


def _slow_list() -> tuple[set[str], tuple[str, ...]]:
    lines = [ln.strip() for ln in (Path(__file__).parent / "slow_tests.txt").read_text().splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    return {ln for ln in lines if "::" in ln}, tuple(ln for ln in lines if "::" not in ln)


def pytest_collection_modifyitems(config, items) -> None:
    """Mark the tests listed in slow_tests.txt ``slow`` (the default loop deselects them)."""
    ids, files = _slow_list()
    for item in items:
        if item.nodeid in ids or item.nodeid.split("::")[0] in files:
            item.add_marker(pytest.mark.slow)
