"""Print a hash of a loaded store: every table column, tracks' columns, strings, args blob, extras.

    PYTHONPATH=CHECKOUT python scripts/store_hash.py TRACE [--jobs N]

Used to check that a change to the load leaves the store byte-identical (compare two checkouts).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json

import numpy as np

from vtui.load.trace import load_trace

TABLES = ("slices", "instants", "counters", "flows")


def store_digest(store) -> dict[str, str]:
    out: dict[str, str] = {}
    for table in TABLES:
        t = getattr(store, table)
        for f in dataclasses.fields(t):
            arr = np.ascontiguousarray(getattr(t, f.name))
            out[f"{table}.{f.name}"] = f"{arr.dtype.str}:{arr.shape}:" + hashlib.sha256(arr.tobytes()).hexdigest()
    for name, arr in sorted(store.tracks.columns.items()):
        arr = np.ascontiguousarray(arr)
        out[f"tracks.{name}"] = f"{arr.dtype.str}:{arr.shape}:" + hashlib.sha256(arr.tobytes()).hexdigest()
    out["strings"] = hashlib.sha256("\x00".join(store.strings).encode("utf-8", "surrogatepass")).hexdigest()
    out["args_blob"] = hashlib.sha256(bytes(store.args_blob[:])).hexdigest()
    rest = {"origin_us": store.origin_us, "span_ns": store.span_ns, "warnings": store.warnings,
            "metadata_events": store.metadata_events, "extra_end_args": sorted(store.extra_end_args.items()),
            "metadata_refs": store.metadata_refs, "nesting_tolerance_ns": store.nesting_tolerance_ns,
            "sources": [dataclasses.asdict(s) for s in store.sources]}
    out["rest"] = hashlib.sha256(json.dumps(rest, sort_keys=True, default=repr).encode()).hexdigest()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--jobs", type=int, default=1)
    ns = ap.parse_args()
    store = load_trace(ns.trace, cache=False, jobs=ns.jobs)
    digest = store_digest(store)
    total = hashlib.sha256(json.dumps(digest, sort_keys=True).encode()).hexdigest()
    print(json.dumps({"total": total, **digest}, sort_keys=True))


if __name__ == "__main__":
    main()
