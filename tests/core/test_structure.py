"""The house rules a reader relies on, checked over every module of ``vtui/``: no module over 600
lines (one job each), no function or method taking more than 12 parameters (pass a small
dataclass instead), and a docstring at the top of every module saying what it is for."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.helpers import ROOT

MAX_LINES = 600
MAX_PARAMETERS = 12


def _sources() -> list[Path]:
    found = sorted((ROOT / "vtui").rglob("*.py"))
    assert ROOT / "vtui" / "store" / "store.py" in found  # the walk reaches the sub-packages
    return found


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Every parameter a caller may pass, ``self`` included: positional-only, plain, keyword-only,
    ``*args`` and ``**kwargs``."""
    a = node.args
    return (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
            + (a.vararg is not None) + (a.kwarg is not None))


def test_no_module_is_over_600_lines():
    long = {_name(p): n for p in _sources() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split these by job (at most {MAX_LINES} lines each): {long}"


def test_no_function_takes_more_than_12_parameters():
    many = []
    for path in _sources():
        for node in ast.walk(_parsed(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and parameter_count(node) > MAX_PARAMETERS:
                many.append(f"{_name(path)}:{node.lineno} {node.name} ({parameter_count(node)})")
    assert not many, f"pass a small dataclass instead of more than {MAX_PARAMETERS} parameters: {many}"


def test_every_module_says_what_it_is_for():
    bare = [_name(p) for p in _sources() if not ast.get_docstring(_parsed(p))]
    assert not bare, f"modules without a docstring: {bare}"


def test_the_parameter_count_sees_every_kind_of_parameter():
    """The counter itself: a function of 13 parameters of every kind is seen as 13."""
    tree = ast.parse("def f(a, b, /, c, d, *args, e, f, g, h, i, j, k, **kw): pass")
    assert parameter_count(tree.body[0]) == 13  # type: ignore[arg-type]


def test_every_entry_of_the_slow_list_names_a_test_that_exists():
    """A renamed or split test file must take its slow marks along (else the default loop slows)."""
    missing = []
    for line in (ROOT / "tests" / "slow_tests.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        file, _, test = line.partition("::")
        path = ROOT / file
        name = test.split("[")[0]
        if not path.is_file() or (name and not any(
                isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
                for n in ast.walk(_parsed(path)))):
            missing.append(line)
    assert not missing, f"tests/slow_tests.txt names tests that do not exist: {missing}"
