"""How a trace is loaded, as one typed value: made at the edge (the CLI, the app's start, a call
of ``load_trace`` without options), passed down to the reader, the decoders and the cache.

This module is the one place that reads the environment for a load (``XDG_CACHE_HOME``,
``VTUI_CACHE_MAX``, ``VTUI_PURE_PYTHON``); nothing below the edge reads or writes it, so a
loader process gets its options as an argument, not through ``os.environ``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vtui.io.reader import MAX_INFLATE_RATIO
from vtui.units import parse_size
from vtui.xdg import xdg_home

DEFAULT_CACHE_MAX = 4_000_000_000  # bytes on disk (4 GB); a 1 GB trace's entry is ~0.4 GB


@dataclass(frozen=True)
class LoadOptions:
    cache: bool = True  # reopen from / save to the index cache
    cache_dir: Path | None = None  # the cache folder (``.../vtui``); None: ``default_cache_dir()``
    cache_max: int = DEFAULT_CACHE_MAX  # bytes on disk the cache may hold (least recently used go first)
    max_inflate: float = MAX_INFLATE_RATIO  # a .gz may inflate to this x its size (0: no limit)
    pure_python: bool = False  # skip the optional compiled column helper (the reference path)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, **changes) -> LoadOptions:
        """The defaults as the environment sets them, then ``changes`` (the command line's)."""
        env = os.environ if environ is None else environ
        base = cls(cache_dir=default_cache_dir(env), cache_max=parse_size(env.get("VTUI_CACHE_MAX", ""),
                                                                          DEFAULT_CACHE_MAX),
                   pure_python=env.get("VTUI_PURE_PYTHON") == "1")
        return dataclasses.replace(base, **changes)

    @property
    def cache_root(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else default_cache_dir()


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/vtui``, else ``~/.cache/vtui`` (``vtui.xdg``'s rule)."""
    return xdg_home("XDG_CACHE_HOME", environ) / "vtui"
