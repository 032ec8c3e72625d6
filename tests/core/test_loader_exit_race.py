"""A loader process that sends its result and exits between two of the app's queue waits: the
result still counts (it was reported as "the loader process died" when the machine was busy)."""

from __future__ import annotations

import queue

import pytest

from tests.helpers import STACK
from vtui.errors import TraceLoadError
from vtui.load import background as loading
from vtui.load.trace import load_trace


class _ExitedLoader:
    """A loader that has already exited; its queue yields ``items`` only after one empty wait."""

    def __init__(self, items: list) -> None:
        self.items = items
        self.waits = 0

    # the multiprocessing context
    def Queue(self):  # noqa: N802 — multiprocessing's spelling
        return self

    def Process(self, *args, **kwargs):  # noqa: N802
        return self

    # the queue
    def get(self, timeout: float | None = None):
        self.waits += 1
        if self.waits == 1 or not self.items:
            raise queue.Empty
        return self.items.pop(0)

    # the process
    def start(self) -> None:
        pass

    def is_alive(self) -> bool:
        return False

    def join(self, timeout: float | None = None) -> None:
        pass


@pytest.fixture
def exited(monkeypatch):
    def install(items: list) -> _ExitedLoader:
        fake = _ExitedLoader(items)
        monkeypatch.setattr(loading, "PROCESS_THRESHOLD", 0)
        monkeypatch.setattr(loading.mp, "get_context", lambda *_: fake)
        return fake
    return install


def test_a_result_sent_just_before_exit_is_kept(exited):
    store = load_trace(STACK, cache=False)
    exited([("done", store)])
    assert loading.load_in_background(STACK, lambda _: None, cache=False) is store


def test_an_error_sent_just_before_exit_is_that_error(exited):
    exited([("error", "trace.json: bad thing")])
    with pytest.raises(TraceLoadError, match="bad thing"):
        loading.load_in_background(STACK, lambda _: None, cache=False)


def test_a_loader_that_said_nothing_died(exited):
    exited([])
    with pytest.raises(TraceLoadError, match="died"):
        loading.load_in_background(STACK, lambda _: None, cache=False)
