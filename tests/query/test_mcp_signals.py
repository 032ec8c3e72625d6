"""`vtui mcp` under a supervisor: SIGTERM, SIGHUP or SIGINT end it at once and quietly, with
its stdin still open, idle or in the middle of a call."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys

import pytest

from tests.helpers import ROOT, X, write_trace

pytest.importorskip("mcp")
pytest.importorskip("duckdb")

WAIT_S = 60  # far above an orderly exit (well under a second), far below a hang


def start() -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "vtui", "mcp"], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "vtui-test", "version": "0"}}})
    assert json.loads(proc.stdout.readline())["id"] == 1  # it is up and serving
    send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc


def send(proc: subprocess.Popen, msg: dict) -> None:
    proc.stdin.write(json.dumps(msg) + "\n")
    proc.stdin.flush()


def ended(proc: subprocess.Popen) -> tuple[int, str]:
    try:
        code = proc.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail("still running with stdin open after the signal")
    err = proc.stderr.read()
    proc.stdin.close()
    return code, err


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_ends_an_idle_server_with_stdin_open(name):
    proc = start()
    signum = getattr(signal, name)
    proc.send_signal(signum)
    code, err = ended(proc)
    assert code == 128 + signum and err == ""


def test_a_signal_mid_query_ends_it_within_the_grace(tmp_path):
    path = write_trace(tmp_path, [X("a", 0, 10)])
    proc = start()
    send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "query", "arguments": {
                    "trace": str(path), "time_limit": 300,
                    "sql": "SELECT sum(hash(i)) FROM range(100000000000000) t(i)"}}})
    proc.send_signal(signal.SIGTERM)
    code, err = ended(proc)
    assert code == 128 + signal.SIGTERM and "Traceback" not in err


def test_a_request_with_params_that_are_no_object_gets_an_error_reply():
    proc = start()
    try:
        for n, (method, params) in enumerate([("tools/call", "oops"), ("tools/list", [1]), ("ping", 5)], 10):
            send(proc, {"jsonrpc": "2.0", "id": n, "method": method, "params": params})
            reply = json.loads(proc.stdout.readline())  # before: no reply at all, the client waits for ever
            assert reply["id"] == n and reply["error"]["code"] == -32602
        send(proc, {"jsonrpc": "2.0", "id": 20, "method": "ping"})
        assert json.loads(proc.stdout.readline()) == {"jsonrpc": "2.0", "id": 20, "result": {}}
    finally:
        proc.kill()
        proc.wait()


def test_what_the_sdk_would_drop_is_answered_as_json_rpc_asks():
    proc = start()
    try:
        bad = [("not json at all", None, -32700), ("[1, 2]", None, -32600),  # no batches
               ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list", "params": {}}', None, -32600),
               ('{"jsonrpc": "2.0", "id": 2.5, "method": "ping"}', None, -32600),
               ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, -32600),
               ('{"id": 7, "method": "ping"}', 7, -32600),  # no "jsonrpc": "2.0"
               ('{"jsonrpc": "2.0", "id": "x", "method": 5}', "x", -32600)]
        for line, id_, code in bad:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            reply = json.loads(_line(proc))  # before: no reply at all, the client waits for ever
            assert reply["id"] == id_ and reply["error"]["code"] == code, (line, reply)
        proc.stdin.write('{"jsonrpc": "2.0", "method": "notifications/whatever", "params": 3}\n')  # never answered
        send(proc, {"jsonrpc": "2.0", "id": 20, "method": "ping"})
        assert json.loads(_line(proc)) == {"jsonrpc": "2.0", "id": 20, "result": {}}
    finally:
        proc.kill()
        proc.wait()


def _line(proc: subprocess.Popen) -> str:
    """The server's next line, or a failure (not a hang) when none comes."""
    ready, _, _ = select.select([proc.stdout], [], [], WAIT_S)
    if not ready:
        pytest.fail("no reply")
    return proc.stdout.readline()
