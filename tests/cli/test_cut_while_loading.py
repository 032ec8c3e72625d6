"""A trace cut shorter while it loads, and SIGHUP to the whole process group mid-load: a one-line message or a quiet exit 129, never SIGBUS, a traceback, a temp file
left behind or a process left running.

Each case runs `vtui info --no-cache` in a subprocess through a small script that injects one
step at a fixed point of the load (no sleeps): the file is cut after it was mapped and before
its pages are read (in the loading process, or in a decoder process), or SIGHUP goes to the
process group once the decoders were asked for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="needs /proc and Linux mapping semantics")

SCRIPT = """
import os, signal, sys
import vtui.load.parallel as parallel
import vtui.load.trace as trace

STEP = os.environ["CUT_TEST_STEP"]
PATH = sys.argv[1]


def cut():
    os.truncate(PATH, os.path.getsize(PATH) // 3)


if STEP == "cut-in-decoder" and __name__ != "__main__":  # a spawned decoder imports this file too
    real_here = parallel._decode_here

    def cut_then_decode(*args, **kwargs):  # the decoder has mapped the file; nothing read yet
        cut()
        return real_here(*args, **kwargs)

    parallel._decode_here = cut_then_decode

if __name__ == "__main__":
    parallel.MIN_RANGE = 1 << 16  # a small file still goes to the decoder processes
    parallel.ParallelDecode.steal = False
    trace.PARALLEL_MIN = 0
    trace.default_jobs = lambda: 2  # decoders however busy the machine is (vtui starts one per idle core)
    real_scan, real_join = trace.scan_trace, parallel._join_in_order

    def scan(data, *args, **kwargs):
        if STEP == "cut-mapped":  # mapped at its full size, not one page read yet
            cut()
        return real_scan(data, *args, **kwargs)

    def join(*args, **kwargs):  # the decoders were asked for: the terminal closes
        if STEP == "hangup":
            os.killpg(os.getpgid(0), signal.SIGHUP)
        return real_join(*args, **kwargs)

    trace.scan_trace, parallel._join_in_order = scan, join
    from vtui.cli import main

    sys.exit(main(["info", PATH, "--no-cache"] + sys.argv[2:]))
"""


def _marked(marker: str) -> list[int]:
    """Living processes whose environment holds ``marker`` (the run's children inherit it)."""
    found = []
    needle = f"CUT_TEST_MARK={marker}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if needle in environ.split(b"\0") and stat[stat.rindex(")") + 2] != "Z":
            found.append(int(entry))
    return found


def _run(tmp_path: Path, step: str, events: int = 40_000) -> tuple[subprocess.CompletedProcess, list[Path], list[int]]:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps([{"ph": "X", "name": f"op{i % 7}", "pid": 1, "tid": i % 3, "ts": i, "dur": 1,
                                  "args": {"k": i}} for i in range(events)]))
    script = tmp_path / "run_cut.py"  # a file: spawned decoders import the parent's main module
    script.write_text(SCRIPT)
    temp = tmp_path / "tmp"
    temp.mkdir()
    marker = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temp), "CUT_TEST_STEP": step,
           "CUT_TEST_MARK": marker, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, str(script), str(trace)], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300, start_new_session=True)
    left = _marked(marker)
    for pid in left:  # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    return result, sorted(temp.iterdir()), left


@pytest.mark.parametrize("step", ["cut-mapped", "cut-in-decoder"])
def test_a_trace_cut_while_it_loads_is_one_line_not_sigbus(tmp_path, step):
    if step == "cut-in-decoder":  # decoders map the file only where the guard is built (else it is read)
        pytest.importorskip("_vtui_mapguard", reason="the SIGBUS guard is not built (setup.py build_ext)")
    result, temp_left, processes_left = _run(tmp_path, step)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])  # not -7 (SIGBUS)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "changed while it was being loaded" in lines[0], result.stderr[-2000:]
    assert temp_left == [] and processes_left == []


def test_sighup_to_the_process_group_mid_load_is_quiet(tmp_path):
    """The resource tracker, killed by the hangup, was relaunched by the cleanup and printed a
    warning and one KeyError traceback per semaphore."""
    pytest.importorskip("_vtui_mapguard", reason="no decoder processes without the SIGBUS guard (setup.py build_ext)")
    result, temp_left, processes_left = _run(tmp_path, "hangup")
    assert result.returncode == 128 + signal.SIGHUP, result.stderr[-2000:]
    assert result.stderr == "" and result.stdout == ""
    assert temp_left == [] and processes_left == []


def test_the_sigbus_handler_calls_only_async_signal_safe_functions():
    """A signal handler may call only async-signal-safe functions (signal-safety(7)): anything it
    needs that is not (sysconf: the page size) is worked out in install() and kept in a static.
    mmap is not on POSIX's list but is a plain system call on Linux, the only place the guard is built."""
    import re

    source = (ROOT / "vtui" / "io" / "_mapguard.c").read_text()
    body = source[source.index("on_sigbus(int signum"):]
    body = body[body.index("{"): body.index("\n}\n")]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    called = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", body)) - {"if", "while", "for", "sizeof", "return"}
    called -= set(re.findall(r"\(\s*(?:unsigned\s+)?(\w+)\s*\*?\s*\)", body))  # casts like (void *)
    assert called <= {"mmap", "sigaction"}, called
