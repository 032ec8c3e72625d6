"""The core (everything outside ``vtui.ui``) never imports Textual or Rich, and the data flows
one way: io -> store -> analysis -> present / export / load -> ui / commands."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys

import vtui
from tests.helpers import ROOT

CORE = ("vtui.io", "vtui.store", "vtui.analysis")
LOWER = {"vtui.io": (), "vtui.options": ("vtui.io",), "vtui.store": ("vtui.io", "vtui.options"),
         "vtui.analysis": ("vtui.io", "vtui.options", "vtui.store"),
         "vtui.present": (*CORE, "vtui.options"), "vtui.export": (*CORE, "vtui.options"),
         "vtui.load": (*CORE, "vtui.options")}
CORE_LAYERS = tuple(LOWER)
# Top-level helpers any layer may use: they import nothing of vtui but each other.
UTILITIES = ("vtui.atomic", "vtui.demo", "vtui.errors", "vtui.units", "vtui.gcpause", "vtui.regex_guard",
             "vtui.safe_text", "vtui.tempfiles", "vtui.termination", "vtui.xdg")
# Analysis rooms (more may come): ``base`` holds the primitives and imports no other room.
ROOMS = ("base", "slices", "gpu", "steps", "calltree", "why", "ranks", "report")


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(vtui.__path__, "vtui."))


def _non_ui_modules() -> list[str]:
    # The agent link drives the live app, so it is on the UI side.
    return [m for m in _modules() if not m.startswith(("vtui.ui", "vtui.agent")) and m != "vtui.__main__"]


def test_every_non_ui_module_is_headless():
    modules = _non_ui_modules()
    assert "vtui.store.containment" in modules and "vtui.cli" in modules  # the walk finds them
    code = (
        f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
        "from vtui.load.trace import load_trace\n"
        "load_trace('fixtures/kineto__before_fix_trace.json')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _imports(module: str) -> set[str]:
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("vtui.")}


def _layer(module: str) -> str | None:
    return next((c for c in CORE_LAYERS if module == c or module.startswith(c + ".")), None)


def _violations(imports_of: dict[str, set[str]]) -> list[str]:
    """Imports that run back up: a layered module (sub-packages and top-level modules too) may
    import only its own layer, the layers below it and the top-level utilities."""
    wrong = []
    for module, imported_set in imports_of.items():
        layer = _layer(module)
        if layer is None:
            continue
        for imported in imported_set:
            if imported == "vtui" or imported in UTILITIES or any(u.startswith(imported + ".") for u in UTILITIES):
                continue
            if _layer(imported) == layer or _layer(imported) in LOWER[layer]:
                continue
            wrong.append(f"{module} imports {imported}")
    return wrong


def test_data_flows_one_way():
    assert not (wrong := _violations({m: _imports(m) for m in _modules()})), wrong


def test_the_check_sees_an_import_back_up():
    """An analysis module importing a presentation module or a top-level non-utility is caught."""
    assert _violations({"vtui.analysis.report.insights": {"vtui.present.schema"}})
    assert _violations({"vtui.analysis.report.insights": {"vtui.mcp"}})
    assert _violations({"vtui.store.cache": {"vtui.analysis.base.stats"}})
    assert not _violations({"vtui.analysis.report.insights": {"vtui.store.store", "vtui.safe_text"}})


def test_utilities_import_only_utilities():
    wrong = [f"{m} imports {i}" for m in UTILITIES for i in _imports(m) if i not in UTILITIES]
    assert not wrong, wrong


def test_every_module_is_in_a_known_place():
    """A new top-level module must be placed: a utility, a layer, or the top (cli, mcp)."""
    top = {m for m in _modules() if m.count(".") == 1 and not any(m.startswith(p) for p in
           ("vtui.io", "vtui.store", "vtui.analysis", "vtui.present", "vtui.export", "vtui.load",
            "vtui.ui", "vtui.commands", "vtui.query", "vtui.agent"))}
    placed = set(UTILITIES) | {"vtui.options", "vtui.cli", "vtui.mcp", "vtui.mcp_page", "vtui.mcp_tools", "vtui.mcp_wire",
                                 "vtui.__main__"}
    assert top <= placed, sorted(top - placed)


def test_analysis_rooms_and_base_first():
    rooms = {m.split(".")[2] for m in _modules() if m.startswith("vtui.analysis.") and m.count(".") >= 2}
    assert set(ROOMS) <= rooms, rooms  # a new room is fine; each says what it holds
    import importlib

    assert all(importlib.import_module(f"vtui.analysis.{r}").__doc__ for r in rooms)
    wrong = [f"{m} imports {i}" for m in _modules() if m.startswith("vtui.analysis.base")
             for i in _imports(m) if i.startswith("vtui.analysis.") and not i.startswith("vtui.analysis.base")]
    assert not wrong, wrong
