"""Check vtui's figures for one trace against plain Python over the raw JSON (decimal arithmetic).

    python scripts/truth_audit.py TRACE_OR_FOLDER [--vtui PATH]

Independent of vtui's code: it only runs ``vtui stats`` / ``vtui insights --json`` and compares
per-name count and total time of thread slices (X, B/E; a B never closed runs to the trace's
end), the operator top 5 by self time (self = duration minus the union of the direct children,
the parent being the latest earlier slice on the thread that contains it), the trace span, GPU
busy time per device (union of kernel, memcpy and memset intervals) and ProfilerStep#N counts.
Times are rounded to the ns per ts and per dur, as Perfetto does. Async spans are not
recomputed (their names are left out of the per-name check). Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

DEVICE_WORK = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
NOT_OPERATOR = DEVICE_WORK | {"python_function", "user_annotation", "gpu_user_annotation", "trace", "cuda_sync"}
STEP = re.compile(r"^ProfilerStep#\d+$")
WHOLE_RUN = re.compile(r"^PyTorch Profiler \(\d+\)$")
ASYNC_PHASES = {"b", "e", "n", "S", "T", "p", "F"}


def ns(value: Decimal) -> int:
    return int((value * 1000).to_integral_value(ROUND_HALF_EVEN))


def load_events(path: Path) -> list[dict]:
    files = sorted(path.glob("*.json*")) if path.is_dir() else [path]
    out = []
    for src, f in enumerate(files):
        raw = gzip.open(f, "rb").read() if f.suffix == ".gz" else f.read_bytes()
        doc = json.loads(raw, parse_float=Decimal, parse_int=Decimal)
        for e in doc["traceEvents"] if isinstance(doc, dict) else doc:
            if isinstance(e, dict):
                e["_src"] = src
                out.append(e)
    return out


def timed(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), Decimal)]


def thread_slices(events: list[dict]) -> list[tuple]:
    """(src, pid, tid, name, cat, start ns, end ns) of X and paired B/E slices."""
    out = []
    open_: dict[tuple, list[dict]] = defaultdict(list)
    for e in timed(events):
        key = (e["_src"], str(e.get("pid")), str(e.get("tid")))
        if e["ph"] == "X":
            dur = e.get("dur")
            dur = dur if isinstance(dur, Decimal) and dur >= 0 else Decimal(0)
            out.append((*key, e.get("name"), str(e.get("cat", "")), ns(e["ts"]), ns(e["ts"]) + ns(dur)))
        elif e["ph"] == "B":
            open_[key].append(e)
        elif e["ph"] == "E" and open_[key]:
            b = open_[key].pop()
            out.append((*key, b.get("name"), str(b.get("cat", "")), ns(b["ts"]), ns(e["ts"])))
    last = max([s[6] for s in out] + [ns(e["ts"]) for e in timed(events)])
    for key, stack in open_.items():
        out.extend((*key, b.get("name"), str(b.get("cat", "")), ns(b["ts"]), last) for b in stack)
    return out


def self_times(slices: list[tuple]) -> list[int]:
    by_thread: dict[tuple, list[int]] = defaultdict(list)
    for i, s in enumerate(slices):
        by_thread[s[:3]].append(i)
    out = [0] * len(slices)
    for rows in by_thread.values():
        rows.sort(key=lambda i: (slices[i][5], slices[i][5] - slices[i][6], i))
        kids: dict[int, list[int]] = defaultdict(list)
        stack: list[int] = []
        for i in rows:
            while stack and slices[stack[-1]][6] < slices[i][6]:
                stack.pop()
            if stack:
                kids[stack[-1]].append(i)
            stack.append(i)
        for i in rows:
            start, end = slices[i][5], slices[i][6]
            covered, reach = 0, start
            for k in sorted(kids[i], key=lambda k: slices[k][5]):
                a, b = max(slices[k][5], reach), min(slices[k][6], end)
                if b > a:
                    covered += b - a
                    reach = b
            out[i] = end - start - covered
    return out


def union(intervals: list[tuple[int, int]]) -> int:
    total, reach = 0, None
    for a, b in sorted(intervals):
        if reach is None or a > reach:
            total, reach = total + b - a, b
        elif b > reach:
            total, reach = total + b - reach, b
    return total


def vtui_json(vtui: str, *args: str):
    done = subprocess.run([vtui, *args, "--no-cache"], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr.strip())
    return json.loads(done.stdout)


def audit(path: Path, vtui: str) -> bool:
    events = load_events(path)
    slices = thread_slices(events)
    ok = True

    def check(label: str, ref, got) -> None:
        nonlocal ok
        same = ref == got
        ok &= same
        print(f"{'ok  ' if same else 'DIFF'} {label}: ref {ref}" + ("" if same else f" | vtui {got}"))

    per_name: dict = defaultdict(lambda: [0, 0])
    for s in slices:
        per_name[s[3]][0] += 1
        per_name[s[3]][1] += s[6] - s[5]
    got = {r["name"]: [r["count"], r["total_ns"]] for r in vtui_json(vtui, "stats", str(path), "--format", "json",
                                                                      "--top", "1000000000")}
    async_names = {e.get("name") for e in events if e.get("ph") in ASYNC_PHASES} - set(per_name)
    off = sorted(str(n) for n in set(per_name) | set(got) if n not in async_names and per_name.get(n) != got.get(n))
    check(f"per-name count and total ({len(per_name)} names, {len(slices)} slices), names off", [], off[:10])

    devices = {(s[0], s[1]) for s in slices if s[4].lower() in DEVICE_WORK}
    ops: dict = defaultdict(lambda: [0, 0])
    for s, own in zip(slices, self_times(slices)):
        name, cat = str(s[3]), s[4].lower()
        if (s[0], s[1]) in devices or cat in NOT_OPERATOR or STEP.match(name) or WHOLE_RUN.match(name):
            continue
        if cat in ("cpu_op", "operator") and "#" in name:
            continue  # record_function labels filed as operators (2021 Kineto)
        ops[name][0] += 1
        ops[name][1] += own
    insights = vtui_json(vtui, "insights", str(path), "--json", "--top", "5")
    top = [(n, c, t) for n, (c, t) in sorted(ops.items(), key=lambda kv: -kv[1][1])[:5]]
    check("operators top 5 by self (name, count, self ns)", top,
          [(r["name"], r["count"], r["self_ns"]) for r in insights["ops"]])

    stamps = timed(events)
    origin = min(ns(e["ts"]) for e in stamps)
    end = max([s[6] for s in slices] + [ns(e["ts"]) for e in stamps])
    check("span ns", end - origin, insights["range"]["span_ns"])
    busy: dict = defaultdict(list)
    for s in slices:
        if s[4].lower() in DEVICE_WORK:
            busy[(s[0], s[1])].append((s[5], s[6]))
    gpu = insights.get("gpu") or {}
    check("GPU busy ns per device", sorted(union(v) for v in busy.values()),
          sorted(d["busy_ns"] for d in gpu.get("devices", [])) if gpu.get("present") else [])
    steps: dict = defaultdict(int)
    for s in slices:
        if STEP.match(str(s[3])) and (s[0], s[1]) not in devices and s[4].lower() != "gpu_user_annotation":
            steps[s[:3]] += 1
    if steps:  # vtui takes the steps of the one CPU thread with most of them
        check("ProfilerStep#N count", max(steps.values()), insights["steps"]["count"])
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--vtui", default="vtui", help="the vtui command to check (default: vtui on PATH)")
    args = parser.parse_args()
    return 0 if audit(args.trace, args.vtui) else 1


if __name__ == "__main__":
    sys.exit(main())
