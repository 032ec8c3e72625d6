"""Soak every hostile case through the CLI: `python scripts/hostile_soak.py [--timeout S] [--jobs N]`.

Builds the hostile corpus (tests/hostile_corpus.py) plus extras (a backtracking
regex on every regex option, a crafted nsys export whose kernel table is an endless view) in a
temp folder, runs each case through the commands below as real subprocesses with a timeout and
a private cache, and counts:

- tracebacks: "Traceback" or "internal error" on stderr;
- hangs: a run past the timeout (killed with its process group);
- processes left: any process still running afterwards whose command line names the case;
- differing numbers: `info --json` slices/instants/events against the case's expected figures,
  and the cold load (no cache) against the cached reopen (must be identical);
- temp files left: vtui temp names in the case folder, the cache folder or the output folder.

Then the SQL, MCP and ranks-cache cases (scripts/soak_sql_mcp.py: file escapes from a cwd whose
``.tmp`` links to ``/``, an MCP session of hostile calls ended by SIGTERM, a damaged ranks cache);
``--only sql_mcp_ranks`` runs only those.

Then (Linux) the events that are not inputs: a trace cut while it loads, SIGHUP to the process
group mid-load, each at a few moments (``soak_signals``).

Exit status 0 only when every count is 0. Not run in CI (minutes of subprocesses).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hostile_corpus import Case, build_corpus  # noqa: E402
from vtui.tempfiles import is_temp_name  # noqa: E402

EVIL = "(a+)+$"
COMMANDS = [
    ["info", "{p}", "--json", "--no-cache"],
    ["info", "{p}", "--json"],  # writes the cache entry
    ["info", "{p}", "--json"],  # reopens it: must say the same as --no-cache
    ["stats", "{p}", "--track", EVIL],
    ["search", "{p}", EVIL],
    ["search", "{p}", "args:" + EVIL],
    ["tree", "{p}", "--format", "json"],
    ["tree", "{p}", "--format", "folded"],
    ["insights", "{p}", "--step", EVIL],
    ["export", "{p}", "-o", "{out}"],
]


def _extra_cases(folder: Path) -> dict[str, tuple[Case | None, Path]]:
    """Hostile inputs the loader corpus does not hold: names that make (a+)+$ backtrack, and an
    nsys export whose kernel table is a view over an endless recursive CTE."""
    out: dict[str, tuple[Case | None, Path]] = {}
    redos = folder / "redos"
    redos.mkdir()
    victim = "a" * 40 + "!"
    events = [{"ph": "X", "name": victim, "pid": 1, "tid": 1, "ts": i, "dur": 1, "args": {"k": victim}} for i in range(3)]
    events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": victim}})
    (redos / "redos.json").write_text(json.dumps(events))
    out["redos"] = (None, redos / "redos.json")
    export = ROOT / "fixtures" / "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
    if export.exists():
        view = folder / "nsys_view"
        view.mkdir()
        path = view / "crafted.sqlite"
        shutil.copy(export, path)
        with sqlite3.connect(path) as con:
            con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
            con.execute("CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE c(x) AS "
                        "(SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS start, x AS end FROM c")
        out["nsys_view"] = (None, path)
    return out


def _run(argv: list[str], env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
    proc = subprocess.Popen([sys.executable, "-m", "vtui", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err


def _left_processes(needle: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if needle in cmd and "hostile_soak" not in cmd:
            found.append(f"{pid} {cmd[:120]}")
    return found


def _temps(*folders: Path) -> list[str]:
    out = []
    for folder in folders:
        if folder.is_dir():
            out += [str(p) for p in folder.rglob("*") if is_temp_name(p.name)]
    return out


def _marked(marker: str) -> list[str]:
    """Living processes whose environment holds ``VTUI_SOAK_MARK=marker`` (children inherit it)."""
    found = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (OSError, ValueError):
            continue
        if f"VTUI_SOAK_MARK={marker}".encode() in environ and stat[stat.rindex(")") + 2] != "Z":
            found.append(f"{pid} {_cmdline(pid)}")
    return found


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")[:120]
    except OSError:
        return "?"


SIGNAL_DELAYS_S = (0.3, 0.8, 1.5, 2.5)  # into a load of ~150 MB (decoder processes at work from ~0.5 s)


def soak_signals(work: Path, timeout: float) -> dict[str, list[str]]:
    """Hostile events that are not inputs: the trace cut to a third while `info --no-cache` loads
    it (SIGBUS before), and SIGHUP to the whole process group (a closed terminal), each at a few
    moments of the load. Exit status, stderr, processes left (by an environment marker) and temp
    files (in a private TMPDIR) are counted like the cases'."""
    found: dict[str, list[str]] = {"tracebacks": [], "hangs": [], "processes": [], "numbers": [], "temps": []}
    source = work / "signals" / "big.json"
    source.parent.mkdir()
    with open(source, "w") as out:  # ~150 MB: above the size that starts decoder processes
        out.write("[")
        out.write(",".join(json.dumps({"ph": "X", "name": f"op{i % 50}", "pid": 1, "tid": i % 4, "ts": i, "dur": 1,
                                       "args": {"k": i, "pad": "x" * 40}}) for i in range(1_100_000)))
        out.write("]")
    for what in ("cut", "hangup"):
        for delay in SIGNAL_DELAYS_S:
            label = f"{what} at {delay} s"
            path = work / "signals" / f"{what}_{delay}.json"
            shutil.copy(source, path)
            temp = work / "signals" / f"tmp_{what}_{delay}"
            temp.mkdir()
            marker = f"{what}-{delay}-{os.getpid()}"
            env = {**os.environ, "TMPDIR": str(temp), "VTUI_SOAK_MARK": marker, "XDG_CACHE_HOME": str(temp / "cache")}
            proc = subprocess.Popen([sys.executable, "-m", "vtui", "info", str(path), "--no-cache"], cwd=ROOT, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
            time.sleep(delay)  # a soak, not a test: real moments of a real load
            if what == "cut":
                os.truncate(path, path.stat().st_size // 3)
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGHUP)
            try:
                _, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                found["hangs"].append(label)
                continue
            print(f"{label}: exit {proc.returncode}, {err.strip()[-120:] or 'nothing on stderr'}", flush=True)
            ok = {0, 1} if what == "cut" else {0, 128 + signal.SIGHUP}  # 0: the load was done first
            if proc.returncode not in ok or "Traceback" in err or "internal error" in err or (
                    what == "hangup" and err.strip()):
                found["tracebacks"].append(f"{label}: exit {proc.returncode}: {err.strip()[-200:]}")
            time.sleep(0.5)  # the resource tracker ends once its last holder has
            found["processes"] += [f"{label}: {p}" for p in _marked(marker)]
            found["temps"] += [f"{label}: {p}" for p in _temps(temp)]
            path.unlink()
    return found


def soak_case(name: str, case: Case | None, path: Path, work: Path, timeout: float) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"tracebacks": [], "hangs": [], "processes": [], "numbers": [], "temps": []}
    cache = work / "cache" / name
    outdir = work / "out" / name
    outdir.mkdir(parents=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONIOENCODING": "utf-8"}
    infos = []
    for k, cmd in enumerate(COMMANDS):
        argv = [a.format(p=path, out=outdir / f"out{k}.json") for a in cmd]
        code, out, err = _run(argv, env, timeout)
        label = f"{name}: vtui {' '.join(cmd[:1] + cmd[2:])}"
        if code is None:
            found["hangs"].append(label)
            continue
        if "Traceback" in err or "internal error" in err:
            found["tracebacks"].append(f"{label}: {err.strip().splitlines()[-1][:200]}")
        if cmd[0] == "info":
            infos.append(json.loads(out) if code == 0 and out.strip() else None)
    for who in _left_processes(str(path)):
        found["processes"].append(f"{name}: {who}")
    cold = infos[0] if infos else None
    if case is not None and case.loads and cold is not None:
        want = {"slices": case.slices, "instants": case.instants}
        if case.events is not None:
            want["events"] = case.events
        got = {k: cold.get(k) for k in want}
        if got != want:
            found["numbers"].append(f"{name}: info says {got}, the case says {want}")
    if case is not None and not case.loads and any(i is not None for i in infos):
        found["numbers"].append(f"{name}: loaded although the case says it cannot be")
    keys = ("slices", "instants", "counters", "flows", "events", "tracks", "span_ns")
    for k, info in enumerate(infos[1:], 1):
        if (cold is None) != (info is None) or (cold and info and any(cold.get(x) != info.get(x) for x in keys)):
            found["numbers"].append(f"{name}: the cached run {k} differs from the cold load")
    found["temps"] += _temps(path.parent, cache, outdir)
    return found


def soak_sql_mcp_ranks(work: Path, timeout: float) -> list[dict[str, list[str]]]:
    """The SQL, MCP and ranks-cache cases (scripts/soak_sql_mcp.py), each in its own folder."""
    from scripts.soak_sql_mcp import soak_mcp, soak_ranks, soak_sql

    trace = ROOT / "fixtures" / "hf_llama_stack.json.gz"
    out = []
    for name, run in (("sql", lambda w: soak_sql(w, trace, timeout)), ("mcp", lambda w: soak_mcp(w, trace, timeout)),
                      ("ranks", lambda w: soak_ranks(w, timeout))):
        folder = work / name
        folder.mkdir(parents=True)
        started = time.monotonic()
        out.append(run(folder))
        print(f"{name} cases: {sum(len(v) for v in out[-1].values())} problems in {time.monotonic() - started:.0f} s",
              flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per command (default 60)")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    parser.add_argument("--only", nargs="*", help="case names to run (default: all)")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vtui-soak-"))
    try:
        (work / "corpus").mkdir()
        cases: dict[str, tuple[Case | None, Path]] = dict(build_corpus(work / "corpus"))
        cases.update(_extra_cases(work / "corpus"))
        if opts.only:
            cases = {k: v for k, v in cases.items() if k in opts.only}
        started = time.monotonic()
        cpu0 = os.times()
        with ThreadPoolExecutor(opts.jobs) as pool:
            results = list(pool.map(lambda item: soak_case(item[0], *item[1], work, opts.timeout), cases.items()))
        signal_runs = 0
        if not opts.only and sys.platform.startswith("linux"):
            results.append(soak_signals(work, opts.timeout))
            signal_runs = 2 * len(SIGNAL_DELAYS_S)
        if not opts.only or "sql_mcp_ranks" in opts.only:
            results += soak_sql_mcp_ranks(work / "sql_mcp_ranks", opts.timeout)
        total: dict[str, list[str]] = {}
        for r in results:
            for key, items in r.items():
                total.setdefault(key, []).extend(items)
        cpu1 = os.times()
        child_cpu = (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system)
        print(f"{len(cases)} cases × {len(COMMANDS)} commands + {signal_runs} signal runs in {time.monotonic() - started:.0f} s wall, "
              f"{child_cpu:.0f} CPU-s (load average {os.getloadavg()[0]:.1f})")
        for key in ("tracebacks", "hangs", "processes", "numbers", "temps"):
            print(f"{key}: {len(total.get(key, []))}")
            for item in total.get(key, [])[:20]:
                print(f"  {item}")
        return 0 if not any(total.values()) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
