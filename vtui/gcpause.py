"""The cyclic garbage collector paused while a loop makes a million small objects."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Meanwhile no collection: each few hundred new objects set one off, and over a million of them
    (a track's Track, a timeline Row) that was two thirds of the time (measured); none forms a cycle."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def imports_frozen() -> Iterator[None]:
    """Around a program's start-up imports: no collection meanwhile, then what exists is frozen
    (``gc.freeze``): modules, classes and functions live as long as the process, and every full
    collection after would walk them all again (~30 ms each, one due right after the imports)."""
    with gc_paused():
        yield
    gc.freeze()
