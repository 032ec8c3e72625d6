"""One runner for the benchmarks: ``python -m benchmarks NAME [ARGS…]`` runs ``benchmarks/bench_NAME.py``
with ARGS (each prints its figures as JSON lines); ``python -m benchmarks`` lists the names;
``python -m benchmarks table`` writes the README's speed table from ``benchmarks/results/``."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def names() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m benchmarks NAME [ARGS...] | table [--check]\nbenchmarks: " + ", ".join(names()))
        return 0
    if argv[0] == "table":
        sys.path.insert(0, str(HERE.parent))
        from benchmarks.table import main as table_main

        return table_main(argv[1:])
    name = argv[0].removeprefix("bench_").removesuffix(".py")
    if name not in names():
        print(f"benchmarks: no benchmark {name!r} (one of: {', '.join(names())})", file=sys.stderr)
        return 2
    sys.argv = [str(HERE / f"bench_{name}.py"), *argv[1:]]
    sys.path.insert(0, str(HERE.parent))
    runpy.run_path(sys.argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
