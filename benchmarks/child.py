"""Run one benchmark case in this fresh process: ``python benchmarks/child.py MODULE:FUNCTION ARG…``.

Loads ``benchmarks/MODULE.py`` of this checkout by its file path, puts the vtui root to measure
(env ``VTUI_BENCH_ROOT``, default this checkout) first on ``sys.path``, calls ``FUNCTION(*ARGS)``
(each ARG a string) and prints its return value as one JSON line. The case imports vtui itself,
inside the function, so what it measures can include the import.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _bench_root() -> str:
    return str(Path(os.environ.get("VTUI_BENCH_ROOT") or HERE.parent).resolve())


def main(argv: list[str]) -> int:
    if not argv or ":" not in argv[0]:
        print("usage: python benchmarks/child.py MODULE:FUNCTION [ARG...]", file=sys.stderr)
        return 2
    module, _, function = argv[0].partition(":")
    spec = importlib.util.spec_from_file_location(f"_bench_case_{module}", HERE / f"{module}.py")
    if spec is None or spec.loader is None:
        print(f"child: no benchmark module {module!r}", file=sys.stderr)
        return 2
    root = _bench_root()
    sys.path.insert(0, str(HERE))  # the cases' siblings (fresh, the synthesizers)
    sys.path.insert(0, root)
    case = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(case)
    # A module may put this checkout on sys.path at import; the root measured goes first again.
    sys.path.insert(0, root)
    loaded = sys.modules.get("vtui")
    if loaded is not None and not str(Path(loaded.__file__ or "").resolve()).startswith(root):
        print(f"child: {module} imported vtui from {loaded.__file__} before the case ran", file=sys.stderr)
        return 2
    print(json.dumps(getattr(case, function)(*argv[1:])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
