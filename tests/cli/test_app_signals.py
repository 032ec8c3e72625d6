"""SIGTERM / SIGHUP to the app while its loader process is half-way through a load: the app
stops the loader, the load's temp files are removed, and the app exits with 128 + signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "fixtures" / "kineto__before_fix_trace.json"

# Run as a file, so the spawned loader process imports it too (as ``__mp_main__``): there the
# hook below writes a marker after the first decoded chunk (its args file exists by then) and
# holds the load until a signal comes.
SCRIPT = r'''
import json, os, signal, sys
sys.path.insert(0, os.environ["VTUI_ROOT"])
import vtui.io.columns as columns
import vtui.load.background as background

background.PROCESS_THRESHOLD = 0  # even a small trace goes through the loader process
_add = columns.ColumnSink.add

def held_add(self, events, *more):
    _add(self, events, *more)
    if __name__ != "__main__":  # the loader process
        temps = [str(p) for p in _temps()]
        with open(os.environ["MARKER"] + ".tmp", "w") as fh:
            json.dump({"pid": os.getpid(), "temps": temps}, fh)
        os.replace(os.environ["MARKER"] + ".tmp", os.environ["MARKER"])
        while True:
            signal.pause()

def _temps():
    from pathlib import Path
    from vtui.tempfiles import temps_in
    return [p for d in os.environ["WATCH"].split(os.pathsep) for p in temps_in(Path(d))]

columns.ColumnSink.add = held_add

if __name__ == "__main__":
    from vtui.ui.app import VtuiApp
    app = VtuiApp(sys.argv[1], cache=sys.argv[2] == "cache")
    app.run(headless=True)
    print(json.dumps({"code": app.return_code}))
'''


def _wait_for(path: Path, proc: subprocess.Popen, limit_s: float = 120.0) -> dict:
    """The marker's content once it exists (polled: it comes from another process)."""
    deadline = time.monotonic() + limit_s
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the app ended before the load was held: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError("the loader never reached its first chunk")
        time.sleep(0.02)
    return json.loads(path.read_text())


@pytest.mark.parametrize("signum,cache", [(signal.SIGTERM, "cache"), (signal.SIGHUP, "no-cache")])
def test_a_signal_stops_the_load_and_removes_its_temp_files(tmp_path, signum, cache):
    script = tmp_path / "held_app.py"
    script.write_text(SCRIPT)
    cache_home, tmp = tmp_path / "xdg", tmp_path / "tmp"
    cache_home.mkdir()
    tmp.mkdir()
    marker = tmp_path / "marker.json"
    watch = [cache_home / "vtui", tmp]
    env = {**os.environ, "VTUI_ROOT": str(ROOT), "MARKER": str(marker), "XDG_CACHE_HOME": str(cache_home),
           "TMPDIR": str(tmp), "WATCH": os.pathsep.join(map(str, watch))}
    proc = subprocess.Popen([sys.executable, str(script), str(TRACE), cache], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    loader = None
    try:
        held = _wait_for(marker, proc)
        loader = held["pid"]
        assert held["temps"], "the held load should have temp files (an args file at least)"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err  # the script ran to its end: the app exited, not the process killed
        assert json.loads(out.strip().splitlines()[-1])["code"] == 128 + signum
        left = [p.name for d in watch if d.is_dir() for p in d.iterdir()
                if p.name.startswith((".vtui-", "vtui-"))]
        assert left == []
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if loader is not None:  # never leave a held loader behind, whatever failed
            try:
                os.kill(loader, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_load_progress_reaches_the_app_in_coarse_steps():
    from vtui.load.background import PROGRESS_STEP, _coarse

    seen: list[float] = []
    report = _coarse(seen.append)
    for k in range(100_001):
        report(k / 100_000)
    assert seen[0] == 0.0 and seen[-1] == 1.0
    assert len(seen) <= 1 / PROGRESS_STEP + 2
    assert all(b - a >= PROGRESS_STEP for a, b in zip(seen, seen[1:-1]))


STUCK = r'''
import os, signal, sys, threading
sys.path.insert(0, os.environ["VTUI_ROOT"])
from vtui.ui.app import VtuiApp

class Stuck(VtuiApp):
    def loaded(self, result):
        super().loaded(result)
        # What a worker blocked on the stopped event loop does to an exit: a thread that never ends.
        threading.Thread(target=threading.Event().wait, daemon=False).start()
        os.kill(os.getpid(), signal.SIGHUP)  # the terminal closed

app = Stuck(sys.argv[1], cache=False)
app.run(headless=True)
'''


def test_the_app_ends_on_a_signal_even_with_a_thread_that_never_ends(tmp_path):
    script = tmp_path / "stuck_app.py"
    script.write_text(STUCK)
    env = {**os.environ, "VTUI_ROOT": str(ROOT), "XDG_CACHE_HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, str(script), str(TRACE)], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.communicate(timeout=120)  # before: waited on the thread for good (and ignored SIGTERM)
        assert proc.returncode == 128 + signal.SIGHUP
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
