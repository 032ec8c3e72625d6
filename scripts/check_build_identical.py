"""Check that the store build gives bit-for-bit the same store as another version of vtui/store.

The other version (by default ``main``) is extracted from git into a temp folder as the package
``vtui_oldstore``; each trace is decoded once and both builds run on copies of the same parts.
Every column of slices/instants/counters/flows, the interval index, the tracks, the warnings and
the other store fields are compared (arrays by dtype and bytes).

    python scripts/check_build_identical.py                   # fixtures, shared traces
    python scripts/check_build_identical.py --ref main PATH...  # these traces / folders
    python scripts/check_build_identical.py --threads           # big-trace threads on every trace
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import vtui.load.trace as lt  # noqa: E402
from vtui.store.build import build_store  # noqa: E402


def old_package(ref: str, into: Path):
    """``ref``'s vtui/store as an importable package ``vtui_oldstore`` (its own imports rewritten)."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "vtui/store"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    pkg = into / "vtui_oldstore"
    (into / "vtui" / "store").rename(pkg)
    for f in pkg.glob("*.py"):
        f.write_text(f.read_text().replace("vtui.store.", "vtui_oldstore."))
    sys.path.insert(0, str(into))
    from vtui_oldstore.build import build_store as old

    return old


def differences(a, b, where: str = "store") -> list[str]:
    """Paths at which two values differ (arrays: dtype, shape and bytes)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return [f"{where}: array vs {type(b).__name__}"]
        if a.dtype != b.dtype or a.shape != b.shape:
            return [f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"]
        if a.tobytes() != b.tobytes():
            bad = np.flatnonzero(a.reshape(-1).view(np.uint8) != b.reshape(-1).view(np.uint8))
            return [f"{where}: {len(bad)} bytes differ (first at byte {bad[0]})"]
        return []
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a).__name__ != type(b).__name__:
            return [f"{where}: {type(a).__name__} vs {type(b).__name__}"]
        out = []
        for f in dataclasses.fields(a):
            out += differences(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
        return out
    if isinstance(a, (list, tuple)):
        if type(a) is not type(b) or len(a) != len(b):
            return [f"{where}: {type(a).__name__} of {len(a)} vs {type(b).__name__} of {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{where}[{i}]")
        return out
    if isinstance(a, dict):
        if type(a) is not type(b) or list(a) != list(b):
            return [f"{where}: dict keys differ"]
        out = []
        for k in a:
            out += differences(a[k], b[k], f"{where}[{k!r}]")
        return out
    same = (a == b) or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)
    if type(a) is not type(b) or not same:
        return [f"{where}: values differ ({type(a).__name__} vs {type(b).__name__})"]
    return []


def compare_stores(old, new) -> list[str]:
    out = []
    for name in ("slices", "instants", "counters", "flows", "tracks", "warnings", "strings", "origin_us", "span_ns",
                 "nesting_tolerance_ns", "extra_end_args", "metadata_refs", "metadata_events", "sources"):
        out += differences(getattr(old, name), getattr(new, name), name)
    oi, ni = old.__dict__.get("index"), new.__dict__.get("index")
    out += differences(vars(oi), vars(ni), "index") if oi is not None and ni is not None else ["index: not built"]
    return out


def check(path: Path, old) -> tuple[list[str], float, float]:
    seen: dict[str, float] = {}
    result: list[str] = []

    def both(parts, blob, progress=None):
        spare = copy.deepcopy(parts)  # the old build runs on a copy: neither sees the other's changes
        t = time.process_time()
        old_store = old(spare, blob)
        seen["old"] = time.process_time() - t
        t = time.process_time()
        new_store = build_store(parts, blob, progress)
        seen["new"] = time.process_time() - t
        result.extend(compare_stores(old_store, new_store))
        return new_store

    lt.build_store = both
    lt.load_trace(path, cache=False, jobs=1)
    return result, seen["old"], seen["new"]


def default_traces() -> list[Path]:
    fixtures = ROOT / "fixtures"
    shared = ROOT.parent / "shared" / "traces"
    found = [p for p in sorted(fixtures.iterdir()) if p.name.endswith(lt.TRACE_SUFFIXES)]
    found += [fixtures / "ranks"]
    for sub in ("public", "generated"):
        if (shared / sub).is_dir():
            found += [p for p in sorted((shared / sub).iterdir()) if p.name.endswith(lt.TRACE_SUFFIXES)]
    big = Path("/tmp/vtui-bench/synthetic_256mb.json")
    if big.exists():
        found.append(big)
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", default="main", help="git ref of the reference vtui/store (default: main)")
    ap.add_argument("--threads", action="store_true", help="use the big-trace threads on every trace")
    ap.add_argument("paths", nargs="*", type=Path)
    args = ap.parse_args()
    if args.threads:
        import vtui.store.build
        import vtui.store.nesting

        vtui.store.build.FLOW_THREAD_MIN = vtui.store.nesting.THREAD_MIN = 0
    with tempfile.TemporaryDirectory() as tmp:
        old = old_package(args.ref, Path(tmp))
        failed = 0
        for path in args.paths or default_traces():
            diffs, t_old, t_new = check(path, old)
            status = "same" if not diffs else f"DIFFERENT ({len(diffs)})"
            print(f"{status:14} old {t_old:6.2f} s  new {t_new:6.2f} s CPU  {path.name}", flush=True)
            for d in diffs[:20]:
                print("    " + d)
            failed += bool(diffs)
    print("all identical" if not failed else f"{failed} trace(s) differ")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
