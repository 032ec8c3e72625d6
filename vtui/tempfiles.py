"""Names of vtui's temp files, and the sweep that removes those whose process is gone.

A load writes temp files (the args file, an inflated gzip, the parallel decoder's ranges, a
cache entry being built); an export writes its output under a temp name first. Each is removed
on success, on error and on ctrl-c / SIGTERM / SIGHUP (the CLI turns those into exceptions). A
kill -9 or a power cut still leaves them, so their names carry the host and the process id,
and the next load sweeps the ones whose process no longer runs.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_HOST = hashlib.blake2b(socket.gethostname().encode("utf-8", "replace"), digest_size=3).hexdigest()
# .vtui-args-<host>-<pid>-xxxx.tmp, .vtui-gunzip-…, .vtui-ranges-…, .vtui-entry-… (cache root);
# vtui-load-<host>-<pid>-xxxx (the app's private loader folder, in the system temp folder);
# vtui-ranks-… / vtui-duckdb-… (`vtui ranks --engine duckdb`'s uncached Parquet and its SQL's spill).
_NAME = re.compile(r"^\.?vtui-(args|gunzip|ranges|entry|load|out|ranks|duckdb)-([0-9a-f]{6})-(\d+)-")
_OLD_NAMES = re.compile(r"^\.(vtui-(args|gunzip|ranges)-|[0-9a-f]{32}\.)")  # from before the host and pid
_ORPHAN_AGE_S = 60  # a temp of a finished process on this host: gone after a minute
_FOREIGN_AGE_S = 24 * 3600  # another host's (a shared home): its pid means nothing here


def temp_prefix(kind: str, owner_pid: int | None = None, hidden: bool = True) -> str:
    """The prefix for ``tempfile.mkstemp`` / ``mkdtemp`` of one kind of vtui temp file."""
    pid = os.getpid() if owner_pid is None else owner_pid
    return f"{'.' if hidden else ''}vtui-{kind}-{_HOST}-{pid}-"


def is_temp_name(name: str) -> bool:
    return bool(_NAME.match(name) or _OLD_NAMES.match(name))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process (or an odd pid): assume alive
    return True


def orphaned(path: Path, now: float | None = None, name: str | None = None) -> bool:
    """A vtui temp file/folder that no running process owns (``name``: its name without the
    part before the vtui prefix, e.g. an output's ``.out.json.`` in ``.out.json.vtui-out-…``)."""
    now = time.time() if now is None else now
    try:
        age = now - path.lstat().st_mtime
    except OSError:
        return False
    m = _NAME.match(path.name if name is None else name)
    if m is None:
        return bool(_OLD_NAMES.match(path.name)) and age > _FOREIGN_AGE_S / 24  # old-style names: an hour
    if m.group(2) != _HOST:
        return age > _FOREIGN_AGE_S
    pid = int(m.group(3))
    return pid != os.getpid() and age > _ORPHAN_AGE_S and not _pid_alive(pid)


@dataclass
class TempStats:
    count: int = 0
    bytes: int = 0


def temps_in(folder: Path) -> list[Path]:
    """vtui temp entries directly in ``folder`` (none when it cannot be listed)."""
    try:
        return [p for p in folder.iterdir() if is_temp_name(p.name)]
    except OSError:
        return []


def disk_bytes(path: Path) -> int:
    """Blocks used by a file, or by a folder's files (one level: what vtui writes)."""
    try:
        if path.is_symlink() or not path.is_dir():
            return path.lstat().st_blocks * 512
        return sum(f.lstat().st_blocks * 512 for f in path.iterdir())
    except OSError:
        return 0


def sweep(folders: list[Path]) -> TempStats:
    """Remove orphaned vtui temps in ``folders``; returns what was removed."""
    out = TempStats()
    now = time.time()
    for folder in folders:
        for path in temps_in(folder):
            if not orphaned(path, now):
                continue
            size = disk_bytes(path)
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except OSError:
                continue
            out.count += 1
            out.bytes += size
    return out


def system_temp() -> Path:
    return Path(tempfile.gettempdir())


_NAME_MAX = 255  # bytes in one file name on the common file systems
_TEMP_EXTRA = 48  # what an output's temp name adds: ".", "vtui-out-<host>-<pid>-", mkstemp's 8, ".tmp"


def output_temp_lead(target: Path) -> str:
    """``.<name>.`` in front of an output's temp name; for a long (legal) name, a shortened name
    and a hash of the whole, so the temp name fits in 255 bytes too."""
    name = target.name
    if len(os.fsencode(name)) + _TEMP_EXTRA <= _NAME_MAX:
        return f".{name}."
    digest = hashlib.blake2b(os.fsencode(name), digest_size=4).hexdigest()
    short = name[:40]  # 40 characters: at most 160 bytes of UTF-8
    return f".{short}~{digest}."


def sweep_outputs(target: Path) -> None:
    """Remove temp files of ``target`` (``.<name>.vtui-out-…``, see vtui.atomic) that a killed
    process left next to it: the next write of the same output cleans up after the last."""
    lead = output_temp_lead(target)
    try:
        found = [p for p in target.parent.iterdir() if p.name.startswith(lead + "vtui-out-")]
    except OSError:
        return
    now = time.time()
    for p in found:
        if p.is_file() and orphaned(p, now, p.name[len(lead):]):
            p.unlink(missing_ok=True)
