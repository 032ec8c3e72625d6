"""Run Perfetto's own TrackEvent parser tests (``test/trace_processor/diff_tests/parser/track_event``)
through vtui's pftrace reader and compare with Perfetto's expected output.

    .venv/bin/python scripts/perfetto_track_event_diff.py PERFETTO_CHECKOUT [--verbose]

Each test's text-format packets are converted to a binary trace with ``protobuf``'s text_format
(the ``perfetto`` package's descriptors) and loaded with ``vtui.load.trace.load_trace``. Perfetto's
SQL runs over its own schema (absolute timestamps, instants inside ``slice``, ``args`` with
``debug.`` keys, implicit main threads), so the comparison is by the shape of the expected output:

- slice listings (columns among ``ts``, ``dur``, ``category``, ``name``): vtui's slices plus its
  instants (as Perfetto's zero-length slices), the columns the expected output has, as multisets;
- flow listings (``slice_out``, ``slice_in``): vtui's flow table by slice names;
- counter listings (``ts``, ``value``): vtui's counter samples.

Every other test is listed as left out, with the reason. Needs the ``pftrace`` extra.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

SUITE = "test/trace_processor/diff_tests/parser/track_event/tests.py"


def load_suite(checkout: Path) -> list[tuple[str, Any]]:
    sys.path.insert(0, str(checkout))
    spec = importlib.util.spec_from_file_location("diff_tests.parser.track_event.tests", checkout / SUITE)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{checkout / SUITE}: not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    suite = module.TrackEvent(include_index_dir=str(checkout / "test/trace_processor/diff_tests"))
    return sorted(suite.fetch())


def trace_text(bp: Any, folder: Path) -> str | None:
    kind = type(bp.trace).__name__
    if kind == "TextProto":
        return bp.trace.contents
    if kind == "Path" and bp.trace.filename.endswith(".textproto"):
        return (folder / bp.trace.filename).read_text()
    return None


def expected_rows(bp: Any, folder: Path) -> list[dict[str, str]] | None:
    kind = type(bp.out).__name__
    if kind == "Csv":
        text = bp.out.contents
    elif kind == "Path" and bp.out.filename.endswith(".out"):
        text = (folder / bp.out.filename).read_text()
    else:
        return None
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def vtui_rows(store: Any, shape: str) -> list[dict[str, str]]:
    origin = round(store.origin_us * 1000)
    names = store.strings
    out: list[dict[str, str]] = []
    if shape == "slices":
        s, i = store.slices, store.instants
        for r in range(len(s)):
            out.append({"ts": str(int(s.start_ns[r]) + origin), "dur": str(int(s.end_ns[r] - s.start_ns[r])),
                        "category": names[int(s.cat_id[r])] or "[NULL]", "name": names[int(s.name_id[r])]})
        for r in range(len(i)):
            out.append({"ts": str(int(i.ts_ns[r]) + origin), "dur": "0", "category": names[int(i.cat_id[r])] or "[NULL]",
                        "name": names[int(i.name_id[r])]})
    elif shape == "flows":
        s, f = store.slices, store.flows
        for a, b in zip(f.src_slice.tolist(), f.dst_slice.tolist()):
            if a >= 0 and b >= 0:
                out.append({"slice_out": names[int(s.name_id[a])], "slice_in": names[int(s.name_id[b])]})
    elif shape == "counters":
        c = store.counters
        for r in range(len(c)):
            value = float(c.value[r])
            out.append({"ts": str(int(c.ts_ns[r]) + origin), "value": str(int(value)) if value.is_integer() else str(value)})
    return out


def shape_of(bp: Any, rows: list[dict[str, str]]) -> tuple[str, list[str]] | None:
    query = bp.query if isinstance(bp.query, str) else ""
    cols = list(rows[0]) if rows else []
    lowered = " ".join(query.lower().split())
    if {"slice_out", "slice_in"} <= set(cols):
        return "flows", ["slice_out", "slice_in"]
    if "from slice" in lowered and "ts" in cols and "name" in cols and "args" not in lowered:
        return "slices", [c for c in ("ts", "dur", "category", "name") if c in cols]
    if "from counter" in lowered and {"ts", "value"} <= set(cols):
        return "counters", ["ts", "value"]
    return None


def _number(text: str) -> str:
    try:
        value = float(text)
    except ValueError:
        return text
    return str(int(value)) if value.is_integer() else f"{value:.6f}"


def run(checkout: Path, verbose: bool) -> int:
    from google.protobuf import text_format  # noqa: PLC0415
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace  # noqa: PLC0415

    from vtui.load.trace import load_trace  # noqa: PLC0415

    folder = (checkout / SUITE).parent
    results: list[tuple[str, str, str]] = []
    for name, bp in load_suite(checkout):
        text = trace_text(bp, folder)
        rows = expected_rows(bp, folder)
        if text is None or rows is None:
            results.append((name, "left out", "not a text-format trace with a CSV result"))
            continue
        shape = shape_of(bp, rows)
        if shape is None:
            results.append((name, "left out", "a query over tables vtui does not have in Perfetto's form "
                                               "(args, track, process/thread rows, state, callstacks, stats)"))
            continue
        try:
            trace = text_format.Parse(text, Trace(), allow_unknown_extension=True)
        except text_format.ParseError as exc:
            results.append((name, "left out", f"fields the perfetto package's protos lack ({str(exc)[:60]})"))
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t.pftrace"
            path.write_bytes(trace.SerializeToString())
            try:
                store = load_trace(path, cache=False)
            except Exception as exc:  # noqa: BLE001 - a test's failure, reported
                results.append((name, "FAIL", f"load: {exc}"))
                continue
        kind, cols = shape
        want = Counter(tuple(_number(r[c]) for c in cols) for r in rows)
        got = Counter(tuple(_number(r[c]) for c in cols) for r in vtui_rows(store, kind))
        if want == got:
            results.append((name, "PASS", f"{kind}: {sum(want.values())} rows ({', '.join(cols)})"))
        else:
            missing, extra = want - got, got - want
            results.append((name, "FAIL", f"{kind}: missing {sorted(missing)[:3]} extra {sorted(extra)[:3]}"))
    width = max(len(r[0]) for r in results)
    for name, verdict, why in results:
        if verbose or verdict != "left out":
            print(f"{name:<{width}}  {verdict:8s}  {why}")
    left = [r for r in results if r[1] == "left out"]
    if not verbose:
        print(f"left out ({len(left)}): " + ", ".join(r[0].split(":", 1)[1] for r in left))
    counts = Counter(r[1] for r in results)
    print(f"{counts['PASS']} pass, {counts['FAIL']} fail, {counts['left out']} left out of {len(results)}")
    return 1 if counts["FAIL"] else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a google/perfetto checkout (its test/ and python/ folders)")
    parser.add_argument("--verbose", action="store_true", help="also print each test left out, and why")
    opts = parser.parse_args()
    raise SystemExit(run(opts.checkout, opts.verbose))


if __name__ == "__main__":
    main()
