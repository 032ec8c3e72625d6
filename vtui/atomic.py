"""Writing output files safely: temp file in the same folder, then rename.

Every file vtui writes (exports, tables, cache entries) goes through `atomic_write`, so an error
or ctrl-c never leaves a half-written file, and an output never lands on an input trace.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from vtui.errors import UsageError
from vtui.tempfiles import output_temp_lead, sweep_outputs, temp_prefix


def check_output_path(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = (),
                      overwrite: bool = False) -> Path:
    """The resolved output path, or a UsageError when it would clobber an input or an existing file."""
    path = Path(out)
    target = _resolve(path)
    for src in inputs:
        src_path = _resolve(Path(src))
        if target == src_path or (src_path.is_dir() and src_path in target.parents):
            raise UsageError(f"{out}: refusing to write over (or into) the input trace")
    if path.is_dir():
        raise UsageError(f"{out}: is a directory")
    return _free_target(out, path, target, overwrite)


def check_output_folder(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = (),
                        overwrite: bool = False) -> Path:
    """The output folder for a multi-file export (one file per rank), checked like `check_output_path`;
    a folder that holds an input is refused, since its files could be overwritten."""
    path = Path(out)
    target = _resolve(path)
    for src in inputs:
        src_path = _resolve(Path(src))
        # the ranks' folder (the input itself when it is one): files added there would load as more ranks
        folder = src_path if src_path.is_dir() else src_path.parent
        if target == src_path or target in src_path.parents or folder == target or folder in target.parents:
            raise UsageError(f"{out}: refusing to write into the folder of the input traces")
    if path.exists() and not path.is_dir():
        raise UsageError(f"{out}: exists and is not a folder (a trace of several ranks exports to a folder)")
    return _free_target(out, path, target, overwrite)


def _free_target(out: str | os.PathLike[str], path: Path, target: Path, overwrite: bool) -> Path:
    """Checks both kinds of output share: not there yet (or overwriting asked for), its folder exists."""
    if path.is_symlink():  # /dev/stdout is one: the rename would replace the link, not write its target
        raise UsageError(f"{out}: is a symbolic link; give the path of a regular file")
    if path.exists() and not path.is_dir() and not path.is_file():
        # /dev/null, /dev/stdout, a FIFO, a socket: the temp-file rename would replace it, --force or not
        raise UsageError(f"{out}: not a regular file (a device, pipe or socket); give a file path")
    if path.exists() and not overwrite:
        raise UsageError(f"{out}: already exists (pass --force to overwrite)")
    if not target.parent.is_dir():
        raise UsageError(f"{out}: folder {target.parent} does not exist")
    if not os.access(target.parent, os.W_OK | os.X_OK):  # found now, not after the whole load
        raise UsageError(f"{out}: cannot write in folder {target.parent} (read-only or not yours)")
    if len(os.fsencode(target.name)) > 255:
        raise UsageError(f"{out}: a file name is at most 255 bytes long")
    return path


def _resolve(path: Path) -> Path:
    """``Path.resolve``, but a symlink loop gives the absolute path instead of a RuntimeError."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], None] | bytes) -> None:
    """Write ``path`` via a temp file in its folder and `os.replace`; the temp file is removed on any error."""
    target = Path(path)
    sweep_outputs(target)  # what a killed write of this output left
    fd, tmp = tempfile.mkstemp(prefix=f"{output_temp_lead(target)}{temp_prefix('out', hidden=False)}", suffix=".tmp",
                               dir=target.parent)
    try:
        os.chmod(tmp, _mode_for(target))  # mkstemp makes 0600; keep the usual umask / the old file's mode
        with os.fdopen(fd, "wb") as fh:
            if isinstance(write, bytes | bytearray | memoryview):
                fh.write(write)
            else:
                write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:  # ctrl-c included: never leave the temp file behind
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _mode_for(target: Path) -> int:
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
