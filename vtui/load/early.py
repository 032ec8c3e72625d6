"""The app's reopen of a cached trace, started before the UI is imported.

``vtui TRACE`` spends ~0.3 CPU-s importing Textual and the UI before its first frame; checking a
1 GB trace's cache entry costs as much again (checksums, bounds: numpy and CRC code that mostly
runs without the GIL). Started in a thread first, the check runs while the UI imports, and the
app's load (``load_in_background``) takes the result instead of opening the entry itself.
"""

from __future__ import annotations

import threading
from pathlib import Path

from vtui.options import LoadOptions
from vtui.store.store import TraceStore


class EarlyOpen:
    """One trace's cache entry, opened in a daemon thread; ``result`` waits for it."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path, self.root = Path(path), root
        self._store: TraceStore | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="vtui-early-open", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from vtui.load.trace import open_cached  # here, in the thread: its imports overlap the UI's

        try:
            self._store = open_cached(self.path, self.root)
        except BaseException as exc:  # handed to the load, which reports it as it would its own
            self._error = exc

    def result(self) -> TraceStore | None:
        """The store, or None (no entry, or a stale one); raises what the open raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._store


_pending: EarlyOpen | None = None


def start(path: Path, options: LoadOptions) -> None:
    """Start opening ``path``'s cache entry (nothing when the cache is off)."""
    global _pending
    _pending = EarlyOpen(path, options.cache_root) if options.cache else None


def take(path: Path, root: Path) -> EarlyOpen | None:
    """The early open of this very trace and cache folder, once; None when there is none."""
    global _pending
    got, _pending = _pending, None
    if got is None or got.path != Path(path) or got.root != root:
        return None
    return got
