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
LOWER = {"vtui.io": (), "vtui.store": ("vtui.io",), "vtui.analysis": ("vtui.io", "vtui.store"),
         "vtui.present": CORE, "vtui.export": CORE, "vtui.load": CORE}
CORE_LAYERS = tuple(LOWER)
PACKAGES = ("io", "store", "analysis", "present", "export", "load", "ui", "commands", "cli")


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(vtui.__path__, "vtui."))


def _non_ui_modules() -> list[str]:
    return [m for m in _modules() if not m.startswith("vtui.ui") and m != "vtui.__main__"]


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


def test_data_flows_one_way():
    wrong = []
    for module in _modules():
        layer = next((c for c in CORE_LAYERS if module == c or module.startswith(c + ".")), None)
        if layer is None:
            continue
        for imported in _imports(module):
            if imported.startswith("vtui.") and not imported.startswith(layer) and \
                    not any(imported.startswith(low) for low in LOWER[layer]) and \
                    imported.split(".")[1] in PACKAGES:
                wrong.append(f"{module} imports {imported}")
    assert not wrong, wrong
