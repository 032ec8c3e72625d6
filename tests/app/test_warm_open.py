"""A warm open (the trace in the cache) goes straight to the trace: the entry is mapped as the app
mounts, before anything is drawn, so no loading stage is drawn or load worker started; without an
entry, or with one that cannot be read, the load worker runs as before. Start-up work stays off
the first frame: the imports leave the collector on with their objects frozen, and the modules
only a pane or a key needs are not imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from tests.app.screen import read_screen
from tests.helpers import FIXTURES
from vtui.load.trace import load_trace
from vtui.ui import app as app_module
from vtui.ui.app import VtuiApp

ROOT = FIXTURES.parent


def _trace(tmp_path):
    path = tmp_path / "trace.json.gz"
    shutil.copy(FIXTURES / "hf_llama_stack.json.gz", path)
    return path


def _no_worker(*args, **kwargs):
    raise AssertionError("the load worker ran for a cached trace")


async def test_a_cached_trace_is_shown_without_the_loading_stage(tmp_path, monkeypatch):
    path = _trace(tmp_path)
    first = load_trace(path)  # writes the entry
    monkeypatch.setattr(app_module, "load_in_background", _no_worker)
    app = VtuiApp(path)
    async with app.run_test(size=(160, 40)) as pilot:
        assert app.store is not None and app.load_error is None  # before any pause: mapped on mount
        assert not app.query("#loading")
        await pilot.pause()
        text = read_screen(app).text
        assert f"{first.event_count:,} events" in text[0] and "loading" not in text[0]
        assert any("window" in line for line in text)  # the status line under the timeline


async def test_without_an_entry_the_load_worker_runs(tmp_path, monkeypatch):
    path = _trace(tmp_path)
    calls = []
    real = app_module.load_in_background

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(app_module, "load_in_background", counted)
    app = VtuiApp(path)
    async with app.run_test(size=(160, 40)) as pilot:
        for _ in range(500):
            if app.store is not None or app.load_error is not None:
                break
            await pilot.pause(0.01)
        await pilot.pause()
        assert calls == [path] and app.load_error is None
        assert f"{app.store.event_count:,} events" in read_screen(app).text[0]


async def test_an_unreadable_path_is_told_by_the_load_worker(tmp_path):
    app = VtuiApp(tmp_path / "missing.json")
    async with app.run_test(size=(160, 40)) as pilot:
        for _ in range(500):
            if app.load_error is not None:
                break
            await pilot.pause(0.01)
        await pilot.pause()
        assert app.load_error is not None and "missing.json" in app.load_error
        assert any("Could not open the trace:" in line for line in read_screen(app).text)


def test_the_app_imports_leave_the_collector_on_and_skip_what_only_a_pane_needs():
    code = ("import gc, json, sys; import vtui.ui.app; "
            "print(json.dumps({'enabled': gc.isenabled(), 'frozen': gc.get_freeze_count(), "
            "'modules': sorted(m for m in sys.modules if m.startswith('vtui'))}))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                    check=True, cwd=ROOT).stdout)
    assert out["enabled"] and out["frozen"] > 20_000  # ~50,000 objects (Textual, numpy, vtui)
    lazy = {"vtui.analysis.gpu.roofline", "vtui.present.why_text", "vtui.analysis.why.critical", "vtui.analysis.steps.detect",
            "vtui.present.tables"}
    assert not lazy & set(out["modules"])
