"""Run benchmarked processes with vtui's bytecode compiled, as ``pip install`` leaves it.

Without it every fresh process (the app, its loader, each decoder) compiles vtui's sources
again: ~0.15 s of CPU each, which an installed vtui never pays (and which this machine's
PYTHONDONTWRITEBYTECODE=1 would otherwise add to every run). The bytecode goes to a temp
folder (PYTHONPYCACHEPREFIX), never into the source tree.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def compiled_env(env: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """``env`` (default: this process's) with PYTHONPYCACHEPREFIX set to a folder holding vtui's
    compiled bytecode, for as long as the block runs."""
    with tempfile.TemporaryDirectory(prefix="vtui-bench-pyc-") as prefix:
        out = {**(os.environ if env is None else env), "PYTHONPYCACHEPREFIX": prefix}
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "vtui")], env=out, check=True,
                       stdout=subprocess.DEVNULL)
        yield out
