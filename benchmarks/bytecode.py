"""Run benchmarked processes with vtui's bytecode compiled, as ``pip install`` leaves it.

Without it every fresh process (the app, its loader, each decoder) compiles vtui's sources
again: ~0.15 s of CPU each, which an installed vtui never pays (and which this machine's
PYTHONDONTWRITEBYTECODE=1 would otherwise add to every run). The bytecode goes next to the
sources (``__pycache__``, ignored by git) where Python looks for it. (A PYTHONPYCACHEPREFIX
folder would hide the installed packages' own bytecode: Textual and numpy then compile on
every start.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def compiled_env(env: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """``env`` (default: this process's) after compiling vtui's bytecode in place."""
    out = dict(os.environ if env is None else env)
    out.pop("PYTHONPYCACHEPREFIX", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "vtui")], env=out, check=True,
                   stdout=subprocess.DEVNULL)
    yield out
