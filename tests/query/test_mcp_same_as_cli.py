"""Each output declared once: every command's ``--json`` is the msgspec encoding of the Struct its
``compute(options)`` returns, the MCP tool of the same name calls that ``compute`` (no stdout
captured: the tools run here with a stdout that fails on any write) and gives the same data,
and the command's flags and the tool's parameters are generated from one options Struct."""

from __future__ import annotations

import argparse
import importlib
import inspect
import io
import json
import sys
from typing import Annotated

import msgspec
import pytest

from tests.helpers import FIXTURES, ROOT
from vtui.cli import main
from vtui.commands import COMMANDS
from vtui.commands.options import Options, add_options, fields, from_namespace, opt, tool_parameters
from vtui.present.schema import OUTPUTS, builtins, encode

pytest.importorskip("mcp")
pytest.importorskip("duckdb")

from vtui import mcp as vmcp  # noqa: E402

TINY = FIXTURES / "kineto__before_fix_trace.json"
KINETO = FIXTURES / "kineto__worker0_first_step.json.gz"
RANKS = FIXTURES / "ranks"
SQL = "SELECT name, COUNT(*) n, SUM(dur) total FROM slice GROUP BY name ORDER BY total DESC, name"

# (tool, its arguments, the same on the command line); every command with a JSON output is here
CASES = [
    ("info", {"trace": str(KINETO)}, ["info", KINETO, "--json"]),
    ("stats", {"trace": str(KINETO), "by": "cat"}, ["stats", KINETO, "--format", "json", "--by", "cat"]),
    ("stats", {"trace": str(KINETO), "range": "1ms:", "track": "."},
     ["stats", KINETO, "--format", "json", "--range", "1ms:", "--track", "."]),
    ("search", {"trace": str(KINETO), "regex": "aten::", "time_limit": 30.0}, ["search", KINETO, "aten::", "--json"]),
    ("insights", {"trace": str(KINETO)}, ["insights", KINETO, "--json"]),
    ("tree", {"trace": str(KINETO), "min_pct": 0.5, "depth": 3},
     ["tree", KINETO, "--format", "json", "--min-pct", "0.5", "--depth", "3"]),
    ("tree", {"trace": str(TINY), "inverted": True, "weight": "self", "min_pct": None, "depth": None},
     ["tree", TINY, "--format", "json", "--inverted", "--weight", "self"]),
    ("query", {"trace": str(KINETO), "sql": SQL}, ["query", KINETO, SQL, "--format", "json"]),
    ("diff", {"a": str(TINY), "b": str(KINETO)}, ["diff", TINY, KINETO, "--format", "json"]),
    ("diff", {"a": str(TINY), "b": str(KINETO), "table": "tree"}, ["diff", TINY, KINETO, "--json", "--table", "tree"]),
    ("diff", {"a": str(TINY), "more_a": [str(TINY)], "b": str(KINETO), "table": "runs"},
     ["diff", TINY, TINY, "--", KINETO, "--format", "json", "--table", "runs"]),
    ("ranks", {"trace": str(RANKS), "align": "collective"}, ["ranks", RANKS, "--json", "--align", "collective"]),
]


class Probe(Options, frozen=True):
    trace: Annotated[str, opt("a trace", positional=True)]
    new_knob: Annotated[int, opt("a knob", ge=1)] = 3


class NoWrites(io.StringIO):
    """A stdout that fails the test on any write: the tools must not print."""

    def write(self, text: str) -> int:
        raise AssertionError(f"an MCP tool wrote to stdout: {text[:80]!r}")


@pytest.fixture(scope="module")
def tools():
    return {s.name: s.fn for s in vmcp.tool_specs(vmcp.StoreCache(), max_chars=10**9)}


def tool_doc(tools, name: str, arguments: dict) -> dict:
    before = sys.stdout
    sys.stdout = NoWrites()
    try:
        text = tools[name](**arguments, limit=10_000)
    finally:
        sys.stdout = before
    doc = json.loads(text)
    doc.pop("page", None)
    return doc


