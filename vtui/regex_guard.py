"""The one regex engine for every pattern a user types (``--track``, ``--step``, search, the
app's track filter, the call tree's ``/``, Insights' ``r``).

It is RE2 (``google-re2``): matching takes time linear in the text, whatever the pattern, so
``(a+)+$`` cannot backtrack for hours and no search needs a process to kill; compiling is
bounded too (RE2 refuses a program over ``max_mem`` and counted repetitions past 1,000, where
the ``regex`` module spent 7 s compiling ``((((a{50}){50}){50}){50})`` outside its ``timeout=``).
What RE2 leaves out — lookaround and backreferences — is refused in one line.

A long table (every interned name, every slice's args) is matched string by string with a
:class:`Budget` checked between strings: a time limit and a cancel event, so the app's ``esc``
stops a search at once and a CLI ``--time-limit`` holds even over gigabytes of args.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from vtui.errors import UsageError

MAX_PATTERN = 16_384  # characters: a pattern is typed, not generated
_MAX_MEM = 32 << 20  # RE2's compile budget (its default is 8 MiB)
_CHECK_EVERY = 2048  # strings matched between two looks at the clock
_CHECK_BYTES = 1 << 20  # …or this many bytes, whichever comes first


class RegexError(UsageError):
    """A pattern RE2 cannot compile; the message is one line and names the pattern as typed."""


class RegexStopped(UsageError):
    """A match over a table ran past its time limit or was cancelled."""


@dataclass
class Budget:
    """How long a match over a table may run (``seconds`` ≤ 0 or None: no limit) and a cancel event."""

    seconds: float | None = None
    cancel: threading.Event | None = None
    started: float = field(default_factory=time.monotonic)

    def check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RegexStopped("search cancelled")
        if self.seconds and self.seconds > 0 and time.monotonic() - self.started > self.seconds:
            raise RegexStopped(f"the search ran past {self.seconds:g} s and was stopped "
                               "(narrow --range / --track, or raise --time-limit)")


def _re2():
    try:
        from re2 import _re2  # the C++ binding itself: the Python wrapper costs ~3 µs per call
    except ImportError:  # pragma: no cover — a declared dependency
        raise UsageError("the regex engine google-re2 is not installed (pip install google-re2)") from None
    return _re2


def _describe(error: bytes | str) -> str:
    """RE2's message, with a hint where it is a Python feature RE2 leaves out."""
    if isinstance(error, bytes):
        error = error.decode("utf-8", "replace")
    text = error.split(": ", 1)[0] if ": " in error else error
    if "perl operator" in text or "escape sequence" in text:
        return f"{text} (RE2 syntax: no lookahead, lookbehind or backreferences)"
    if "repetition" in text or "too large" in text:
        return f"{text} (counted repetitions go up to 1000, and the compiled pattern must stay small)"
    return text


class UserRegex:
    """A compiled user pattern. ``search`` on one text; ``mask`` over a table of texts."""

    def __init__(self, pattern: str, ignore_case: bool = False) -> None:
        from vtui.safe_text import clip, escape_controls

        self.pattern = pattern
        self.ignore_case = ignore_case
        shown = escape_controls(clip(pattern, 80))
        if len(pattern) > MAX_PATTERN:
            raise RegexError(f"invalid regex '{shown}': longer than {MAX_PATTERN:,} characters")
        lib = _re2()
        options = lib.RE2.Options()
        options.log_errors = False  # RE2 would print to stderr, over the app's screen
        options.never_capture = True  # only "is there a match": no groups to fill
        options.max_mem = _MAX_MEM
        options.case_sensitive = not ignore_case
        try:
            encoded = pattern.encode("utf-8")
        except UnicodeEncodeError:
            raise RegexError(f"invalid regex '{shown}': it holds a lone surrogate") from None
        compiled = lib.RE2(encoded, options)
        if not compiled.ok():
            raise RegexError(f"invalid regex '{shown}': {_describe(compiled.error())}")
        self._rx = compiled
        self._anchor = lib.RE2.Anchor.UNANCHORED

    def search_bytes(self, data: bytes) -> bool:
        return self._rx.Match(self._anchor, data, 0, len(data))[0][0] >= 0

    def search(self, text: str) -> bool:
        return self.search_bytes(text.encode("utf-8", "surrogatepass"))

    def mask(self, texts: Sequence[str], budget: Budget | None = None) -> np.ndarray:
        """Per text: does the pattern match somewhere in it (``re.search`` semantics)."""
        return self.mask_bytes([t.encode("utf-8", "surrogatepass") for t in texts], budget)

    def mask_bytes(self, texts: Sequence[bytes], budget: Budget | None = None) -> np.ndarray:
        out = np.zeros(len(texts), dtype=bool)
        match, anchor = self._rx.Match, self._anchor
        since, size = 0, 0
        for i, data in enumerate(texts):
            n = len(data)
            out[i] = match(anchor, data, 0, n)[0][0] >= 0
            since += 1
            size += n
            if budget is not None and (since >= _CHECK_EVERY or size >= _CHECK_BYTES):
                budget.check()
                since, size = 0, 0
        if budget is not None:
            budget.check()
        return out


def compile_user(pattern: str, ignore_case: bool = False) -> UserRegex:
    """A user's pattern compiled by the guarded engine; RegexError (one line) when it is not valid."""
    return UserRegex(pattern, ignore_case)


def smart_ignore_case(pattern: str) -> bool:
    """Any case unless the pattern has a capital (``aten::mm`` finds ``ATen::MM``)."""
    return pattern == pattern.lower()
