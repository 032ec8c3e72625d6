"""Plain functions and paths the tests share (fixtures live in conftest.py): where the traces are,
the independent reader of the raw JSON with the store's rules spelled out in plain Python, small
trace builders, and the Pilot steps that wait for the app."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from vtui.cli import main
from vtui.load.trace import load_trace
from vtui.store.store import TraceStore

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# VTUI_TESTS_WITHOUT_SHARED=1 runs the suite as CI does, where ../shared is absent.
SHARED_TRACES = (ROOT / "no-shared-traces" if os.environ.get("VTUI_TESTS_WITHOUT_SHARED")
                 else ROOT.parent / "shared" / "traces")

QWEN = FIXTURES / "tracelens__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
STACK = FIXTURES / "hf_llama_stack.json.gz"
STEPLOOP = FIXTURES / "hf_llama_steploop.json.gz"  # CPU Llama step loop: 32 engine_step regions
MI250 = FIXTURES / "hta__mi250_minitoy_train_ROCm6_2_kineto.json.gz"
UNCLOSED = FIXTURES / "catapult__main_thread_has_unclosed_slices.json"

# What the oracles count as device work, by the event's "cat" (lower case).
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
DEVICE_CATS = GPU_CATS | {"mtia_ccp_events"}


# ---- the independent path over the raw JSON ------------------------------------------------------
def read_raw(path: Path) -> dict | list:
    """Stdlib gzip + json, Chrome's repair for a cut array."""
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
    """The tid normalisation rule as documented: digit strings are numbers. (A digit-string *pid*
    stays a string in the store; no trace these oracles read has one.)"""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value


def raw_origin(events: list[dict]) -> float:
    """Time zero of the store: the smallest ts of a timed event (metadata does not count)."""
    return min(e["ts"] for e in events if e.get("ph") not in ("M", None) and "ts" in e)


def raw_span_ns(origin: float, e: dict) -> tuple[int, int]:
    """An event's start and end in ns from ``origin``, on the absolute ns grid as the store
    reads them (exact for the 3 decimals below 2**43 µs that the traces these oracles read hold)."""
    start = round(e["ts"] * 1000) - round(origin * 1000)
    return start, start + round(e.get("dur", 0) * 1000)


def union_length(intervals: list[tuple[int, int]]) -> int:
    """Length covered by the intervals, overlaps counted once (a plain sweep); empty ones add nothing."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def assert_same_columns(a: TraceStore, b: TraceStore, skip: tuple[str, ...] = ()) -> None:
    """Two stores hold equal columns in every event table (``skip``: columns allowed to differ)."""
    for table in ("slices", "instants", "counters", "flows"):
        ta, tb = getattr(a, table), getattr(b, table)
        for f in dataclasses.fields(ta):
            if f.name not in skip:
                assert np.array_equal(getattr(ta, f.name), getattr(tb, f.name)), (table, f.name)


# ---- small traces built in a test ----------------------------------------------------------------
def X(name: str, ts: float, dur: float, cat: str = "cpu_op", pid=1, tid=1, **args) -> dict:
    """A complete event (phase "X"); keyword arguments become its args."""
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "cat": cat, "args": args}


def write_trace(folder: Path, events: list[dict], name: str = "t.json") -> Path:
    path = folder / name
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def load_events(folder: Path, events: list[dict], name: str = "t.json") -> TraceStore:
    """The events written as a trace file and loaded without the index cache."""
    return load_trace(write_trace(folder, events, name), cache=False)


def cli_json(capsys, *args) -> dict | list:
    """Run ``vtui ARGS`` in process; it must succeed, and its output is JSON."""
    assert main([*map(str, args)]) == 0
    return json.loads(capsys.readouterr().out)


# ---- Pilot ---------------------------------------------------------------------------------------
async def settle(pilot, pauses: int = 1) -> None:
    """Let the app's workers finish, then let it repaint."""
    await pilot.app.workers.wait_for_complete()
    for _ in range(pauses):
        await pilot.pause()


async def answer_prompt(pilot, text: str) -> None:
    """Type into the open prompt and press enter; what it starts (a search) runs in a worker."""
    from vtui.ui.screens.modals import PromptScreen  # here, so that core tests never import Textual

    assert isinstance(pilot.app.screen, PromptScreen)
    pilot.app.screen.query_one("#prompt-input").value = text
    await pilot.press("enter")
    await settle(pilot)


class Hang(Exception):
    """A test ran past its deadline (what a hang becomes, instead of a stuck suite)."""


@contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise ``Hang`` in the main thread if the block runs past ``seconds`` (a bound, not a sleep)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def on_alarm(signum, frame):
        raise Hang(f"ran past {seconds:g} s: {what}")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def search_until_cancelled(monkeypatch):
    """Replace the app's search with one that runs until esc cancels it (RE2 ends every real one
    fast); returns the event set once it has started."""
    import threading

    import vtui.ui.timeline.searching as searching
    from vtui.regex_guard import RegexStopped

    started = threading.Event()

    def endless(store, text, tracks=None, ignore_case=False, budget=None):
        started.set()
        if not budget.cancel.wait(60):  # a bound for the test, not a sleep: esc sets it at once
            raise AssertionError("esc did not cancel the search")
        raise RegexStopped("search cancelled")

    monkeypatch.setattr(searching, "search", endless)
    return started


def write_entry_meta(entry: Path, meta: dict) -> None:
    """Write an index-cache entry's meta.json as an attacker would: its checksum in check.json
    made to agree, so the check that must catch a forged value is a deeper one."""
    import zlib

    body = json.dumps(meta).encode()
    (entry / "meta.json").write_bytes(body)
    sums = json.loads((entry / "check.json").read_text())
    sums["meta"] = zlib.crc32(body)
    (entry / "check.json").write_text(json.dumps(sums))
