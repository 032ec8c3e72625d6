"""A decoder process never outlives the load that started it: when the
loading process dies however it dies (kill -9 here; a SIGBUS on a trace cut while mapped), the
kernel kills its decoders (PR_SET_PDEATHSIG), so none is left running with parent 1."""

from __future__ import annotations

import os
import select
import subprocess
import sys

import pytest

from tests.helpers import ROOT

SCRIPT = """
import concurrent.futures as cf, multiprocessing as mp, os, signal, sys, time
from vtui.load.parallel import _die_with_parent

def busy():
    print(os.getpid(), flush=True)
    time.sleep(600)  # a decoder still at work when its parent dies

if __name__ == "__main__":
    pool = cf.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"), initializer=_die_with_parent)
    pool.submit(busy)
    sys.stdin.readline()  # the test has the worker's pid
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"), reason="Linux only")
def test_a_decoder_dies_with_the_process_that_started_it(tmp_path):
    script = tmp_path / "parent.py"  # a file: spawned workers import the parent's main module
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    assert ready, "the worker never started"
    worker = int(proc.stdout.readline())
    fd = os.pidfd_open(worker)
    try:
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == -9
        ready, _, _ = select.select([fd], [], [], 60)  # readable once the worker has exited
        assert ready, f"decoder {worker} still runs after its parent was killed"
    finally:
        os.close(fd)
        if proc.poll() is None:
            proc.kill()
