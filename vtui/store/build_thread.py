"""Start a piece of the build in a thread while the caller goes on (numpy releases the GIL)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def soon(fn: Callable[..., T], in_thread: bool, *args: object) -> Callable[[], T]:
    """``fn(*args)``, started in a thread when ``in_thread`` (else run now); returns a function
    that waits for its result (and raises what it raised). The thread only reads the caller's
    arrays; if the caller fails before asking, the thread finishes its one task on its own (a
    daemon: it never holds up the interpreter's exit)."""
    if not in_thread:
        value = fn(*args)
        return lambda: value
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = fn(*args)
        except BaseException as exc:  # handed to whoever asks for the result
            outcome["error"] = exc

    thread = threading.Thread(target=work, name="vtui-build", daemon=True)
    thread.start()

    def result() -> T:
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    return result


def in_threads(tasks: Sequence[Callable[[], T]], threads: int) -> list[T]:
    """Each task's result, in order: run on up to ``threads`` threads (numpy releases the GIL in
    its passes), or one after the other in this thread when ``threads`` <= 1 or there is one task."""
    if threads <= 1 or len(tasks) <= 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(min(threads, len(tasks)), thread_name_prefix="vtui-build") as pool:
        return list(pool.map(lambda task: task(), tasks))
