"""Write the JSON Schema snapshot of each output's current version: vtui/data/schema/NAME.vN.json.

A snapshot of a version already released is never rewritten: when an output's schema changed,
bump its number in vtui/present/schema.py VERSIONS first (tests/core/test_schema.py says which).
Usage: python scripts/schema_snapshots.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vtui.atomic import atomic_write  # noqa: E402
from vtui.present.schema import OUTPUTS, VERSIONS, json_schema  # noqa: E402

FOLDER = Path(__file__).resolve().parents[1] / "vtui" / "data" / "schema"


def snapshot_path(name: str, version: int) -> Path:
    return FOLDER / f"{name}.v{version}.json"


def main() -> int:
    FOLDER.mkdir(parents=True, exist_ok=True)
    status = 0
    for name in OUTPUTS:
        path = snapshot_path(name, VERSIONS[name])
        text = json.dumps(json_schema(name), indent=1, sort_keys=True) + "\n"
        if path.exists():
            if path.read_text() != text:
                print(f"{name}: the schema changed but version {VERSIONS[name]} is already written: "
                      f"bump VERSIONS[{name!r}] in vtui/present/schema.py", file=sys.stderr)
                status = 1
            continue
        atomic_write(path, text.encode())
        print(f"wrote {path.relative_to(FOLDER.parents[1])}")
    return status


if __name__ == "__main__":
    sys.exit(main())
