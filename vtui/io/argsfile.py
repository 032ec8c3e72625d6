"""Where event args go while loading: a file on disk, memory-mapped when the load is done.

Args stay encoded (raw JSON bytes) and out of RAM: each decoded chunk's args are written to
the file and the columns keep (offset, length). Decoder processes write into disjoint regions
of the same file: a byte range of the trace reserves as many bytes as it spans (its args are a
subset of its bytes), so every process knows its offsets up front. Regions that end up shorter
stay sparse holes on disk.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from pathlib import Path

from vtui.io.mapguard import guarded
from vtui.tempfiles import temp_prefix


class MappedBlob:
    """Read-only bytes of a file via mmap; slicing returns ``bytes`` like a ``bytes`` object.

    Pickles as the path when the file is kept (a cache entry), else as a copy of its bytes.
    """

    def __init__(self, path: str | os.PathLike[str], keep: bool = True) -> None:
        self.path = str(path)
        self.keep = keep
        guarded()  # an args file cut meanwhile reads as zeros (undecodable args), not SIGBUS
        with open(self.path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            self._map = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ) if size else None
        self._size = size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, key: slice) -> bytes:
        if self._map is None:
            return b""
        return self._map[key]

    def buffer(self) -> memoryview:
        """The bytes without a copy (slicing the view costs no Python call into this class);
        drop the view and its slices before the map can close."""
        return memoryview(self._map) if self._map is not None else memoryview(b"")

    def drop_resident(self) -> None:
        """Unmap the pages read so far (they stay in the page cache): a pass over every row's args
        (``vtui.store.shapekeys`` when an entry is written) leaves the process no larger."""
        if self._map is not None and hasattr(mmap, "MADV_DONTNEED"):
            try:
                self._map.madvise(mmap.MADV_DONTNEED)
            except (OSError, ValueError):  # pragma: no cover - a platform without it
                pass

    def __reduce__(self):
        if self.keep:
            return (MappedBlob, (self.path, True))
        return (bytes, (self[:],))


class ArgsFile:
    """A growing file of args bytes; ``reserve`` hands out regions, ``append`` fills at the end."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        fd, path = tempfile.mkstemp(prefix=temp_prefix("args"), suffix=".tmp", dir=directory)
        self.fd = fd
        self.path = path
        self.size = 0

    def reserve(self, nbytes: int) -> int:
        base = self.size
        self.size += nbytes
        return base

    def append(self, data: bytes) -> int:
        base = self.reserve(len(data))
        if data:
            os.pwrite(self.fd, data, base)
        return base

    def writer(self) -> AppendWriter:
        return AppendWriter(self)

    def finish(self, keep: bool = False) -> MappedBlob | bytes:
        """Close the file and map it; unless ``keep`` (the cache takes it over), unlink it once mapped."""
        os.ftruncate(self.fd, self.size)
        os.close(self.fd)
        self.fd = -1
        if keep:
            return MappedBlob(self.path, keep=True)
        try:
            return MappedBlob(self.path, keep=False) if self.size else b""
        finally:
            os.unlink(self.path)

    def discard(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        Path(self.path).unlink(missing_ok=True)


class AppendWriter:
    """Args writer for a sink: each chunk goes at the current end of the file."""

    def __init__(self, args: ArgsFile) -> None:
        self.args = args

    def put(self, data: bytes) -> int:
        return self.args.append(data)


class RangeWriter:
    """Args writer for one byte range of the trace: writes sequentially inside a reserved region.

    Opens the file by path, so it works in another process.
    """

    def __init__(self, path: str, base: int, limit: int) -> None:
        self.fd = os.open(path, os.O_WRONLY)
        self.pos = base
        self.limit = base + limit

    def put(self, data: bytes) -> int:
        at = self.pos
        if at + len(data) > self.limit:  # cannot happen for raw slices of the range; never overrun a neighbour
            raise ValueError("args overflow their reserved region")
        if data:
            os.pwrite(self.fd, data, at)
        self.pos += len(data)
        return at

    def close(self) -> None:
        os.close(self.fd)