def cli_text(capsys, args: list) -> str:
    assert main([str(a) for a in args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name,arguments,args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_the_tool_and_the_command_give_the_same_report(tools, capsys, name, arguments, args):
    cli = json.loads(cli_text(capsys, args))
    got = tool_doc(tools, name, arguments)
    assert got == cli and got["schema_version"] == cli["schema_version"]
    assert list(got)[0] == "schema_version"


def test_the_health_tool_is_info_s_health(tools, capsys):
    cli = json.loads(cli_text(capsys, ["info", KINETO, "--json"]))
    assert tool_doc(tools, "health", {"trace": str(KINETO)}) == {"schema_version": cli["schema_version"],
                                                                 "health": cli["health"]}


@pytest.mark.parametrize("name,arguments,args", [c for c in CASES if c[0] != "search"],
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES) if c[0] != "search"])
def test_the_printed_json_is_the_encoded_report(capsys, name, arguments, args):
    """Byte for byte: what ``--json`` prints is ``encode(compute(options))`` of the parsed flags
    (search's is written a chunk at a time: the same data, checked above)."""
    module = importlib.import_module(COMMANDS[args[0]])
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    argv = [str(a) for a in args[1:]]
    opts = from_namespace(module.OPTIONS, parser.parse_args(getattr(module, "prepare_args", lambda a: a)(argv)))
    report = module.compute(opts)
    assert type(report) in OUTPUTS.values()
    indent = 1 if args[0] == "tree" else 2
    assert cli_text(capsys, args) == encode(report, indent=indent) + "\n"
    # built directly, its values are already the schema's types (a whole float is no int: 1.0, not 1)
    assert encode(msgspec.convert(builtins(report), type(report))) == encode(report)


def _tool_commands() -> list[str]:
    return sorted({s.command for s in vmcp.tool_specs(vmcp.StoreCache())})


@pytest.mark.parametrize("command", _tool_commands())
def test_flags_and_tool_parameters_come_from_one_options_struct(command):
    """Every tool parameter but the paging is a field of the command's options Struct, with the
    field's name; every field the command line shows is one of its flags or positionals."""
    module = importlib.import_module(COMMANDS[command])
    declared = {f.name: f for f in fields(module.OPTIONS)}
    tool = next(s.fn for s in vmcp.tool_specs(vmcp.StoreCache()) if s.command == command)
    params = set(inspect.signature(tool).parameters) - {"offset", "limit", "list_path"}
    assert params and params <= set(declared)
    assert params == {n for n, f in declared.items() if f.extra.get("mcp", True)}
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    dests = {a.dest for a in parser._actions} - {"help"}
    assert dests == {n for n, f in declared.items() if f.extra.get("cli", True)}
    for action in parser._actions:  # the help is the field's
        if action.dest in declared and declared[action.dest].help != "SUPPRESS":
            assert action.help == declared[action.dest].help


def test_a_field_added_to_the_struct_reaches_both_sides():
    """The generation can fail: a new field is a flag and a tool parameter without more code."""
    parser = argparse.ArgumentParser()
    add_options(parser, Probe)
    assert from_namespace(Probe, parser.parse_args(["t", "--new-knob", "5"])) == Probe(trace="t", new_knob=5)
    params = {p.name: p for p in tool_parameters(Probe)}
    assert params["new_knob"].default == 3 and params["trace"].default is inspect.Parameter.empty


def test_the_mcp_server_captures_no_stdout():
    """No redirect, no swapped loader: the server's modules do not touch stdout or a module-global loader."""
    for module in ("vtui/mcp.py", "vtui/mcp_tools.py"):
        source = (ROOT / module).read_text()
        assert "redirect_stdout" not in source and "STORE_LOADER" not in source


def test_a_value_outside_the_choices_is_refused_as_on_the_command_line(tools, capsys):
    """argparse refuses ``--weight bogus``; the tool, called with the same value, a usage error."""
    from vtui.errors import UsageError

    with pytest.raises(UsageError, match="weight must be one of total, self, gpu"):
        tools["tree"](str(TINY), weight="bogus")
    with pytest.raises(UsageError, match="table must be one of"):
        tools["diff"](a=str(TINY), b=str(TINY), table="nope")
    with pytest.raises(SystemExit):  # argparse: exit 2 with one line
        main(["tree", str(TINY), "--weight", "bogus"])
    assert "invalid choice" in capsys.readouterr().err


def test_a_diff_with_a_gate_prints_its_encoded_report(capsys):
    """The gate section too (the command exits 1: the figure was not measured, so it fails)."""
    from vtui.commands.diff import DiffOptions, compute

    args = ["diff", str(TINY), str(KINETO), "--json", "--table", "runs", "--fail-if", "ttft:+1000%"]
    assert main(args) == 1
    report = compute(DiffOptions(traces=[str(TINY), str(KINETO)], json=True, table="runs", fail_if=["ttft:+1000%"]))
    assert capsys.readouterr().out == encode(report) + "\n" and report.gate and report.gate[0].breached
    assert encode(msgspec.convert(builtins(report), type(report))) == encode(report)
