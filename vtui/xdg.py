"""The XDG base directories vtui uses: ``$XDG_CACHE_HOME`` (the index cache) and
``$XDG_CONFIG_HOME`` (``keys.toml``), one rule for both. Not platformdirs: the rule is these few
lines, and on macOS platformdirs would move an existing cache to ~/Library/Caches."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

_FALLBACK = {"XDG_CACHE_HOME": ".cache", "XDG_CONFIG_HOME": ".config"}


def xdg_home(variable: str, environ: Mapping[str, str] | None = None) -> Path:
    """``$variable``, else ``~/.cache`` / ``~/.config``: an unset, empty or relative value is
    ignored, as the XDG spec says."""
    base = (os.environ if environ is None else environ).get(variable) or ""
    return Path(base) if os.path.isabs(base) else Path.home() / _FALLBACK[variable]
