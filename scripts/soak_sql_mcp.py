"""The SQL, MCP and ranks-cache cases of the hostile soak (scripts/hostile_soak.py runs them after
the corpus): each as a real subprocess, counted as the corpus cases are.

- SQL: from a cwd whose ``.tmp`` links to ``/``, every file escape (``read_text``, ``COPY … TO``,
  ``ATTACH '<cwd>/:memory:'``, ``glob``, setting changes) must fail in one line, read nothing and
  leave the cwd as it was.
- MCP: one server, then a macro, a 1 MB path, a 5 MB error, params that are no object, an
  over-cap result, an empty trace — every request answered, nothing on stderr — then SIGTERM with
  stdin open: gone at once with 143.
- Ranks: ``--engine duckdb`` twice (the cache), its Parquet cut and edited, the figures unchanged;
  ``--no-cache`` with a broken rank leaves no temp folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PWNED = Path("/tmp/vtui-soak-pwned.csv")
Found = dict[str, list[str]]

ESCAPES = [
    "SELECT * FROM read_text('.tmp/etc/hostname')",
    "SELECT * FROM read_text('/etc/hostname')",
    "COPY (SELECT 'pwned') TO '.tmp/tmp/vtui-soak-pwned.csv'",  # PWNED, if it gets through
    "ATTACH '{cwd}/:memory:' AS x",
    "COPY (SELECT 1) TO '{cwd}/:memory:.wal'",
    "SELECT * FROM glob('.tmp/*')",
    "SET disabled_filesystems = ''",
    "SET temp_directory = '/tmp'",
    "SET enable_external_access = true",
    "INSTALL httpfs",
]


def _empty() -> Found:
    return {"tracebacks": [], "hangs": [], "processes": [], "numbers": [], "temps": []}


def _vtui(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int | None, str, str]:
    proc = subprocess.Popen([sys.executable, "-m", "vtui", *argv], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, "", ""


def _env(work: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(work / "cache"), "TMPDIR": str(work / "tmp")}


def soak_sql(work: Path, trace: Path, timeout: float) -> Found:
    found = _empty()
    with contextlib.suppress(OSError):
        PWNED.unlink(missing_ok=True)
    cwd = work / "sql_cwd"
    cwd.mkdir()
    (cwd / ".tmp").symlink_to("/")
    (work / "tmp").mkdir(exist_ok=True)
    env = _env(work)
    secret = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").is_file() else None
    for sql in ESCAPES:
        sql = sql.format(cwd=cwd)
        code, out, err = _vtui(["query", str(trace), sql], cwd, env, timeout)
        label = f"sql: {sql[:60]}"
        if code is None:
            found["hangs"].append(label)
        elif code != 1 or err.count("\n") != 1 or "Traceback" in err or "internal error" in err:
            found["tracebacks"].append(f"{label}: exit {code}: {err.strip()[-160:]}")
        if secret and secret in out:
            found["numbers"].append(f"{label}: read a file")
    if sorted(p.name for p in cwd.iterdir()) != [".tmp"] or PWNED.exists():
        found["numbers"].append("sql: a query wrote a file")
    with contextlib.suppress(OSError):  # so that a later run finds only its own
        PWNED.unlink(missing_ok=True)
    return found


class _Server:
    def __init__(self, env: dict[str, str], timeout: float) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "vtui", "mcp"], cwd=ROOT, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.n = 0
        self.timeout = timeout
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x) for x in self.proc.stdout] and None, daemon=True).start()

    def request(self, method: str, params) -> dict:  # noqa: ANN001 — any JSON, bad params included
        self.n += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            try:
                line = self.lines.get(timeout=self.timeout)
            except queue.Empty:
                raise TimeoutError(f"no reply to {method} in {self.timeout:g} s") from None
            msg = json.loads(line)
            if msg.get("id") == self.n:
                return msg


def soak_mcp(work: Path, trace: Path, timeout: float) -> Found:
    found = _empty()
    env = {**_env(work), "VTUI_MCP_MAX_CHARS": "5000"}
    server = _Server(env, timeout)
    calls = [
        ("query", {"trace": str(trace), "sql": "CREATE MACRO count_star() AS 42"}),
        ("query", {"trace": str(trace), "sql": "SELECT count(*) AS n FROM slice"}),
        ("info", {"trace": "a" * 1_000_000}),
        ("query", {"trace": str(trace), "sql": "SELECT " + "x" * 5_000_000}),
        ("query", {"trace": str(trace), "sql": "SELECT repeat('y', 20000) AS big"}),
        ("info", {"trace": ""}),
        ("query", {"trace": str(trace), "sql": "SELECT * FROM read_text('/etc/hostname')"}),
    ]
    try:
        server.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "soak", "version": "0"}})
        counts = []
        for tool, args in calls:
            reply = server.request("tools/call", {"name": tool, "arguments": args})["result"]
            text = reply["content"][0]["text"]
            if len(text) > 5000 or "\n" in text:
                found["numbers"].append(f"mcp: {tool} reply of {len(text):,} characters or several lines")
            if tool == "query" and "count(*)" in args["sql"] and not reply.get("isError"):
                counts.append(json.loads(text)["rows"])
        if counts and counts[0] == [[42]]:
            found["numbers"].append("mcp: a macro outlived its query")
        for params in ("oops", [1], 5):
            if "error" not in server.request("tools/call", params):
                found["numbers"].append(f"mcp: params {params!r} got no error reply")
    except (TimeoutError, ValueError, KeyError) as exc:
        found["tracebacks"].append(f"mcp: {type(exc).__name__}: {exc}")
    server.proc.send_signal(signal.SIGTERM)
    try:
        code = server.proc.wait(timeout=min(timeout, 10))
        if code != 128 + signal.SIGTERM:
            found["tracebacks"].append(f"mcp: SIGTERM gave exit {code}")
    except subprocess.TimeoutExpired:
        server.proc.kill()
        found["hangs"].append("mcp: still running after SIGTERM with stdin open")
    err = server.proc.stderr.read()
    if err.strip():
        found["tracebacks"].append(f"mcp: stderr: {err.strip()[-200:]}")
    return found


def soak_ranks(work: Path, timeout: float) -> Found:
    sys.path.insert(0, str(ROOT))
    from benchmarks.ranks_synth import rank_events, slow_rank, write_rank

    found = _empty()
    folder = work / "ranks"
    folder.mkdir()
    for r in range(3):
        write_rank(folder, f"trace_rank{r}.json", rank_events(r, 3, 3, slow_rank(1), clock_us=0, flows=False), r, 3, None)
    (work / "tmp").mkdir(exist_ok=True)
    env = _env(work)
    argv = ["ranks", str(folder), "--engine", "duckdb", "--json"]
    runs = []
    for damage in (None, "cut", "edit"):
        parquet = sorted((work / "cache" / "vtui" / "ranks-parquet").glob("*/steps.parquet"))
        if damage == "cut" and parquet:
            parquet[0].write_bytes(parquet[0].read_bytes()[:30])
        if damage == "edit" and parquet:
            data = bytearray(parquet[0].read_bytes())
            data[len(data) // 2] ^= 0xFF
            parquet[0].write_bytes(bytes(data))
        code, out, err = _vtui(argv, ROOT, env, timeout)
        if code != 0 or "Traceback" in err:
            found["tracebacks"].append(f"ranks ({damage or 'first run'}): exit {code}: {err.strip()[-160:]}")
        runs.append(out)
    if len(set(runs)) != 1:
        found["numbers"].append("ranks: a damaged cache changed the report")
    (folder / "trace_rank2.json").write_text("{ not a trace")
    code, _, err = _vtui([*argv, "--no-cache"], ROOT, env, timeout)
    if code is None:
        found["hangs"].append("ranks: a broken rank hangs")
    elif "Traceback" in err or "internal error" in err:
        found["tracebacks"].append(f"ranks (a broken rank): {err.strip()[-160:]}")
    found["temps"] += [str(p) for p in (work / "tmp").iterdir()]
    return found
