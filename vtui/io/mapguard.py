"""Mapped trace files that shrink while they are read: zeros and a clean error, not SIGBUS.

A plain trace is memory-mapped (no copy of a GB file in RAM). Should another program cut the
file shorter meanwhile, touching a page past its new end raises SIGBUS, which kills the process
before any cleanup runs. The optional C helper ``_vtui_mapguard`` (``vtui/io/_mapguard.c``)
turns such reads into zeros and counts them; the loader then finds the file changed (its
fingerprint) and stops with its one-line message. Without the helper, ``guarded()`` is False
and the file is still mapped (a copy would cost the file's size in RAM and the parallel decoders):
a cut then ends the process with SIGBUS, as before the guard existed.
"""

from __future__ import annotations

try:
    import _vtui_mapguard as _guard
except ImportError:  # pragma: no cover - depends on the install (no compiler)
    _guard = None


def guarded() -> bool:
    """Install the guard in this process (idempotent); True when mapped reads are safe."""
    if _guard is None:
        return False
    try:
        return bool(_guard.install())
    except OSError:
        return False


def faults() -> int:
    """Pages read as zeros because their file had shrunk, in this process so far."""
    return int(_guard.faults()) if _guard is not None else 0
