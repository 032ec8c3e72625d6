"""Every real trace in ../shared/traces loads, with the event and phase counts of its MANIFEST."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import SHARED_TRACES
from vtui.load.trace import load_trace


def _manifest_counts() -> dict[str, tuple[int, dict[str, int]]]:
    """file name -> (event count, phase counts), from both MANIFEST formats."""
    out: dict[str, tuple[int, dict[str, int]]] = {}
    for manifest in SHARED_TRACES.glob("*/MANIFEST.md"):
        text = manifest.read_text()
        for section in re.split(r"^## ", text, flags=re.M)[1:]:
            head = section.splitlines()[0]
            name = re.search(r"`?([\w.\-]+\.json(?:\.gz)?)`?", head)
            events = re.search(r"(?:\*\*Event count\*\*|^- events): ([\d,]+)", section, re.M)
            phases = re.search(r"(?:\*\*Phases \(ph: count\)\*\*|^- phases): (.+)$", section, re.M)
            if not (name and events and phases):
                continue
            counts = {ph: int(n.replace(",", "")) for ph, n in re.findall(r"`([^`]*)`: ([\d,]+)", phases.group(1))}
            fname = name.group(1)
            if manifest.parent.name == "generated" and not fname.endswith(".gz"):
                fname += ".gz"  # the generated MANIFEST describes the uncompressed JSON
            out[fname] = (int(events.group(1).replace(",", "")), counts)
        out.update(_templated_entries(text))
    return out


def _templated_entries(text: str) -> dict[str, tuple[int, dict[str, int]]]:
    """Sections that name their files by a template (``Files here: `x_{MODEL}.json.gz` ``) and give
    each model's event count in prose (`` `name` (what; 2,551 events``); no phase counts."""
    out: dict[str, tuple[int, dict[str, int]]] = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        template = re.search(r"Files here: `([^`]*\{MODEL\}[^`]*)`", section)
        if not template:
            continue
        for model, events in re.findall(r"`([\w.\-]+)` \([^`]*?([\d,]+) events", section):
            out[template.group(1).replace("{MODEL}", model)] = (int(events.replace(",", "")), {})
    return out


def _shared_files() -> list[Path]:
    if not SHARED_TRACES.is_dir():
        return []
    return sorted(p for p in SHARED_TRACES.glob("*/*") if p.name.endswith((".json", ".json.gz")))


MANIFEST = _manifest_counts() if SHARED_TRACES.is_dir() else {}


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not present")
def test_every_shared_file_is_in_the_manifest():
    files = _shared_files()
    assert len(files) >= 20
    missing = [p.name for p in files if p.name not in MANIFEST]
    assert not missing


@pytest.mark.parametrize("path", _shared_files(), ids=lambda p: p.name)
def test_shared_trace_loads_with_manifest_counts(path: Path):
    store = load_trace(path)
    events, phases = MANIFEST[path.name]
    assert store.event_count == events
    if phases:  # a templated MANIFEST entry gives the event count only
        assert store.by_phase == phases
    assert len(store.slices) > 0
    # Every X slice is kept (never dropped for overlapping).
    assert len(store.slices) >= phases.get("X", 0)
