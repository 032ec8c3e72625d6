"""The core (io, store, report) never imports Textual or Rich."""

from __future__ import annotations

import subprocess
import sys


def test_core_does_not_import_textual_or_rich():
    code = (
        "import sys, vtui.io.jsonscan, vtui.io.reader, vtui.store.load, vtui.report, vtui.cli;"
        "from vtui.store.load import load_trace;"
        "load_trace('fixtures/kineto__before_fix_trace.json');"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    from tests.conftest import ROOT

    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
