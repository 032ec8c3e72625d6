"""Where a shared app's socket lives, and the checks that keep it its user's alone.

``$XDG_RUNTIME_DIR/vtui/<pid>.sock`` (the runtime folder is the user's, 0700, by the XDG spec),
else ``<tmp>/vtui-<uid>/<pid>.sock``. The ``vtui`` folder is made 0700; whoever made it, it is used
only when it is a real folder (not a link) owned by this user and closed to everyone else, and a
socket only when it is a socket owned by this user with mode 0600. Anything else is refused with
one line that says what is wrong: another user could have made it to listen in, or to answer as
the app.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vtui.errors import UsageError

SOCKET_SUFFIX = ".sock"


class ShareRefused(UsageError):
    """The folder or the socket is not safe to use; the message says why and what to do."""


def share_folder(environ: Mapping[str, str] | None = None, uid: int | None = None) -> Path:
    """The folder of the sockets (not made or checked here)."""
    env = os.environ if environ is None else environ
    uid = os.geteuid() if uid is None else uid
    runtime = env.get("XDG_RUNTIME_DIR") or ""
    if os.path.isabs(runtime) and os.path.isdir(runtime):
        return Path(runtime) / "vtui"
    return Path(tempfile.gettempdir()) / f"vtui-{uid}"


def private_folder(folder: Path, uid: int | None = None) -> Path:
    """``folder``, made 0700 when missing, then checked (``check_folder``)."""
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ShareRefused(f"cannot make {folder} for the share socket ({exc.strerror or exc})") from None
    check_folder(folder, uid)
    return folder


def check_folder(folder: Path, uid: int | None = None) -> None:
    """Refuse a folder that is a link, not this user's, or open to group or others."""
    uid = os.geteuid() if uid is None else uid
    try:
        st = os.lstat(folder)
    except OSError as exc:
        raise ShareRefused(f"{folder}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ShareRefused(f"{folder} is not a folder (a link or a file): refused, remove it")
    if st.st_uid != uid:
        raise ShareRefused(f"{folder} belongs to user {st.st_uid}, not to you ({uid}): refused")
    if st.st_mode & 0o077:
        raise ShareRefused(f"{folder} is open to other users (mode {stat.S_IMODE(st.st_mode):o}): refused; "
                           f"chmod 700 it")


def check_socket(path: Path, uid: int | None = None) -> None:
    """Refuse a socket that is not a socket, not this user's, or open to group or others."""
    uid = os.geteuid() if uid is None else uid
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise ShareRefused(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISSOCK(st.st_mode):
        raise ShareRefused(f"{path} is not a socket: refused")
    if st.st_uid != uid:
        raise ShareRefused(f"{path} belongs to user {st.st_uid}, not to you ({uid}): refused")
    if st.st_mode & 0o077:
        raise ShareRefused(f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o}): refused")


def socket_path(folder: Path, pid: int | None = None) -> Path:
    return folder / f"{os.getpid() if pid is None else pid}{SOCKET_SUFFIX}"


@dataclass(frozen=True)
class SharedApp:
    pid: int
    path: Path


def shared_apps(folder: Path, uid: int | None = None) -> list[SharedApp]:
    """The apps sharing now: sockets named by the pid of a live process, that pass ``check_socket``.
    A folder that fails ``check_folder`` is refused (ShareRefused); a missing one holds none."""
    if not folder.exists():
        return []
    check_folder(folder, uid)
    found = []
    for entry in sorted(folder.iterdir()):
        stem = entry.name[: -len(SOCKET_SUFFIX)] if entry.name.endswith(SOCKET_SUFFIX) else ""
        if not stem.isdigit() or not _alive(int(stem)):
            continue
        try:
            check_socket(entry, uid)
        except ShareRefused:
            continue
        found.append(SharedApp(int(stem), entry))
    return found


def sweep_stale(folder: Path, uid: int | None = None) -> int:
    """Remove this user's sockets left by apps that died without closing (SIGKILL); how many."""
    uid = os.geteuid() if uid is None else uid
    removed = 0
    for entry in folder.iterdir():
        stem = entry.name[: -len(SOCKET_SUFFIX)] if entry.name.endswith(SOCKET_SUFFIX) else ""
        if not stem.isdigit() or _alive(int(stem)):
            continue
        try:
            st = os.lstat(entry)
            if stat.S_ISSOCK(st.st_mode) and st.st_uid == uid:
                os.unlink(entry)
                removed += 1
        except OSError:
            continue
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: not an app of ours
        return False
    except OverflowError:
        return False
    return True
