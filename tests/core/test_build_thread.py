"""The build's one way to run a piece in a thread: the result, or what it raised, reaches the caller."""

from __future__ import annotations

import threading

import pytest

from vtui.store.build_thread import soon


@pytest.mark.parametrize("in_thread", [False, True])
def test_result_and_where_it_ran(in_thread):
    ran_in: list[str] = []

    def work(a: int, b: int) -> int:
        ran_in.append(threading.current_thread().name)
        return a + b

    get = soon(work, in_thread, 2, 3)
    assert get() == 5 and get() == 5
    assert (ran_in[0] != threading.main_thread().name) is in_thread


@pytest.mark.parametrize("in_thread", [False, True])
def test_what_it_raised_reaches_the_caller(in_thread):
    def work() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        soon(work, in_thread)()
