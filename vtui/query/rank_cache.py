"""The per-rank Parquet folders `vtui ranks --engine duckdb` keeps in the cache, checked as the
index cache's entries are: a folder is reused only when this user alone owns it (no other user
may write it), its ``check.json`` has this code's format, and every Parquet file has the size
and CRC-32 written there. A folder that fails is removed and the rank is written again: a cut
file is never "No magic bytes" on every run, an edited one never changes a figure. Folders
are this user's only (mode 0700, files 0600), count in the cache's cap and go with
`vtui cache clear`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec

from vtui.atomic import atomic_write

FORMAT = 1  # bump whenever what a rank folder holds changes: older folders are then rewritten
CHECK = "check.json"


class _Check(msgspec.Struct):
    format: int
    files: dict[str, tuple[int, int]]  # name -> (size, CRC-32)


def _crc(path: Path) -> int:
    from vtui.store.cache import _crc32

    crc = 0
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            crc = _crc32(block, crc)
    return crc


def make_folder(folder: Path) -> None:
    """The folder, for this user only (the cache folder above it exists)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)


def seal(folder: Path, names: list[str]) -> None:
    """Write ``check.json`` for the folder's files (last: a folder without it is not reused)."""
    files = {}
    for name in names:
        path = folder / name
        os.chmod(path, 0o600)
        files[name] = (path.stat().st_size, _crc(path))
    atomic_write(folder / CHECK, msgspec.json.encode(_Check(FORMAT, files)))
    os.chmod(folder / CHECK, 0o600)


def reusable(folder: Path, names: list[str]) -> bool:
    """True when the folder holds ``names`` exactly as sealed. A folder of this user's that
    fails is removed (to be written again); another user's is left alone and not used."""
    from vtui.store.cache import owner_problem

    if not folder.exists() and not folder.is_symlink():
        return False
    if folder.is_symlink() or not folder.is_dir() or owner_problem(folder) is not None:
        return False
    try:
        check = msgspec.json.decode((folder / CHECK).read_bytes(), type=_Check)
        good = check.format == FORMAT and sorted(check.files) == sorted(names) and all(
            (folder / n).stat().st_size == size and _crc(folder / n) == crc for n, (size, crc) in check.files.items())
    except (OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError):
        good = False
    if not good:
        shutil.rmtree(folder, ignore_errors=True)
    return good
